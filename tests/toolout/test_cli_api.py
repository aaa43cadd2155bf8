"""`toolout api` listens where the settings say (TOOLOUT_API_HOST, TOOLOUT_API_PORT) unless a flag says otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from infra.settings import get_settings
from toolout.cli import app


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What `uvicorn.run` was asked to serve; nothing listens."""
    import uvicorn

    import infra.logs

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda target, **kwargs: seen.update(kwargs, target=target))
    monkeypatch.setattr(infra.logs, "configure_logging", lambda settings: False)
    get_settings.cache_clear()
    yield seen
    get_settings.cache_clear()


def test_the_api_listens_on_the_settings_address(served: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOUT_API_HOST", "0.0.0.0")
    monkeypatch.setenv("TOOLOUT_API_PORT", "8123")
    result = CliRunner().invoke(app, ["api"])
    assert result.exit_code == 0, result.output
    assert (served["target"], served["host"], served["port"]) == ("api.app:create_app", "0.0.0.0", 8123)


def test_flags_win_over_the_settings(served: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOUT_API_PORT", "8123")
    result = CliRunner().invoke(app, ["api", "--host", "127.0.0.2", "--port", "9000"])
    assert result.exit_code == 0, result.output
    assert (served["host"], served["port"]) == ("127.0.0.2", 9000)


def test_without_either_the_defaults_are_loopback_8000(served: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLOUT_API_HOST", raising=False)
    monkeypatch.delenv("TOOLOUT_API_PORT", raising=False)
    assert CliRunner().invoke(app, ["api"]).exit_code == 0
    assert (served["host"], served["port"]) == ("127.0.0.1", 8000)


def test_idle_connections_outlive_the_clients_reuse_of_them(served: dict[str, Any]) -> None:
    """uvicorn's own default (5 s) equals httpx's keep-alive expiry: a request sent as the server closes is reset."""
    assert CliRunner().invoke(app, ["api"]).exit_code == 0
    assert served["timeout_keep_alive"] == get_settings().api_keep_alive_seconds == 75
