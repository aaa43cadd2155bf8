"""From the README to a running service: `toolout dev` as a subprocess, then each quickstart as written.

`toolout dev` runs from a venv of its own with `pip install -e '.[server]'` and nothing else, as the
README's first screen installs it (so a module the service needs outside that extra fails here, not on a
user's box). The venv is made on first use under `.venv-server/` and kept while pyproject.toml is unchanged
(a fresh clone, as CI's, makes it afresh).

The code is taken from README.md (and from docs/getting-started.md, its curl and SDK blocks) here, so the
pages cannot drift from what runs. Each runs in a "second shell": this environment plus only the `export`
lines `toolout dev` printed, with the offline model behind both the service and the quickstart's own model
calls. Ctrl-C (SIGINT) must then stop every process `toolout dev` started. Start-up time is recorded as a
measurement; the bound asserted is generous.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import httpx
import pytest
import redis

from tests.docs_pages import blocks, page, section
from tests.fixtures.stack import STACK_DB
from toolout.client import ToolOutClient
from toolout.devstack import datasets, processes

ROOT = Path(__file__).resolve().parents[2]
START_BOUND_SECONDS = 180.0
"""Generous on purpose: a 2-core box shared with other jobs took 93 s once; the number is recorded, and the
promise (under 10 s) is for an idle machine, and `python -m bench.micro.dev_start` is what measures it."""
EXPORT = re.compile(r"^export (\w+)=(\S+)$")
READY = re.compile(r"^toolout dev: ready in ([\d.]+) s at (\S+)$")
LAST_LINE = "Ctrl-C stops everything."

SERVER_VENV = ROOT / ".venv-server"
INSTALL_TIMEOUT_SECONDS = 900.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_TIMEOUT_SECONDS + 300)]  # the first test makes the venv


@dataclass
class Dev:
    """The running `toolout dev`: its process, what it printed, what it exported, how long it took."""

    process: subprocess.Popen[str]
    printed: list[str]
    exports: dict[str, str]
    reported_seconds: float
    measured_seconds: float

    def shell(self) -> dict[str, str]:
        """A second shell's environment: ours, minus any model redirection of our own, plus the exports."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TOOLOUT_"))}
        path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `toolout` as installed
        return {**env, "PATH": path, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **self.exports}


def read_banner(process: subprocess.Popen[str], timeout: float) -> list[str]:
    """Lines of stdout up to the banner's last one (read by a thread: a pipe's readline cannot time out)."""
    lines: list[str] = []
    done = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if LAST_LINE in line:
                break
        done.set()

    threading.Thread(target=read, daemon=True).start()
    if not done.wait(timeout) or not lines or LAST_LINE not in lines[-1]:
        pytest.fail(f"toolout dev printed no whole banner in {timeout:.0f} s:\n" + "\n".join(lines))
    return lines


def server_python() -> Path:
    """The interpreter of a venv holding only `toolout[server]` (made now unless this pyproject.toml's is there)."""
    python = SERVER_VENV / "bin" / "python"
    stamp = SERVER_VENV / f".installed-{hashlib.sha1((ROOT / 'pyproject.toml').read_bytes()).hexdigest()[:12]}"
    if stamp.exists():
        return python
    shutil.rmtree(SERVER_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(SERVER_VENV)], check=True, timeout=120)
    # --no-compile: byte-compiling every module of every dependency was half the install, and the tests import a
    # small part of them (compiled on first import, as any module without a .pyc is).
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    install = [*pip, "-e", f"{ROOT}[server]"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_SECONDS)
    assert done.returncode == 0, f"pip install -e '.[server]' failed:\n{done.stderr[-3000:]}"
    stamp.touch()
    return python


def dev_argv(redis_url: str) -> list[str]:
    port = processes.free_port()
    return [str(server_python()), "-m", "toolout.cli", "dev", "--port", str(port), "--redis", redis_url]


