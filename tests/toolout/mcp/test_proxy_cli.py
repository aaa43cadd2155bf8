"""`toolout mcp-proxy`'s command line: the guide's config runs a command our parser takes, usage errors
are messages with exit code 2, and an upstream that cannot start is a message with exit code 4."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from tests.docs_pages import page
from toolout.cli import app

ROOT = Path(__file__).resolve().parents[3]


def section() -> str:
    """The gateway's guide (a docs page)."""
    return page("guides/mcp-proxy.md")


def parsed(argv: list[str]) -> Any:
    group: Any = typer.main.get_command(app)
    name, *rest = argv
    return group.commands[name].make_context(name, rest)


def test_the_readme_config_is_valid_json_and_our_cli_parses_its_arguments() -> None:
    [snippet] = re.findall(r"```json\n(.*?)```", section(), flags=re.DOTALL)
    server = json.loads(snippet)["mcpServers"]["files"]
    assert server["command"] == "toolout" and server["args"][0] == "mcp-proxy"
    ctx = parsed(server["args"])
    assert ctx.params["upstream"] == ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/path/to/project"]
    assert ctx.params["route"] == ["read_multiple_files(output=variable:files)"]
    assert set(server["env"]) == {"TOOLOUT_API_URL", "TOOLOUT_API_KEY"}


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ([], "give the upstream once"),
        (["--upstream-url", "http://x/mcp", "--", "node", "s.js"], "give the upstream once"),
        (["--upstream-cmd", "  "], "--upstream-cmd is empty"),
        (["--timeout", "0", "--", "node", "s.js"], "--timeout must be positive"),
    ],
)
def test_usage_errors_say_what_to_write(args: list[str], problem: str) -> None:
    done = CliRunner().invoke(app, ["mcp-proxy", *args])
    assert done.exit_code == 2 and problem in done.output


def test_an_upstream_that_cannot_start_is_a_message_not_a_traceback() -> None:
    argv = [sys.executable, "-m", "toolout.cli", "mcp-proxy", "--", "/nonexistent/mcp-server", "--flag"]
    done = subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4, done.stderr
    assert "upstream MCP server (/nonexistent/mcp-server --flag) could not be started" in done.stderr
    assert "Traceback" not in done.stderr
