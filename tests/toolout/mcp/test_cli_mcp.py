"""`toolout mcp` on the command line: its options, and a clear message when the `mcp` extra is missing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolout.cli import app

ROOT = Path(__file__).resolve().parents[3]


def test_without_the_mcp_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "mcp" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    result = CliRunner().invoke(app, ["mcp"])
    assert result.exit_code == 2
    assert "pip install 'toolout[mcp]'" in result.output


def test_an_unknown_transport_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["mcp", "--transport", "sse"])
    assert result.exit_code == 2 and "sse" in result.output


def test_the_cli_does_not_import_the_mcp_sdk_until_the_command_runs() -> None:
    probe = "import json, sys; import toolout.cli; print(json.dumps('mcp' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) is False