@pytest.fixture(scope="module")
def dev(redis_url: str) -> Iterator[Dev]:
    url = f"{redis_url.rsplit('/', 1)[0]}/{STACK_DB['dev']}"
    redis.Redis.from_url(url).flushdb()
    began = time.monotonic()
    process = subprocess.Popen(
        dev_argv(url), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        printed = read_banner(process, timeout=START_BOUND_SECONDS + 30)
        measured = time.monotonic() - began
        exports = dict(m.groups() for m in map(EXPORT.match, printed) if m)
        reported = next(float(m.group(1)) for m in map(READY.match, printed) if m)
        yield Dev(process, printed, exports, reported, measured)
    finally:
        stop(process)


def stop(process: subprocess.Popen[str]) -> None:
    """As a developer would: Ctrl-C, and a harder kill only if that did not end it."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def run_python(dev: Dev, code: str, tmp_path: Path) -> str:
    script = tmp_path / "quickstart.py"  # not the name of a module it imports
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], env=dev.shell(), cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def readme_block(heading: str, language: str) -> str:
    [code] = blocks(section(page("README.md"), heading), language)
    return code


def test_the_toolkit_quickstart_is_at_most_15_lines() -> None:
    assert len(readme_block("## Quickstart: your own agent loop", "python").strip().splitlines()) <= 15


def test_the_service_runs_from_a_venv_with_only_the_server_extra(dev: Dev) -> None:
    """Its API process is the server venv's interpreter, and that venv lacks what only other extras bring."""
    venv = str(SERVER_VENV / "bin" / "python")
    argv = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode() for pid in child_pids(dev.process.pid)]
    assert argv and all(arg == venv for arg in argv), argv
    missing = "import importlib.util as u; print([m for m in ('mcp', 'langchain', 'pytest') if u.find_spec(m)])"
    assert subprocess.run([venv, "-c", missing], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_it_prints_the_url_the_key_the_exports_and_the_docs(dev: Dev, measurements) -> None:
    measurements(f"toolout dev ready in {dev.reported_seconds:.1f} s (reported), {dev.measured_seconds:.1f} s measured")
    assert set(dev.exports) == {"TOOLOUT_API_URL", "TOOLOUT_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"}
    url = dev.exports["TOOLOUT_API_URL"]
    assert f"API docs: {url}/docs   OpenAPI: {url}/openapi.json   Ctrl-C stops everything." in dev.printed
    assert dev.reported_seconds < START_BOUND_SECONDS
    assert httpx.post(f"{url}/v1/sessions", timeout=10).status_code == 401  # keys mode: the printed key is needed


def test_the_toolkit_quickstart_runs_as_written(dev: Dev, tmp_path: Path) -> None:
    out = run_python(dev, readme_block("## Quickstart: your own agent loop", "python"), tmp_path)
    assert out.startswith("Done. Tools called: get_orders, tool_output.\nLast tool result:\n"), out
    assert "ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE " in out


def test_the_langchain_quickstart_runs_as_written(dev: Dev, tmp_path: Path) -> None:
    out = run_python(dev, readme_block("## Quickstart: an agent framework", "python"), tmp_path)
    assert out.strip(), "the agent's last message was empty"


def test_the_mcp_quickstart_config_runs_toolout_mcp(dev: Dev) -> None:
    """The `.mcp.json` as Claude Code reads it: `${VAR}` filled from the shell, then the command spawned."""
    handle, names, text = run_mcp_quickstart(dev.shell())
    assert "tool_output" in names
    assert text.startswith(f"ABSTRACT FROM TOOL OUTPUT orders.export WITH HANDLE {handle}, STRATEGY:"), text


def run_mcp_quickstart(shell: dict[str, str], bin_dir: Path | None = None) -> tuple[str, list[str], str]:
    """Store a large JSON, then spawn the `.mcp.json`'s command (from `bin_dir`, else PATH) with its `${VAR}`s
    filled from `shell`, and call `tool_output` on it: the handle, the tools it lists, the answer."""
    server: dict[str, Any] = json.loads(readme_block("## Quickstart: an MCP client", "json"))["mcpServers"]["toolout"]
    env = {**shell, **{name: Template(value).substitute(shell) for name, value in server["env"].items()}}
    with ToolOutClient(env["TOOLOUT_API_URL"], api_key=env["TOOLOUT_API_KEY"]) as client:
        session = client.create_session()
        content = b"".join(datasets.json_orders(200_000, seed=3))
        handle = client.store(session, content, tool_name="orders.export", content_type="application/json")["handle"]
    command = str(bin_dir / server["command"]) if bin_dir else server["command"]
    names, text = asyncio.run(mcp_round(command, server["args"], env, handle))
    return handle, names, text


async def mcp_round(command: str, args: list[str], env: dict[str, str], handle: str) -> tuple[list[str], str]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        result = await session.call_tool("tool_output", {"handle": handle, "extract": datasets.ORDER_NEEDLE.request})
        return names, result.content[0].text


def test_getting_started_runs_its_curl_and_sdk_blocks_as_written(dev: Dev, tmp_path: Path) -> None:
    """docs/getting-started.md: the first extraction by curl, then the SDK's, in the same directory."""
    guide = page("getting-started.md")
    [curl] = blocks(section(guide, "## A first extraction with curl"), "bash")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", curl],
        env=dev.shell(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "order 7777 status=declined reason=card expired" in done.stdout
    sdk = blocks(section(guide, "## The CLI and the SDK"), "python")[0]
    out = run_python(dev, sdk, tmp_path)
    assert out.startswith("Tool output is too large (") and "order 7777 status=declined" in out, out


def test_ctrl_c_stops_every_process_it_started(dev: Dev) -> None:
    """Last in this module: SIGINT, as a terminal's Ctrl-C sends it, and no child outlives the command."""
    children = child_pids(dev.process.pid)
    assert len(children) >= 3, children  # the offline model, the API, a worker
    dev.process.send_signal(signal.SIGINT)
    assert dev.process.wait(60) == 0
    assert dev.process.stdout is not None and "toolout dev: stopping" in dev.process.stdout.read()
    assert processes.wait_for(lambda: not any(alive(pid) for pid in children), timeout=10), children


def child_pids(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(child) for task in tasks.iterdir() for child in (task / "children").read_text().split()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
