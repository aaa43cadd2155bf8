"""A named model is really called: `toolout dev --model openai/…` on Redis, reaching a stand-in provider only
through the provider's own variables, as docs/getting-started.md's "A real model" says to run it.

The stand-in (tests/fixtures/standin_provider.py) answers with the offline model's logic under the named model,
so a job of each strategy finishes; every call it records must carry the provider key the page exported, the
calls must add up to what the jobs counted, and no offline model may be started or reached: none among the
processes `toolout dev` started, none on the offline model's default address.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from infra.settings import OFFLINE_API_BASE
from tests.docs_pages import blocks, page, section
from tests.fixtures.standin_provider import API_KEY, StandInProvider, standin_provider  # noqa: F401 - the fixture
from tests.toolout.test_dev_quickstarts import EXPORT, child_pids, read_banner
from toolout.client import ToolOutClient
from toolout.devstack import datasets, processes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
MODEL = "openai/gpt-4o-mini"


def real_model_block() -> str:
    [code] = blocks(section(page("getting-started.md"), "## A real model"), "bash")
    assert f"toolout dev --model {MODEL}" in code and "OPENAI_API_KEY=sk-..." in code, code
    return code.replace("sk-...", API_KEY)


@pytest.fixture(scope="module")
def offline_address_watch() -> Iterator[list[socket.socket]]:
    """A listener on the offline model's default address, counting who connects (skipped when it is taken)."""
    host, port = OFFLINE_API_BASE.split("//")[1].split("/")[0].split(":")
    listener = socket.socket()
    try:
        listener.bind((host, int(port)))
    except OSError:
        listener.close()
        yield []
        return
    listener.listen(8)
    listener.setblocking(False)
    yield [listener]
    listener.close()


@pytest.fixture(scope="module")
def real_dev(redis_url: str, standin_provider: StandInProvider) -> Iterator[dict[str, str]]:  # noqa: F811
    redis.Redis.from_url(redis_url).flushdb()
    port = processes.free_port()
    wrapper = f'toolout() {{ command toolout "$@" --port {port} --redis {redis_url}; }}\n'  # not 8000, not db 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TOOLOUT_MODEL"))}
    env |= {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        "OPENAI_BASE_URL": standin_provider.base_url,
    }
    process = subprocess.Popen(
        ["bash", "-c", wrapper + real_model_block()],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        printed = read_banner(process, timeout=240)
        assert f"  model calls: {MODEL} at {standin_provider.base_url}" in printed, printed
        descendants = _descendants(process.pid)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() for pid in descendants]
        assert not [c for c in commands if "offline" in c], commands
        yield dict(m.groups() for m in map(EXPORT.match, printed) if m)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _descendants(pid: int) -> list[int]:
    children = child_pids(pid)
    return children + [grandchild for child in children for grandchild in _descendants(child)]


def test_the_named_model_is_called_for_every_strategy_and_no_offline_model_is(
    real_dev: dict[str, str],
    standin_provider: StandInProvider,  # noqa: F811
    offline_address_watch: list[socket.socket],
) -> None:
    assert set(real_dev) == {"TOOLOUT_API_URL", "TOOLOUT_API_KEY"}  # no OPENAI_* lines for a real model
    already = len(standin_provider.completions())
    jobs = run_one_job_of_each_strategy(real_dev["TOOLOUT_API_URL"], real_dev["TOOLOUT_API_KEY"])
    assert {job["mode_used"] for job in jobs} == {"full-chunked", "read-grep", "query", "truncate"}, jobs
    assert all(job["status"] == "succeeded" and job["model"] == MODEL for job in jobs), jobs
    counted = sum(job["usage"]["calls"] + job["hedges_sent"] for job in jobs)
    calls = standin_provider.completions()[already:]
    assert counted > 0 and len(calls) == counted, (counted, len(calls))
    assert {seen.bearer for seen in standin_provider.seen} == {API_KEY}  # the key only OPENAI_API_KEY carried
    for listener in offline_address_watch:
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected to the offline model's address


def run_one_job_of_each_strategy(api_url: str, api_key: str) -> list[dict[str, object]]:
    with ToolOutClient(api_url, api_key=api_key) as client:
        session = client.create_session()
        log = b"".join(datasets.service_log(400_000))
        orders = b"".join(datasets.json_orders(400_000, seed=3))
        text = client.store(session, log, tool_name="service.log")["handle"]
        table = client.store(session, orders, tool_name="orders.export", content_type="application/json")["handle"]
        asked = [("full-chunked", text), ("read-grep", text), ("query", table), ("truncate", text)]
        started = [client.submit(handle, "every incident and its cause", mode, cache=False) for mode, handle in asked]
        return [client.wait(job["id"], timeout=240) for job in started]
