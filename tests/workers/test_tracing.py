"""One job is one trace: the API request, the start, every map and reduce step and every model call.

The API runs under uvicorn with the in-process dispatcher (`LocalDispatcher`: the steps on a thread pool,
where no trace header travels, so only the trace stored on the job ties them together), and the spans
are captured with the SDK's in-memory exporter.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from api.app import create_app
from api.deps import Services
from extraction.strategies.mapreduce import ModelLimits
from infra import tracing
from infra.logs import JsonFormatter
from infra.settings import Settings
from infra.tracing import LogContext
from infra.wiring.stores import open_stores
from tests.fixtures.api_server import answering_model_probe, serve_app
from tests.fixtures.servers import wait_until
from tests.workers.conftest import needle_model
from tests.workers.job.test_pipeline import NEEDLE, document
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher


@pytest.fixture()
def exporter() -> Iterator[InMemorySpanExporter]:
    captured = InMemorySpanExporter()
    assert tracing.setup("toolout-test", exporter=captured)
    yield captured
    tracing.shutdown()
    captured.shutdown()


@pytest.fixture()
def traced_api(exporter: InMemorySpanExporter) -> Iterator[str]:
    settings = Settings(redis_url="memory://", blob_store="memory://", auth_mode="dev", max_chunks_for_full_mode=100)
    stores = open_stores(settings)
    limits = ModelLimits(2600, 1200)  # small: many chunks and, with every chunk saying ~60 tokens, a reduce in groups
    llm = needle_model(NEEDLE, misses=" ".join(f"request {i} served;" for i in range(15)))
    dispatcher = LocalDispatcher(build_runtime(settings, stores, llm, limits=limits), concurrency=4)
    services = Services(settings, stores, dispatcher, limits=limits, model_probe=answering_model_probe(settings))
    with serve_app(create_app(services=services)) as url:
        yield url
    dispatcher.close()


def run_job(url: str) -> dict[str, Any]:
    with httpx.Client(base_url=url, timeout=60) as client:
        session = client.post("/v1/sessions").json()["id"]
        handle = client.post(f"/v1/sessions/{session}/outputs", content=document()).json()["handle"]
        created = client.post(
            "/v1/extractions", json={"handle": handle, "extract": "database pool errors", "mode": "full-chunked"}
        )
        for _ in range(4):  # a busy machine may need more than one long poll
            job: dict[str, Any] = client.get(f"/v1/extractions/{created.json()['id']}", params={"wait": 30}).json()
            if job["status"] not in ("queued", "running"):
                break
    assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked", job
    return job


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def test_a_full_chunked_job_is_one_trace_from_the_request_to_every_model_call(
    traced_api: str, exporter: InMemorySpanExporter
) -> None:
    job = run_job(traced_api)
    # the job ends inside its last step: that step's span ends (and is exported) a moment later
    last_step_ended = lambda: len(named(list(exporter.get_finished_spans()), "job.reduce")) > job["reduce_level"]  # noqa: E731
    assert wait_until(last_step_ended, timeout=10)
    spans = list(exporter.get_finished_spans())
    # the server span of the request (SERVER, or INTERNAL under the test client's own httpx span in this process)
    request = next(s for s in spans if s.name == "POST /v1/extractions" and s.kind is not SpanKind.CLIENT)
    trace_id = request.context.trace_id
    assert job["traceparent"].split("-")[1] == format(trace_id, "032x")

    in_job = [s for s in spans if s.attributes.get("toolout.job_id") == job["id"]]
    assert {s.context.trace_id for s in in_job} == {trace_id}, "every step and model call is in the request's trace"
    maps, calls = named(in_job, "job.map"), named(in_job, "model.call")
    assert sorted(s.attributes["toolout.chunk_index"] for s in maps) == list(range(job["chunks_total"]))
    assert job["chunks_total"] > 5 and job["reduce_level"] >= 1
    assert len(named(in_job, "job.start")) == 1 and named(in_job, "job.reduce_group")
    assert {s.attributes["toolout.level"] for s in named(in_job, "job.reduce")} == set(range(job["reduce_level"] + 1))
    assert len(calls) == job["usage"]["calls"] == len(maps) + len(named(in_job, "job.reduce_group")) + 1
    assert all(s.attributes["gen_ai.usage.input_tokens"] == 100 for s in calls)
    assert all(s.attributes["toolout.tenant"] == "dev" for s in in_job if s.name.startswith("job."))

    by_id = {s.context.span_id: s for s in spans}
    steps = {s.context.span_id for s in in_job if s.name.startswith("job.")}
    assert all(s.parent is not None and s.parent.span_id in steps for s in calls), "a model call is in its step"
    job_steps = [s for s in in_job if s.context.span_id in steps]
    assert all(s.parent is not None and by_id.get(s.parent.span_id) is request for s in job_steps), (
        "every step's parent is the request that created the job, whoever ran it"
    )


def test_off_there_is_no_trace_and_no_traceparent_on_the_job() -> None:
    assert not tracing.enabled()
    assert tracing.current_traceparent() is None
    with tracing.job_span("job.map", "j1", None) as span:
        assert span is None and tracing.current_job.get() == "j1"
    assert tracing.current_job.get() is None


def test_json_logs_carry_the_trace_id_and_job_id_of_the_step(exporter: InMemorySpanExporter) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(LogContext())
    log = logging.getLogger("toolout.test.json")
    log.addHandler(handler)
    log.propagate = False
    try:
        with tracing.job_span("job.map", "job-7", None, chunk_index=3) as span:
            log.warning("chunk %d is slow", 3, extra={"chunk": 3})
        log.warning("outside any job")
    finally:
        log.removeHandler(handler)
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["trace_id"] == format(span.get_span_context().trace_id, "032x") and inside["job_id"] == "job-7"
    assert (inside["message"], inside["chunk"], inside["level"]) == ("chunk 3 is slow", 3, "WARNING")
    assert (outside["trace_id"], outside["job_id"]) == ("", "")
