"""Retention that means it, on real Redis and a real blob store (file:// and SeaweedFS S3): DELETE of a session or an
output, or its TTL running out, leaves no Redis key and no blob that names it, after jobs of every strategy ran on it
(with traces, cached answers, Idempotency-Keys and loaded tables); and what each output and session cost is read back.

The API runs in process, its jobs on a local dispatcher over the same stores (the offline model's answers, in
process); the sweeper that expires TTLs is the app's own background task. tests/integration/test_retention_stack.py
does the same against the processes and a Celery worker, deleting mid-job.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.costs import CACHED_NOTE
from api.deps import Services
from extraction.strategies.mapreduce import ModelLimits
from infra.stores.bundle import Stores
from infra.wiring.stores import open_stores
from tests.fixtures.api_server import answering_model_probe, api_settings, build_test_app
from tests.fixtures.leftovers import blob_leftovers, blob_listing, redis_leftovers
from tests.fixtures.planted_secrets import planted
from tests.fixtures.webhook_receiver import webhook_receiver
from tests.integration.test_faults import log_document
from tests.workers.job.test_query import ORDERS, offline_llm
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher
from workers.testing import RecordingDispatcher

pytestmark = pytest.mark.integration

STRATEGIES = ("full-chunked", "read-grep", "query", "truncate")
LOG = log_document(300) + planted()[0].line.encode() + b"\n"
"""A log with a credential in it, so each output also has a redacted copy for the deletion to take."""
SWEEP_SECONDS = 0.2
TERMINAL = {"succeeded", "failed", "canceled"}
WEBHOOK_RETRY_SECONDS = 1.0
WEBHOOKS = {
    "webhook_secret": "retention-master",
    "webhook_allow_private": True,  # the receiver listens on loopback
    "webhook_retry_base_seconds": WEBHOOK_RETRY_SECONDS,
}


@dataclass
class Api:
    client: TestClient
    stores: Stores
    redis: Any

    def session(self, **params: str) -> dict[str, Any]:
        answer = self.client.post("/v1/sessions", params=params)
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    def upload(self, session: str, body: bytes, *, key: str | None = None, **headers: str) -> dict[str, Any]:
        sent = {"X-Tool-Name": "orders.list", "Content-Type": "application/json", **headers}
        if key is not None:
            sent["Idempotency-Key"] = key
        answer = self.client.post(f"/v1/sessions/{session}/outputs", content=body, headers=sent)
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    def extract(self, handle: str, mode: str, *, key: str | None = None, cache: bool = True) -> dict[str, Any]:
        headers = {} if key is None else {"Idempotency-Key": key}
        body = {"handle": handle, "extract": "the customer of the largest order", "mode": mode, "cache": cache}
        answer = self.client.post("/v1/extractions", json=body, headers=headers)
        assert answer.status_code in (201, 202), answer.text
        return dict(answer.json())

    def finished(self, job_id: str, timeout: float = 120) -> dict[str, Any]:
        job = self.finished_or_taken(job_id, timeout)
        assert job is not None, f"job {job_id} was taken (404) before it ended"
        return job

    def finished_or_taken(self, job_id: str, timeout: float = 120) -> dict[str, Any] | None:
        """The job once terminal, or None when an expiring output took it (and its record) before it ended."""
        deadline = time.monotonic() + timeout
        while (read := self.client.get(f"/v1/extractions/{job_id}")).status_code != 404:
            assert read.status_code == 200, read.text
            if (job := read.json())["status"] in TERMINAL:
                return dict(job)
            assert time.monotonic() < deadline, f"job {job_id} still {job['status']} after {timeout}s"
            time.sleep(0.05)
        return None

    def leftovers(self, ids: list[str]) -> tuple[dict[str, str], list[str]]:
        return redis_leftovers(self.redis, ids), blob_leftovers(self.stores.blobs, ids)


@pytest.fixture()
def api(redis_client: Any, redis_url: str, store_settings: dict[str, Any]) -> Iterator[Api]:
    """The API over real Redis (an emptied test database) and the parametrized blob store; jobs run in process."""
    merged = dict(store_settings)
    settings = api_settings(redis_url, merged.pop("blob_store"), **WEBHOOKS, **merged)
    stores = open_stores(settings)
    runtime = build_runtime(settings, stores, offline_llm(), limits=ModelLimits(4000, 500))
    services = Services(
        settings, stores, LocalDispatcher(runtime, concurrency=2), model_probe=answering_model_probe(settings)
    )
    with TestClient(create_app(services=services, sweep_interval=SWEEP_SECONDS)) as client:
        yield Api(client, stores, redis_client)


def run_every_strategy(api: Api, session: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Two outputs (JSON, log) uploaded with Idempotency-Keys, a job of each strategy on them (keyed too), then the
    same questions again, answered from the result cache. Returns the handles and the finished jobs."""
    orders = api.upload(session, ORDERS, key=str(uuid.uuid4()))["handle"]
    log = api.upload(session, LOG, key=str(uuid.uuid4()), **{"Content-Type": "text/plain"})["handle"]
    started = [api.extract(orders if mode == "query" else log, mode, key=str(uuid.uuid4())) for mode in STRATEGIES]
    jobs = [api.finished(job["id"]) for job in started]
    assert [job["status"] for job in jobs] == ["succeeded"] * len(STRATEGIES), jobs
    again = [api.extract(job["handle"], job["mode_requested"]) for job in jobs if job["mode_used"] != "truncate"]
    assert again and all(job["cached"] for job in again), again
    return [orders, log], jobs + again


