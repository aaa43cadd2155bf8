"""The SDK reads retention and cost: a session's and an output's TTL, what each output and session cost (a cached
answer at no model cost), and DELETE of one output. Both clients, over real HTTP (uvicorn) to the app whose jobs run
on the local dispatcher (in-memory stores: the API's own behaviour is tested on Redis and S3 in
tests/api/test_retention.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from api.app import create_app
from api.costs import CACHED_NOTE
from api.deps import Services
from extraction.strategies.mapreduce import ModelLimits
from infra.settings import Settings
from infra.wiring.stores import open_stores
from tests.fixtures.api_server import serve_app
from tests.workers.conftest import needle_model
from tests.workers.job.test_pipeline import NEEDLE, document
from toolout.client import AsyncToolOutClient, ToolOutAPIError, ToolOutClient
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher


@pytest.fixture()
def api_url() -> Iterator[str]:
    settings = Settings(redis_url="memory://", blob_store="memory://", auth_mode="dev", max_chunks_for_full_mode=100)
    stores = open_stores(settings)
    limits = ModelLimits(4000, 500)
    dispatcher = LocalDispatcher(build_runtime(settings, stores, needle_model(NEEDLE), limits=limits), concurrency=2)
    app = create_app(services=Services(settings=settings, stores=stores, dispatcher=dispatcher, limits=limits))
    with serve_app(app) as url:
        yield url
    dispatcher.close()


def test_the_sync_client_sets_ttls_and_reads_what_each_output_and_session_cost(api_url: str) -> None:
    with ToolOutClient(api_url) as client:
        session = client.create_session(ttl="2h")
        assert client.session(session)["ttl_expires_at"] == pytest.approx(time.time() + 7200, abs=5)
        before = time.time()
        handle = client.store(session, document(), tool_name="logs.fetch", ttl=600)["handle"]
        assert before + 600 <= client.output(handle)["expires_at"] <= time.time() + 600
        paid = client.wait(client.submit(handle, "database pool errors", "full-chunked")["id"])
        free = client.submit(handle, "database pool errors", "full-chunked")
        assert free["cached"], free

        usage = client.output_usage(handle)
        assert usage["calls"] == paid["usage"]["calls"] > 0
        assert usage["input_tokens"] == paid["usage"]["input_tokens"] > 0
        assert [item["cached"] for item in usage["items"]] == [False, True]
        assert usage["items"][1]["usage"]["calls"] == 0 and usage["items"][1]["note"] == CACHED_NOTE
        assert client.output(handle)["usage"] == usage
        assert client.session_usage(session)["outputs"] == [usage]

        client.delete_output(handle)
        with pytest.raises(ToolOutAPIError) as gone:
            client.output(handle)
        assert gone.value.status == 404
        assert client.session(session)["outputs"] == []


def test_the_async_client_reads_the_same(api_url: str) -> None:
    async def run() -> tuple[dict, dict]:
        async with AsyncToolOutClient(api_url) as client:
            session = await client.create_session()
            handle = (await client.store(session, document(), tool_name="logs.fetch"))["handle"]
            await client.wait((await client.submit(handle, "database pool errors", "read-grep"))["id"])
            return await client.output_usage(handle), await client.session_usage(session)

    usage, whole = asyncio.run(run())
    assert usage["jobs"] == 1 and usage["calls"] > 0 and usage["cached_jobs"] == 0
    assert whole["calls"] == usage["calls"] and whole["input_tokens"] == usage["input_tokens"]
