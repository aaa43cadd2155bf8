"""The SDK against the real app in this process: in-memory stores, jobs run by the local dispatcher, no server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.deps import Services
from extraction.protocols import LLM
from extraction.strategies.mapreduce import ModelLimits
from infra.settings import Settings
from infra.wiring.stores import open_stores
from tests.workers.conftest import needle_model
from tests.workers.job.test_partial import faulty, no_wrapper, on_chunks
from tests.workers.job.test_pipeline import NEEDLE, document
from toolout.client import ToolOutAPIError, ToolOutClient
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin(
    "the SDK's HTTP encoding (headers, async streaming) against the API; the store is not what it tests"
)


def in_process_client(llm: LLM) -> Iterator[ToolOutClient]:
    settings = Settings(redis_url="memory://", blob_store="memory://", auth_mode="dev", max_chunks_for_full_mode=100)
    stores = open_stores(settings)
    limits = ModelLimits(4000, 500)
    runtime = build_runtime(settings, stores, llm, limits=limits)
    dispatcher = LocalDispatcher(runtime, concurrency=4)
    app = create_app(services=Services(settings=settings, stores=stores, dispatcher=dispatcher, limits=limits))
    with TestClient(app) as http, ToolOutClient("http://testserver", http=http) as client:
        yield client
    dispatcher.close()


@pytest.fixture()
def toolout() -> Iterator[ToolOutClient]:
    yield from in_process_client(needle_model(NEEDLE))


@pytest.fixture()
def toolout_chunk_3_unreadable() -> Iterator[ToolOutClient]:
    yield from in_process_client(faulty(on_chunks({3}, no_wrapper)))


def test_store_then_tool_output_gives_the_abstract(toolout: ToolOutClient) -> None:
    session = toolout.create_session()
    meta = toolout.store(session, document(), tool_name="logs.fetch", tool_args='{"service": "billing"}')
    assert meta["oversized"] and meta["message"].startswith("Tool output is too large (")
    text = toolout.tool_output(meta["handle"], "database pool errors")
    assert text.startswith(f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {meta['handle']}, STRATEGY:full-chunked:")
    assert NEEDLE in text


def test_an_unknown_handle_answers_with_the_text_for_the_model(toolout: ToolOutClient) -> None:
    handle = str(uuid.uuid4())
    text = toolout.tool_output(handle, "anything")
    assert handle in text and "No tool output is stored" in text


def test_read_grep_and_output_metadata(toolout: ToolOutClient) -> None:
    session = toolout.create_session()
    handle = toolout.store(session, b"alpha\nbeta ERROR\ngamma\n")["handle"]
    assert toolout.read(handle, offset=2, limit=1).splitlines()[0] == "     2\tbeta ERROR"
    assert toolout.grep(handle, "error", ignore_case=True, regex=None).splitlines()[0] == "     2:\tbeta ERROR"
    assert toolout.output(handle)["lines"] == 3


def test_api_errors_are_typed(toolout: ToolOutClient) -> None:
    with pytest.raises(ToolOutAPIError) as missing:
        toolout.output(str(uuid.uuid4()))
    assert (missing.value.status, missing.value.code) == (404, "not_found")


def test_an_idempotent_submit_returns_the_same_job(toolout: ToolOutClient) -> None:
    session = toolout.create_session()
    handle = toolout.store(session, document())["handle"]
    first = toolout.submit(handle, "database pool errors", idempotency_key="k-1")
    again = toolout.submit(handle, "database pool errors", idempotency_key="k-1")
    assert first["id"] == again["id"]
    done = toolout.wait(first["id"], timeout=30)
    assert done["status"] == "succeeded" and NEEDLE in done["result"]


def test_estimate_then_submit_within_and_over_budget(toolout: ToolOutClient) -> None:
    session = toolout.create_session()
    handle = toolout.store(session, document())["handle"]
    found = toolout.estimate(handle, "database pool errors", "full-chunked")
    with pytest.raises(ToolOutAPIError) as refused:
        toolout.submit(handle, "database pool errors", "full-chunked", max_input_tokens=found["input_tokens"] - 1)
    assert (refused.value.status, refused.value.code) == (422, "budget_exceeded")
    job = toolout.submit(handle, "database pool errors", "full-chunked", max_input_tokens=found["input_tokens"])
    done = toolout.wait(job["id"], timeout=30)
    assert done["chunks_total"] == found["chunks"] and done["usage"]["calls"] <= found["calls_max"]
    assert done["reduce_level"] <= found["reduce_levels_max"] == 1, "a 500-token slot: six full answers per reduce"
    assert toolout.estimate(handle, "database pool errors", "full-chunked")["cached_from"] == done["id"]
    assert toolout.submit(handle, "database pool errors", "full-chunked", cache=False)["cached"] is False


def test_the_async_client_runs_the_same_calls_over_real_http(live_api) -> None:
    import asyncio

    from toolout.client import AsyncToolOutClient

    async def main() -> tuple[dict, str, str, list[dict]]:
        async with AsyncToolOutClient(live_api.url) as client:
            session = await client.create_session()
            meta = await client.store(session, document(), tool_name="logs.fetch")
            text = await client.tool_output(meta["handle"], "database pool errors")
            lines = await client.read(meta["handle"], offset=1, limit=1)
            jobs = await client.session_jobs(session)
            await client.delete_session(session)
            return meta, text, lines, jobs

    meta, text, lines, jobs = asyncio.run(main())
    assert meta["oversized"] and meta["message"].startswith("Tool output is too large (")
    assert NEEDLE in text and text.startswith(f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {meta['handle']}")
    assert lines.startswith("     1\t")
    assert [job["status"] for job in jobs] == ["succeeded"]


def test_the_async_client_streams_an_async_upload(live_api) -> None:
    import asyncio

    from toolout.client import AsyncToolOutClient

    async def blocks():
        for block in (b"alpha\n", b"beta\n", b"gamma\n"):
            yield block

    async def main() -> dict:
        async with AsyncToolOutClient(live_api.url) as client:
            session = await client.create_session()
            return await client.store(session, blocks())

    assert asyncio.run(main())["lines"] == 3


def test_webhook_secret_reaches_the_route(live_api) -> None:
    with ToolOutClient(live_api.url) as client, pytest.raises(ToolOutAPIError) as refused:
        client.webhook_secret()  # the live API has no deployment secret configured
    assert refused.value.status == 422 and "webhook" in refused.value.message.lower()


def test_non_ascii_tool_names_and_arguments_travel_as_utf8(live_api) -> None:
    with ToolOutClient(live_api.url) as client:
        session = client.create_session()
        handle = client.store(session, b"x", tool_name="検索", tool_args='{"q": "café"}')["handle"]
        meta = client.output(handle)
    assert (meta["tool_name"], meta["tool_args"]) == ("検索", '{"q": "café"}')


def test_a_partial_answer_reaches_the_sdk_with_what_could_not_be_read(
    toolout_chunk_3_unreadable: ToolOutClient,
) -> None:
    client = toolout_chunk_3_unreadable
    handle = client.store(client.create_session(), document(), tool_name="logs.fetch")["handle"]
    job = client.wait(client.submit(handle, "database pool errors", "full-chunked")["id"], timeout=30)
    [failed] = job["failed_ranges"]
    assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked" and job["chunks_failed"] == 1
    assert (failed["level"], failed["index"], failed["chunks"]) == (0, 2, [2]) and failed["reason"]
    warning = f"WARNING: 1 of {job['chunks_total']} chunks could not be read (bytes {failed['start']:,}-"
    assert job["result"].split("\n\n")[1].startswith(warning) and NEEDLE in job["result"]
    assert (
        client.tool_output(handle, "database pool errors", "full-chunked").split("\n\n")[1].startswith("WARNING: 1 of ")
    )