def test_deleting_a_session_leaves_no_key_and_no_blob_of_it(api: Api) -> None:
    session = api.session()["id"]
    handles, jobs = run_every_strategy(api, session)
    ids = [session, *handles, *(job["id"] for job in jobs)]
    keys, blobs = api.leftovers(ids)
    assert keys and blobs, "the run must have stored keys and blobs naming its ids, or the check below proves nothing"
    assert any(".duckdb/" in key for key in blobs), "the query job must have kept the output's tables"
    assert any(".redacted" in key for key in blobs), "the log's redacted copy must be stored beside it"

    assert api.client.delete(f"/v1/sessions/{session}").status_code == 204
    assert api.leftovers(ids) == ({}, [])
    assert api.client.get(f"/v1/sessions/{session}").status_code == 404


def test_deleting_an_output_takes_its_jobs_traces_cache_and_replays_and_leaves_the_rest(api: Api) -> None:
    session = api.session()["id"]
    key = str(uuid.uuid4())
    gone = api.upload(session, LOG, key=key, **{"Content-Type": "text/plain"})["handle"]
    kept = api.upload(session, ORDERS)["handle"]
    gone_jobs = [api.finished(api.extract(gone, mode)["id"]) for mode in ("full-chunked", "read-grep")]
    kept_job = api.finished(api.extract(kept, "query")["id"])
    assert api.client.get(f"/v1/extractions/{gone_jobs[0]['id']}/trace").status_code == 200
    assert any(".redacted" in key for key in api.leftovers([gone])[1]), "the log's redacted copy must be stored"

    assert api.client.delete(f"/v1/outputs/{gone}").status_code == 204
    assert api.leftovers([gone, *(job["id"] for job in gone_jobs)]) == ({}, [])
    assert api.client.get(f"/v1/extractions/{gone_jobs[0]['id']}").status_code == 404
    assert api.client.get(f"/v1/extractions/{kept_job['id']}").json()["status"] == "succeeded"
    assert api.client.get(f"/v1/outputs/{kept}/content").content == ORDERS
    again = api.upload(session, LOG, key=key, **{"Content-Type": "text/plain"})
    assert again["handle"] != gone, "the Idempotency-Key of the deleted upload must not replay its handle"


def test_a_pending_webhook_of_a_deleted_output_is_never_sent(api: Api) -> None:
    session = api.session()["id"]
    handle = api.upload(session, LOG, **{"Content-Type": "text/plain"})["handle"]
    with webhook_receiver(502, 200) as receiver:
        body = {"handle": handle, "extract": "errors", "mode": "truncate", "callback_url": receiver.url}
        job = api.client.post("/v1/extractions", json=body).json()
        assert receiver.arrived.wait(30), "the first delivery never came"
        assert api.client.delete(f"/v1/outputs/{handle}").status_code == 204  # the retry is pending now
        time.sleep(3 * WEBHOOK_RETRY_SECONDS)
    assert len(receiver.received) == 1, "the retry after the delete must find its job gone and send nothing"
    assert api.leftovers([handle, job["id"]]) == ({}, [])


def test_a_session_ttl_runs_out_and_the_sweeper_takes_everything(api: Api) -> None:
    session = api.session(ttl="1h")
    assert session["ttl_expires_at"] == pytest.approx(time.time() + 3600, abs=5)
    assert session["expires_at"] <= session["ttl_expires_at"]
    handles, jobs = run_every_strategy(api, session["id"])
    output = api.client.get(f"/v1/outputs/{handles[0]}").json()
    assert output["expires_at"] == session["ttl_expires_at"], "an output never outlives its session"
    ids = [session["id"], *handles, *(job["id"] for job in jobs)]

    # An hour passes: the deadline moves to now in the store (the TTL's arithmetic is checked above), and the
    # app's own sweeper must find it and delete everything, as it would an hour later.
    api.stores.records.retention.expire_session_at(session["id"], time.time())
    assert api.client.get(f"/v1/sessions/{session['id']}").status_code == 404, "expired reads as gone at once"
    wait_for(lambda: api.leftovers(ids) == ({}, []), timeout=30, what="the expired session's keys and blobs")


