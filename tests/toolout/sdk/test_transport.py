"""The two transports drive the same plans: results, typed errors, sleeps, and cancellation."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import pytest

from tests.toolout.fake_service import FakeService
from toolout.client import AsyncToolOutClient, ToolOutAPIError, ToolOutClient
from toolout.sdk.plans import Plan, Request, Sleep
from toolout.sdk.plans import ToolOutAPIError as PlanError
from toolout.toolkit import CancelToken, ToolCanceled


def stored_handle(fake: FakeService) -> str:
    client = fake.sync_client()
    session = client.create_session()
    return str(client.store(session, "alpha\nbeta\n", tool_name="logs")["handle"])


def test_the_error_class_is_one_and_the_same() -> None:
    assert ToolOutAPIError is PlanError


def test_an_unknown_handle_gives_the_models_text_on_both_clients() -> None:
    fake = FakeService()
    sync_text = fake.sync_client().tool_output("00000000-0000-0000-0000-00000000abcd", "x")
    async_text = asyncio.run(fake.async_client().tool_output("00000000-0000-0000-0000-00000000abcd", "x"))
    assert sync_text == async_text and "No tool output is stored under handle" in sync_text


def test_tool_output_submits_then_waits_for_the_abstract() -> None:
    fake = FakeService()
    handle = stored_handle(fake)
    text = fake.sync_client().tool_output(handle, "beta lines")
    assert text.startswith(f"ABSTRACT FROM TOOL OUTPUT logs WITH HANDLE {handle}, STRATEGY:truncate:")
    waits = [r.url.params.get("wait") for r in fake.requests if r.url.path.startswith("/v1/extractions/")]
    assert waits == ["5.0"]  # one long-poll, not a busy loop


def test_wait_with_progress_polls_and_sleeps_between_polls() -> None:
    fake = FakeService(finish_jobs=False)
    handle = stored_handle(fake)
    client = fake.sync_client()
    job = client.submit(handle, "x")
    seen: list[str] = []

    def progress(record: dict[str, Any]) -> None:
        seen.append(record["status"])
        if len(seen) == 3:
            fake.jobs[job["id"]]["status"] = "succeeded"

    done = client.wait(job["id"], timeout=5, on_progress=progress, poll_interval=0.01)
    assert done["status"] == "succeeded" and seen == ["running", "running", "running", "succeeded"]


def test_a_sync_plan_is_canceled_in_its_sleep() -> None:
    def napping() -> Plan[str]:
        yield Sleep(30)
        return "slept"

    token = CancelToken()
    threading.Timer(0.05, token.cancel, args=("stop",)).start()
    started = time.monotonic()
    with pytest.raises(ToolCanceled):
        ToolOutClient("http://unused").execute(napping(), cancel=token)
    assert time.monotonic() - started < 5


def test_an_async_plan_is_canceled_mid_request() -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200, json={})

    def one_request() -> Plan[Any]:
        return (yield Request("GET", "/slow"))

    async def main() -> None:
        http = httpx.AsyncClient(base_url="http://x", transport=httpx.MockTransport(slow))
        client = AsyncToolOutClient("http://x", http=http)
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.05, token.cancel)
        with pytest.raises(ToolCanceled):
            await asyncio.wait_for(client.execute(one_request(), cancel=token), 5)

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_cancelling_tool_output_cancels_its_job_on_the_service(kind: str) -> None:
    fake = FakeService(finish_jobs=False)
    handle = stored_handle(fake)
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    from toolout.sdk.jobs import tool_output

    with pytest.raises(ToolCanceled):
        if kind == "sync":
            fake.sync_client().execute(tool_output(handle, "x", timeout=30), cancel=token)
        else:
            asyncio.run(fake.async_client().execute(tool_output(handle, "x", timeout=30), cancel=token))
    (job,) = fake.jobs.values()
    assert job["status"] == "canceled"
    assert fake.paths("POST")[-1] == f"/v1/extractions/{job['id']}/cancel"


def test_submit_sends_a_callback_url_only_when_given() -> None:
    fake = FakeService()
    handle = stored_handle(fake)
    client = fake.sync_client()
    client.submit(handle, "x")
    client.submit(handle, "x", callback_url="https://example.org/hook")
    bodies = [json.loads(r.content) for r in fake.requests if r.url.path == "/v1/extractions"]
    assert bodies == [
        {"handle": handle, "extract": "x", "mode": "auto"},
        {"handle": handle, "extract": "x", "mode": "auto", "callback_url": "https://example.org/hook"},
    ]


def test_the_sync_client_refuses_an_async_body_before_sending() -> None:
    async def body() -> Any:
        yield b"x"

    def upload() -> Plan[Any]:
        return (yield Request("POST", "/v1/x", content=body()))

    sent: list[httpx.Request] = []
    http = httpx.Client(
        base_url="http://t", transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(200))
    )
    with pytest.raises(TypeError, match="AsyncToolOutClient"):
        ToolOutClient("http://t", http=http).execute(upload())
    assert sent == []
