"""The result cache through the API: hits, bypass, tenant isolation, invalidation, what is never cached.

Each test runs twice: on the in-memory app (no server) and over real HTTP on real Redis. No worker
runs (the dispatcher only records): a job "succeeds" when the test finishes it in the job store the
way the worker's `outcomes` would, so what is checked is the API's side of the cache alone. A real
job answered from the cache on the full stack is in tests/integration/test_estimates_and_cache.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.deps import Services
from api.lifecycle import sweep_idle_sessions
from extraction.texts.results import abstract_text
from infra.redis.client import connect
from infra.stores.jobs import JobStatus
from infra.stores.records import memory_record_stores, redis_record_stores
from infra.wiring.stores import open_stores
from tests.fixtures.api_server import api_settings, assert_error, serve_app
from tests.fixtures.tenants import KEY_A, KEY_B, bearer, keys_mode
from workers.testing import RecordingDispatcher

KINDS = ["memory", pytest.param("redis", marks=[pytest.mark.redis, pytest.mark.integration])]
LOG = b"boot ok\nERROR disk full on /var\nretrying\nERROR disk full again\n" * 50
EXTRACT = "every ERROR line"


@dataclass
class Api:
    client: httpx.Client | TestClient
    services: Services
    dispatcher: RecordingDispatcher

    def upload(self, content: bytes = LOG, *, session: str | None = None, **headers: str) -> tuple[str, str]:
        session = session or self.client.post("/v1/sessions", headers=headers).json()["id"]
        response = self.client.post(
            f"/v1/sessions/{session}/outputs",
            content=content,
            headers={"X-Tool-Name": "logs.fetch", "X-Tool-Args": '{"service": "billing"}', **headers},
        )
        assert response.status_code == 201, response.text
        return session, response.json()["handle"]

    def extract(self, handle: str, headers: dict[str, str] | None = None, **body: Any) -> httpx.Response:
        return self.client.post("/v1/extractions", json={"handle": handle, "extract": EXTRACT, **body}, headers=headers)

    def succeed(self, job_id: str, answer: str | None = None) -> None:
        """End the job as the worker would with a real report that quotes the handle (as a read-grep answer may)."""
        job = self.services.jobs.records.get(job_id)
        content = answer or f"2 ERROR lines in file {job.handle}: disk full on /var"
        result = abstract_text(job.tool_name, job.handle, "read-grep", content)
        report = {"content": content, "found": True}
        assert self.services.jobs.records.finish(
            job_id, JobStatus.SUCCEEDED, result=result, report=report, mode_used="read-grep"
        )


@pytest.fixture(params=KINDS)
def make_api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Api]]:
    """`make_api(clock=None, **settings)`: the app on the in-memory stores (TestClient), or over HTTP on real Redis.

    `clock` drives the session records' idle timers, so a test can make sessions idle without sleeping.
    """
    with ExitStack() as stack:

        def make(clock: Callable[[], float] | None = None, **overrides: Any) -> Api:
            return stack.enter_context(_api(request, tmp_path, clock, overrides))

        yield make


@contextmanager
def _api(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Callable[[], float] | None, overrides: dict[str, Any]
) -> Iterator[Api]:
    memory = request.param == "memory"
    if not memory:
        request.getfixturevalue("redis_client")  # an emptied db 15
    redis_url = "memory://" if memory else request.getfixturevalue("redis_url")
    settings = api_settings(redis_url, "memory://" if memory else f"file://{tmp_path / 'blobs'}", **overrides)
    stores = open_stores(settings)
    if clock is not None:
        ttl = settings.session_ttl_seconds
        stores.records = (
            memory_record_stores(session_ttl_seconds=ttl, clock=clock)
            if memory
            else redis_record_stores(connect(redis_url), session_ttl_seconds=ttl, clock=clock)
        )
    dispatcher = RecordingDispatcher()
    app = create_app(services=Services(settings=settings, stores=stores, dispatcher=dispatcher))
    if memory:
        with TestClient(app, raise_server_exceptions=False) as client:
            yield Api(client, app.state.services, dispatcher)
        return
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield Api(client, app.state.services, dispatcher)


@pytest.fixture()
def api(make_api: Callable[..., Api]) -> Api:
    return make_api()


def test_a_repeated_extraction_is_answered_at_once_by_a_new_succeeded_job(api: Api) -> None:
    session, handle = api.upload()
    first = api.extract(handle).json()
    api.succeed(first["id"])
    response = api.extract(handle)
    assert response.status_code == 201, response.text
    hit = response.json()
    source = api.client.get(f"/v1/extractions/{first['id']}").json()
    assert (
        hit["id"] != first["id"]
        and response.headers["location"] == hit["links"]["self"] == f"/v1/extractions/{hit['id']}"
    )
    assert (hit["status"], hit["cached"], hit["cached_from"]) == ("succeeded", True, first["id"])
    assert (hit["result"], hit["report"], hit["mode_used"]) == (source["result"], source["report"], "read-grep")
    assert hit["usage"] == {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None}
    assert api.dispatcher.submitted == [first["id"]], "nothing was dispatched for the hit"
    assert api.client.get(hit["links"]["self"]).json() == hit
    listed = api.client.get(f"/v1/sessions/{session}/extractions").json()["items"]
    assert [job["id"] for job in listed] == [first["id"], hit["id"]]
    assert source["cached"] is False and source["cached_from"] is None


def test_the_same_bytes_under_another_handle_get_the_answer_with_their_own_handle(api: Api) -> None:
    _, first_handle = api.upload()
    first = api.extract(first_handle).json()
    api.succeed(first["id"])
    _, handle = api.upload()  # the same tool output, stored again in another session
    hit = api.extract(handle).json()
    assert hit["cached"] and hit["handle"] == handle and hit["cached_from"] == first["id"]
    assert hit["result"].startswith(f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {handle}, STRATEGY:read-grep:")
    assert first_handle not in hit["result"] and first_handle not in hit["report"]["content"]
    assert hit["report"]["content"] == f"2 ERROR lines in file {handle}: disk full on /var"


def test_cache_false_runs_the_job_again_and_its_answer_is_served_next(api: Api) -> None:
    _, handle = api.upload()
    first = api.extract(handle).json()
    api.succeed(first["id"], "the first answer")
    fresh = api.extract(handle, cache=False)
    assert fresh.status_code == 202 and fresh.json()["status"] == "queued"
    assert api.dispatcher.submitted == [first["id"], fresh.json()["id"]]
    api.succeed(fresh.json()["id"], "the fresh answer")
    hit = api.extract(handle).json()
    assert hit["cached_from"] == fresh.json()["id"] and hit["report"]["content"] == "the fresh answer"


def test_a_job_still_running_is_no_answer_yet(api: Api) -> None:
    _, handle = api.upload()
    first = api.extract(handle).json()
    second = api.extract(handle)
    assert second.status_code == 202 and api.dispatcher.submitted == [first["id"], second.json()["id"]]
    api.succeed(first["id"])
    assert api.extract(handle).json()["cached_from"] == first["id"]


@pytest.mark.parametrize(
    "change",
    [{"extract": "every WARNING line"}, {"mode": "full-chunked"}, {"tool_args": '{"service": "payments"}'}],
    ids=["extract", "mode", "tool-args"],
)
def test_a_different_request_or_tool_call_is_not_the_same_answer(api: Api, change: dict[str, str]) -> None:
    _, handle = api.upload()
    api.succeed(api.extract(handle).json()["id"])
    if "tool_args" in change:
        session = api.client.post("/v1/sessions").json()["id"]
        handle = api.client.post(
            f"/v1/sessions/{session}/outputs",
            content=LOG,
            headers={"X-Tool-Name": "logs.fetch", "X-Tool-Args": change["tool_args"]},
        ).json()["handle"]
        change = {}
    assert api.extract(handle, **change).status_code == 202


@pytest.mark.parametrize(
    "ending",
    [
        {"status": JobStatus.SUCCEEDED, "result": "ABSTRACT … truncate", "fallback_reason": "chunk 1 failed"},
        {"status": JobStatus.SUCCEEDED, "result": "ABSTRACT … truncate", "mode_used": "truncate"},
        {"status": JobStatus.FAILED, "result": "TOOL_OUTPUT FAILED …", "error": "boom"},
        {"status": JobStatus.CANCELED, "error": "canceled by the client"},
        {
            "status": JobStatus.SUCCEEDED,
            "result": "ABSTRACT … WARNING: 1 of 9 chunks",
            "report": {},
            "chunks_failed": 1,
        },
    ],
    ids=["fallback", "explicit-truncate", "failed", "canceled", "partial"],
)
def test_fallbacks_partial_answers_failures_and_cancels_are_never_served(api: Api, ending: dict[str, Any]) -> None:
    _, handle = api.upload()
    first = api.extract(handle).json()
    fields = {name: value for name, value in ending.items() if name != "status"}
    api.services.jobs.records.finish(first["id"], ending["status"], **fields)
    again = api.extract(handle)
    assert again.status_code == 202 and again.json()["cached"] is False


def test_deleting_the_output_invalidates_its_answers(api: Api) -> None:
    _, handle = api.upload()
    api.succeed(api.extract(handle).json()["id"])
    key = _key(api, handle)
    assert api.client.delete(f"/v1/outputs/{handle}").status_code == 204
    assert api.services.cache.sources(key) == []
    _, again = api.upload()  # the same bytes, uploaded anew
    assert api.extract(again).status_code == 202


def test_deleting_the_session_invalidates_its_answers(api: Api) -> None:
    session, handle = api.upload()
    api.succeed(api.extract(handle).json()["id"])
    key = _key(api, handle)
    assert api.client.delete(f"/v1/sessions/{session}").status_code == 204
    assert api.services.cache.sources(key) == []
    _, again = api.upload()
    assert api.extract(again).status_code == 202


def test_a_cached_copy_keeps_answering_for_the_output_that_still_exists(api: Api) -> None:
    """Deleting the first output removes its answers; the copy made for a second output is that output's own."""
    _, first_handle = api.upload()
    api.succeed(api.extract(first_handle).json()["id"])
    _, second_handle = api.upload()
    copy = api.extract(second_handle).json()
    api.client.delete(f"/v1/outputs/{first_handle}")
    hit = api.extract(second_handle)
    assert hit.status_code == 201 and hit.json()["cached_from"] == copy["cached_from"]


