"""The Celery path carries the trace too: an API and a worker as processes export their spans over OTLP/HTTP
to a collector stub here, and one full-chunked job's spans form one trace across both processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.fixtures.stack import Stack, start_stack
from tests.workers.job.test_pipeline import NEEDLE, document
from toolout.devstack import processes


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]


class Collector:
    """An OTLP/HTTP trace receiver (protobuf `POST /v1/traces`) that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.receive(ExportTraceServiceRequest.FromString(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def receive(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                self.spans += [_span(resource.get("service.name", ""), span) for span in scope.spans]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _span(service: str, span: Any) -> Span:
    attributes = {a.key: _value(a.value) for a in span.attributes}
    return Span(service, span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(), attributes)


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@pytest.fixture()
def traced_stack(redis_url: str, offline_model_url: str, tmp_path: Path) -> Iterator[tuple[Stack, Collector]]:
    collector = Collector()
    env = {
        "TOOLOUT_BLOB_STORE": f"file://{tmp_path / 'blobs'}",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_BSP_SCHEDULE_DELAY": "200",  # export within a fifth of a second
        "TOOLOUT_MODEL_CONTEXT_TOKENS": "4000",  # the offline model is unknown to litellm: many small chunks
        "TOOLOUT_MODEL_MAX_OUTPUT_TOKENS": "500",
        "TOOLOUT_MAX_CHUNKS_FOR_FULL_MODE": "100",
    }
    stack = start_stack("traced", redis_url, offline_model_url, env, tmp_path / "logs")
    yield stack, collector
    stack.stop()
    collector.close()


def test_a_job_run_by_a_celery_worker_is_one_trace_across_the_api_and_worker_processes(
    traced_stack: tuple[Stack, Collector],
) -> None:
    stack, collector = traced_stack
    with httpx.Client(base_url=stack.api_url, timeout=60) as client:
        session = client.post("/v1/sessions").json()["id"]
        handle = client.post(f"/v1/sessions/{session}/outputs", content=document()).json()["handle"]
        body = {"handle": handle, "extract": f"lines like '{NEEDLE}'", "mode": "full-chunked"}
        job_id = client.post("/v1/extractions", json=body).json()["id"]
        for _ in range(4):
            job = client.get(f"/v1/extractions/{job_id}", params={"wait": 30}).json()
            if job.get("status") not in ("queued", "running"):
                break
    assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked" and job["chunks_total"] > 3, job
    trace_id = job["traceparent"].split("-")[1]

    def complete() -> bool:
        calls = [s for s in collector.spans if s.name == "model.call" and s.attributes.get("toolout.job_id") == job_id]
        return len(calls) == job["usage"]["calls"]

    assert processes.wait_for(complete, timeout=20), "the worker exported every model call span"
    time.sleep(1)  # the last batch of the Celery run spans
    in_trace = [s for s in collector.spans if s.trace_id == trace_id]
    names = [s.name for s in in_trace]
    assert {"toolout-api", "toolout-worker"} <= {s.service for s in in_trace}
    assert any(s.name == "POST /v1/extractions" and s.service == "toolout-api" for s in in_trace)
    maps = [s for s in in_trace if s.name == "job.map"]
    assert sorted(s.attributes["toolout.chunk_index"] for s in maps) == list(range(job["chunks_total"]))
    assert names.count("model.call") == job["usage"]["calls"] and "job.reduce" in names and "job.start" in names
    # the official Celery instrumentation put the context in the task headers: its spans are in the trace too
    assert any(name.startswith("run/toolout.map") for name in names), sorted(set(names))
    job_spans = [s for s in collector.spans if s.attributes.get("toolout.job_id") == job_id]
    assert {s.trace_id for s in job_spans} == {trace_id}
