"""A job's trace over HTTP: read whole (`/trace`), or followed live as server-sent events (`/events`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.deps import Services
from extraction.strategies.mapreduce import ModelLimits
from infra.wiring.stores import open_stores
from tests.fixtures.api_server import answering_model_probe, api_settings
from tests.workers.conftest import CHUNK_NOTES, needle_model
from tests.workers.job.test_pipeline import NEEDLE, document
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher

SHORT_ANSWERS = ModelLimits(context_tokens=4000, max_output_tokens=100)


@pytest.fixture()
def running() -> Iterator[TestClient]:
    """The app on the in-memory stores with jobs run in-process by a scripted model."""
    settings = api_settings("memory://", "memory://")
    stores = open_stores(settings)
    runtime = build_runtime(settings, stores, needle_model(NEEDLE, misses=CHUNK_NOTES), limits=SHORT_ANSWERS)
    dispatcher = LocalDispatcher(runtime)
    stores.jobs.records.listen_finished(dispatcher.finished)
    services = Services(
        settings=settings, stores=stores, dispatcher=dispatcher, model_probe=answering_model_probe(settings)
    )
    with TestClient(create_app(services=services)) as client:
        yield client
    dispatcher.close()


def start_job(client: TestClient) -> str:
    session = client.post("/v1/sessions").json()["id"]
    handle = client.post(f"/v1/sessions/{session}/outputs", content=document()).json()["handle"]
    created = client.post("/v1/extractions", json={"handle": handle, "extract": "pool errors", "mode": "full-chunked"})
    assert created.status_code == 202, created.text
    return str(created.json()["id"])


def sse(lines: Iterator[str]) -> Iterator[tuple[str, str, str]]:
    """(event, id, data) of each server-sent event."""
    event, ident, data = "message", "", ""
    for line in lines:
        if not line:
            yield event, ident, data
            event, ident, data = "message", "", ""
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            event, ident, data = (
                (value, ident, data)
                if name == "event"
                else (event, value, data)
                if name == "id"
                else (event, ident, value)
            )


def test_the_event_feed_streams_each_step_then_the_end_and_the_trace_reads_the_same(running: TestClient) -> None:
    job_id = start_job(running)
    with running.stream("GET", f"/v1/extractions/{job_id}/events") as feed:
        assert feed.headers["content-type"].startswith("text/event-stream")
        received = list(sse(feed.iter_lines()))
    kinds = [event for event, _, _ in received]
    assert kinds[-1] == "end" and "status" in kinds
    traced = [json.loads(data) for event, _, data in received if event == "trace"]
    assert [int(ident) for event, ident, _ in received if event == "trace"] == list(range(len(traced)))
    whole = running.get(f"/v1/extractions/{job_id}/trace").json()
    job = running.get(f"/v1/extractions/{job_id}").json()
    assert whole["events"] == traced and whole["status"] == job["status"] == "succeeded"
    assert sum(e["kind"] == "map" for e in traced) == job["chunks_total"]
    assert [e["kind"] for e in traced[-2:]] == ["reduce", "answer"] and traced[-1]["reduced"] is True
    assert whole["next"] == len(traced) and whole["truncated"] is False
    assert job["links"]["trace"] == f"/v1/extractions/{job_id}/trace"


def test_a_reader_resumes_after_what_it_has(running: TestClient) -> None:
    job_id = start_job(running)
    assert running.get(f"/v1/extractions/{job_id}", params={"wait": 20}).json()["status"] == "succeeded"
    everything = running.get(f"/v1/extractions/{job_id}/trace").json()["events"]
    later = running.get(f"/v1/extractions/{job_id}/trace", params={"after": 2}).json()
    assert later["events"] == everything[2:] and later["next"] == len(everything)
    with running.stream("GET", f"/v1/extractions/{job_id}/events", headers={"Last-Event-ID": "1"}) as feed:
        resumed = [json.loads(data) for event, _, data in sse(feed.iter_lines()) if event == "trace"]
    assert resumed == everything[2:]


def test_a_bad_cursor_is_a_422(running: TestClient) -> None:
    job_id = start_job(running)
    assert running.get(f"/v1/extractions/{job_id}/trace", params={"after": -1}).status_code == 422