def test_the_idle_sweep_invalidates_the_sessions_answers(make_api: Callable[..., Api]) -> None:
    clock = Clock()
    api = make_api(clock=clock, session_ttl_seconds=600)
    _, handle = api.upload()
    job = api.extract(handle).json()
    api.succeed(job["id"])
    key = _key(api, handle)
    assert api.services.cache.sources(key) == [job["id"]], "the job was offered to the cache"
    clock.now += 601
    assert sweep_idle_sessions(api.services) == 1
    assert api.services.cache.sources(key) == []


def test_no_result_cache_with_a_ttl_of_zero(make_api: Callable[..., Api]) -> None:
    api = make_api(result_cache_ttl_seconds=0)
    _, handle = api.upload()
    api.succeed(api.extract(handle).json()["id"])
    assert api.extract(handle).status_code == 202


def test_a_hit_needs_no_live_job_slot(make_api: Callable[..., Api]) -> None:
    api = make_api(max_concurrent_jobs_per_tenant=1)
    _, handle = api.upload()
    api.succeed(api.extract(handle).json()["id"])
    _, busy = api.upload(b"another output\n" * 100)
    assert api.extract(busy).status_code == 202  # the tenant's one live job
    assert api.extract(handle).status_code == 201  # answered from the cache all the same
    assert_error(api.extract(busy, extract="something else"), 429, "too_many_requests")


