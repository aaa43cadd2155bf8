"""The `toolout` command itself: its commands are listed, and server commands explain the light install."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from toolout import cli


def test_help_lists_the_commands() -> None:
    result = CliRunner().invoke(cli.app, ["--help"])
    assert result.exit_code == 0
    for command in ("api", "worker", "flower", "offline-model", "demo", "keys"):
        assert command in result.stdout


@pytest.mark.parametrize("argv", [["api"], ["worker"], ["flower"], ["demo"], ["keys", "list"]])
def test_a_server_command_on_the_light_install_says_what_to_install(monkeypatch, argv: list[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("celery", "litellm") else real(name, *a)
    )
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 2
    assert "pip install 'toolout[server]'" in result.stderr and "missing: celery, litellm" in result.stderr
