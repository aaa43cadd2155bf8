"""Where model calls go: the offline model's address belongs to its own name only; a named model goes to the
settings' endpoint when one is set, else where the provider's own variables say (as litellm reads them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from infra.llm.probe import model_endpoints, probe_endpoint
from infra.llm.provider import destination, model_calls_line
from infra.settings import OFFLINE_API_BASE, OFFLINE_MODEL, Settings

ROOT = Path(__file__).resolve().parents[3]
PROVIDER_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_KEY")


@pytest.fixture(autouse=True)
def no_provider_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROVIDER_VARIABLES, "TOOLOUT_MODEL_API_BASE", "TOOLOUT_MODEL_API_KEY", "TOOLOUT_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_the_offline_model_alone_defaults_to_the_offline_address() -> None:
    settings = Settings()
    assert settings.model == OFFLINE_MODEL
    assert settings.model_config_for(OFFLINE_MODEL).api_base == OFFLINE_API_BASE
    assert settings.model_config_for("openai/gpt-4o-mini").api_base is None


def test_a_named_model_never_gets_the_offline_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOUT_MODEL", "openai/gpt-4o-mini")
    config = Settings().model_config_for("openai/gpt-4o-mini")
    assert (config.api_base, config.api_key) == (None, None)


def test_the_settings_endpoint_wins_over_the_providers_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    settings = Settings(model="openai/gpt-4o-mini", model_api_base="http://mine/v1", model_api_key="k")
    assert destination(settings, settings.model).api_base == "http://mine/v1"


def test_without_settings_the_providers_variables_are_where_calls_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    going = destination(Settings(model="openai/gpt-4o-mini"), "openai/gpt-4o-mini")
    assert (going.api_base, going.api_key, going.missing_keys) == ("http://env/v1", "sk-env", ())
    assert model_calls_line(Settings(model="openai/gpt-4o-mini")) == "model calls: openai/gpt-4o-mini at http://env/v1"


def test_a_named_model_without_a_key_is_not_ready_and_says_which_variable() -> None:
    [endpoint] = model_endpoints(Settings(model="anthropic/claude-3-5-sonnet-20240620"))
    result = probe_endpoint(endpoint, timeout=1.0)
    assert not result.ok and "ANTHROPIC_API_KEY" in result.detail
    assert "NO KEY: set ANTHROPIC_API_KEY" in model_calls_line(Settings(model="anthropic/claude-3-5-sonnet-20240620"))


def test_a_key_in_the_settings_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    [endpoint] = model_endpoints(Settings(model="anthropic/claude-3-5-sonnet-20240620", model_api_key="sk-ant"))
    assert endpoint.missing_keys == () and probe_endpoint(endpoint, timeout=1.0).ok


def test_compose_sends_a_named_model_to_its_provider_and_only_the_offline_model_to_its_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The compose file's environment, as a container gets it with only TOOLOUT_MODEL and a key set by the user."""
    env = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["x-toolout-env"]
    given = {"TOOLOUT_MODEL": "openai/gpt-4o-mini", "TOOLOUT_MODEL_API_KEY": "sk-user", "TOOLOUT_MODEL_API_BASE": ""}
    for name, value in env.items():
        if name.startswith("TOOLOUT_") and name not in given:
            monkeypatch.setenv(name, re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value)))
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    settings = Settings()
    named = destination(settings, "openai/gpt-4o-mini")
    assert (named.api_base, named.api_key) == (None, "sk-user")
    offline = destination(settings, OFFLINE_MODEL)
    assert offline.api_base == "http://offline-model:8765/v1"
