"""The docs' MCP client configs are valid, and what they would run is what our CLI accepts.

Each JSON snippet of "Use it from an MCP client" must parse, name the server `toolout` with
command `toolout` and arguments our CLI parser takes; each `claude mcp add` one-liner must have
the shape Claude Code expects, its stdio command parsing with our CLI, its HTTP URL our endpoint.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main

from tests.docs_pages import page
from tests.docs_pages import section as section_of
from toolout.cli import app

ROOT = Path(__file__).resolve().parents[3]

ENV = {"TOOLOUT_API_URL", "TOOLOUT_API_KEY", "TOOLOUT_SESSION"}


def section() -> str:
    """The MCP guide and the README's MCP quickstart: every config either shows."""
    return page("guides/mcp.md") + section_of(page("README.md"), "## Quickstart: an MCP client")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), flags=re.DOTALL)


def parse_cli(argv: list[str]) -> Any:
    """Our CLI's parser on `toolout <argv>`, down to the subcommand's context, without running anything."""
    group: Any = typer.main.get_command(app)
    name, *rest = argv
    assert name in group.commands, f"toolout {name}: no such command"
    return group.commands[name].make_context(name, rest)  # raises on an unknown option or a bad value


def test_the_section_names_each_clients_config_file() -> None:
    text = section()
    for where in ("`.mcp.json`", "`~/.cursor/mcp.json`", "`claude_desktop_config.json`", "claude mcp add"):
        assert where in text


CONFIGS = blocks("json")


@pytest.mark.parametrize("snippet", CONFIGS, ids=[f"json-{n}" for n in range(len(CONFIGS))])
def test_each_json_config_parses_and_runs_a_command_our_cli_accepts(snippet: str) -> None:
    config: dict[str, Any] = json.loads(snippet)
    server = config["mcpServers"]["toolout"]
    assert server["command"] == "toolout" and server["args"][0] == "mcp"
    ctx = parse_cli(server["args"])
    assert ctx.command.name == "mcp" and ctx.params["transport"] == "stdio"
    assert set(server["env"]) <= ENV and {"TOOLOUT_API_URL", "TOOLOUT_API_KEY"} <= set(server["env"])


def test_there_is_a_config_for_each_client() -> None:
    assert len(CONFIGS) == 4  # the guide: Claude Code, Cursor, Claude Desktop; the README's quickstart


def one_liners() -> list[list[str]]:
    lines = [line for block in blocks("bash") for line in block.splitlines() if line.startswith("claude mcp add")]
    return [shlex.split(line) for line in lines]


def test_the_stdio_one_liner_runs_toolout_mcp_with_the_api_settings() -> None:
    (stdio,) = [words for words in one_liners() if "--" in words]
    options, command = stdio[3 : stdio.index("--")], stdio[stdio.index("--") + 1 :]
    assert options[-1] == "toolout"  # the server's name comes after the options
    env = [options[i + 1] for i, word in enumerate(options) if word == "--env"]
    assert {pair.split("=", 1)[0] for pair in env} == {"TOOLOUT_API_URL", "TOOLOUT_API_KEY"}
    assert command[0] == "toolout" and parse_cli(command[1:]).command.name == "mcp"


def test_the_http_one_liner_points_at_our_endpoint_with_a_bearer_key() -> None:
    (http,) = [words for words in one_liners() if "--transport" in words]
    assert http[http.index("--transport") + 1] == "http"
    url = next(word for word in http if word.startswith("http://"))
    assert url.endswith("/mcp")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    served = parse_cli(["mcp", "--transport", "http", "--port", str(port)])
    assert served.params["transport"] == "http" and served.params["port"] == port
    assert http[http.index("--header") + 1].startswith("Authorization: Bearer ")
    assert f"toolout mcp --transport http --port {port}" in section()