def test_an_idempotent_retry_of_a_hit_replays_the_same_job(api: Api) -> None:
    _, handle = api.upload()
    api.succeed(api.extract(handle).json()["id"])
    key = {"Idempotency-Key": "e1c0a7c2-cache-hit"}
    first, again = api.extract(handle, headers=key), api.extract(handle, headers=key)
    assert first.status_code == again.status_code == 201 and first.json()["id"] == again.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"


def test_answers_are_never_shared_across_tenants(make_api: Callable[..., Api]) -> None:
    api = make_api(**keys_mode())
    _, handle_a = api.upload(**bearer(KEY_A))
    job_a = api.extract(handle_a, headers=bearer(KEY_A)).json()
    api.succeed(job_a["id"])
    _, handle_b = api.upload(**bearer(KEY_B))  # the same bytes, the same tool call, another tenant
    response = api.extract(handle_b, headers=bearer(KEY_B))
    assert response.status_code == 202 and response.json()["cached"] is False
    assert api.extract(handle_a, headers=bearer(KEY_A)).json()["cached_from"] == job_a["id"]


def _key(api: Api, handle: str) -> str:
    from api.result_cache import request_key

    output = api.services.records.outputs.get_output(handle)
    key = request_key(api.services, "dev", output, EXTRACT, "auto")
    assert key is not None
    return key


@dataclass
class Clock:
    now: float = field(default_factory=time.time)

    def __call__(self) -> float:
        return self.now