def test_an_output_ttl_takes_the_output_and_keeps_its_session(api: Api) -> None:
    session = api.session()["id"]
    short = api.upload(session, LOG, **{"Content-Type": "text/plain", "X-TTL": "2"})["handle"]
    long = api.upload(session, ORDERS, **{"X-TTL": "1d"})["handle"]
    assert api.client.get(f"/v1/outputs/{long}").json()["expires_at"] == pytest.approx(time.time() + 86400, abs=5)
    # A job on it may end before the TTL, be cut by it (taking its record along), or (on a slow box) find the
    # output already expired. Whichever, none of its keys may outlive the output.
    body = {"handle": short, "extract": "the customer of the largest order", "mode": "full-chunked"}
    submitted = api.client.post("/v1/extractions", json=body)
    assert submitted.status_code in (201, 202, 404), submitted.text
    jobs = [submitted.json()["id"]] if submitted.status_code != 404 else []
    for job in jobs:
        api.finished_or_taken(job)

    wait_for(lambda: api.leftovers([short, *jobs]) == ({}, []), timeout=30, what="the expired output")
    assert api.client.get(f"/v1/outputs/{short}").status_code == 404
    assert api.client.get(f"/v1/sessions/{session}").json()["outputs"] == [long]
    assert api.client.get(f"/v1/outputs/{long}/content").content == ORDERS


def test_a_tenant_default_ttl_is_shown_on_its_sessions_and_outputs() -> None:
    """In-memory stores: the default is the API's rule, read from the settings, whatever store holds the record."""
    settings = api_settings("memory://", "memory://", tenant_ttl_seconds={"dev": 3600})
    app = build_test_app(settings, RecordingDispatcher())
    with TestClient(app) as client:
        session = client.post("/v1/sessions").json()
        assert session["ttl_expires_at"] == pytest.approx(time.time() + 3600, abs=5)
        sooner = client.post(f"/v1/sessions/{session['id']}/outputs", content=b"x" * 20_000, params={"ttl": "10m"})
        later = client.post(f"/v1/sessions/{session['id']}/outputs", content=b"y" * 20_000, params={"ttl": "2d"})
        expiry = [client.get(f"/v1/outputs/{up.json()['handle']}").json()["expires_at"] for up in (sooner, later)]
    assert expiry == [pytest.approx(time.time() + 600, abs=5), session["ttl_expires_at"]]


@pytest.mark.parametrize(
    ("where", "value", "says"),
    [
        ("query", "soon", "is not a TTL"),
        ("header", "0", "1 second to"),
        ("header", "-5", "is not a TTL"),
        ("query", "12y", "is not a TTL"),
        ("query", "4000d", "ten years"),
    ],
)
def test_a_bad_ttl_is_a_422_saying_what_was_wrong(api: Api, where: str, value: str, says: str) -> None:
    params, headers = ({"ttl": value}, {}) if where == "query" else ({}, {"X-TTL": value})
    for url in ("/v1/sessions", f"/v1/sessions/{api.session()['id']}/outputs"):
        answer = api.client.post(url, params=params, headers=headers, content=b"x")
        assert answer.status_code == 422, answer.text
        assert says in answer.text and "ttl" in answer.text.lower()
    assert blob_listing(api.stores.blobs) == [], "a refused upload stores nothing"


def test_each_output_and_session_says_what_it_cost_and_a_cached_answer_costs_nothing(api: Api) -> None:
    session = api.session()["id"]
    handles, jobs = run_every_strategy(api, session)
    spent = {handle: [job for job in jobs if job["handle"] == handle] for handle in handles}

    for handle, own in spent.items():
        usage = api.client.get(f"/v1/outputs/{handle}/usage").json()
        assert usage == api.client.get(f"/v1/outputs/{handle}").json()["usage"]
        for name in ("calls", "input_tokens", "output_tokens"):
            assert usage[name] == sum(job["usage"][name] for job in own)
        assert usage["calls"] > 0 and usage["input_tokens"] > 0, "each output had a job that called the model"
        cached = [item for item in usage["items"] if item["cached"]]
        assert cached and all(item["usage"]["calls"] == 0 and item["note"] == CACHED_NOTE for item in cached)
        assert usage["cached_jobs"] == len(cached) and usage["jobs"] == len(own)

    whole = api.client.get(f"/v1/sessions/{session}/usage").json()
    assert whole["input_tokens"] == sum(job["usage"]["input_tokens"] for job in jobs) > 0
    assert whole["calls"] == sum(job["usage"]["calls"] for job in jobs) > 0
    assert sorted(output["handle"] for output in whole["outputs"]) == sorted(handles)


def wait_for(check: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} still there after {timeout}s"
        time.sleep(0.25)
