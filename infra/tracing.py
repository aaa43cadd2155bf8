"""Traces: one job is one trace, from the API request through the start, map and reduce tasks to each model call.

Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the OpenTelemetry SDK's own variable; `OTEL_SERVICE_NAME`,
`OTEL_EXPORTER_OTLP_HEADERS` … apply as usual). Off costs nothing: no OpenTelemetry module is imported and
every helper here returns at its first line. On, each composition root calls `setup(service)` once: an SDK
tracer provider exporting OTLP/HTTP in batches, and the official instrumentations of FastAPI (the app
factory), Celery (trace context in the task headers), redis-py and httpx (the model's HTTP calls).

Why the job carries its trace: a job's reduce is sent by whichever map settles its level last (the job
store decides, `workers.celery.tasks.fan_in`), the watchdog re-submits overdue jobs, and the embedded mode runs
steps on a thread pool where no header travels. So the request that creates a job stores its W3C
`traceparent` on the job record (`JobRecord.traceparent`), and every step's span (`job_span`) takes it
as its parent, whoever sent the step. The model-call span (`model_span`, in the job's gate) is a child
of the step's span. `job_id` is also kept in a context variable for logs (`LogContext`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from extraction.errors import NotFound

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
TRACER = "toolout"

current_job: contextvars.ContextVar[str | None] = contextvars.ContextVar("toolout_job_id", default=None)
_on = False


def enabled() -> bool:
    return _on


def wanted() -> bool:
    """Whether this process should trace: an OTLP endpoint is configured."""
    return bool(os.environ.get(ENDPOINT_VARIABLE))


def setup(service: str, *, exporter: SpanExporter | None = None) -> bool:
    """Turn tracing on for this process (once; later calls only report): OTLP/HTTP to the configured
    endpoint in batches, or `exporter` span by span (tests: the SDK's in-memory exporter). False: off.
    """
    global _on
    if _on or (exporter is None and not wanted()):
        return _on
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the API's provider can be set once per process
        provider = TracerProvider(
            resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", service)})
        )
        trace.set_tracer_provider(provider)
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _instrument_libraries()
    _on = True
    return True


def _instrumentors() -> list[Any]:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    return [CeleryInstrumentor(), RedisInstrumentor(), HTTPXClientInstrumentor()]  # type: ignore[no-untyped-call]


def _instrument_libraries() -> None:
    for instrumentor in _instrumentors():
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()


def shutdown() -> None:
    """Tracing off again (tests): the libraries uninstrumented; the provider stays (it cannot be replaced)."""
    global _on
    if _on:
        for instrumentor in _instrumentors():
            if instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.uninstrument()
        _on = False


def instrument_app(app: Any) -> None:
    """FastAPI's server spans (one per request, the root of a job's trace), when tracing is on."""
    if _on:
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

        FastAPIInstrumentor.instrument_app(app, excluded_urls="healthz,readyz,metrics")


def current_traceparent() -> str | None:
    """The W3C `traceparent` of the active span (stored on a job at creation), None when off or outside a trace."""
    if not _on:
        return None
    from opentelemetry.propagate import inject

    carrier: dict[str, str] = {}
    inject(carrier)
    return carrier.get("traceparent")


@contextlib.contextmanager
def job_span(name: str, job_id: str, traceparent: str | None, **attributes: Any) -> Iterator[Any]:
    """A pipeline step of `job_id` (its logs carry the id); a span whose parent is the job's trace when on."""
    token = current_job.set(job_id)
    try:
        if not _on:
            yield None
            return
        from opentelemetry import trace
        from opentelemetry.propagate import extract

        parent = extract({"traceparent": traceparent}) if traceparent else None
        tracer = trace.get_tracer(TRACER)
        with tracer.start_as_current_span(name, context=parent, attributes=_attributes(job_id, attributes)) as span:
            yield span
    finally:
        current_job.reset(token)


class _Job(Protocol):
    traceparent: str | None
    tenant: str


class _Records(Protocol):
    def get(self, job_id: str) -> _Job: ...


class _Jobs(Protocol):
    @property
    def records(self) -> _Records: ...


class _HasJobs(Protocol):
    @property
    def jobs(self) -> _Jobs: ...


F = TypeVar("F", bound=Callable[..., Any])


def _no_attributes(*_: Any, **__: Any) -> dict[str, Any]:
    return {}


def traced_step(name: str, attributes: Callable[..., dict[str, Any]] = _no_attributes) -> Callable[[F], F]:
    """A job's step `(rt, job_id, …)` run inside its span `name` (parent: the trace stored on its job, with its
    tenant); `attributes` picks the span's attributes from the step's other arguments. The decorator sits on the
    step itself, so the step has one signature and is traced the same on every executor."""

    def wrap(step: F) -> F:
        @functools.wraps(step)
        def run(rt: _HasJobs, job_id: str, *args: Any, **kwargs: Any) -> Any:
            with _step_span(rt.jobs, name, job_id, attributes(*args, **kwargs)):
                return step(rt, job_id, *args, **kwargs)

        return cast(F, run)

    return wrap


def _step_span(
    jobs: _Jobs, name: str, job_id: str, attributes: dict[str, Any]
) -> contextlib.AbstractContextManager[Any]:
    """Off: only the job id for logs, no store read. On: the job's stored trace as parent (a job deleted meanwhile:
    the span stands alone; the step finds out and stops)."""
    traceparent = None
    if _on:
        try:
            job = jobs.records.get(job_id)
            traceparent, attributes = job.traceparent, {"tenant": job.tenant, **attributes}
        except NotFound:
            pass
    return job_span(name, job_id, traceparent, **attributes)


@contextlib.contextmanager
def model_span(model: str | None, job_id: str) -> Iterator[Any]:
    """One model call (a child of the step's span); `record_usage` adds its tokens. None when off."""
    if not _on:
        yield None
        return
    from opentelemetry import trace

    attributes = _attributes(job_id, {"gen_ai.request.model": model or "unknown", "gen_ai.operation.name": "chat"})
    with trace.get_tracer(TRACER).start_as_current_span("model.call", attributes=attributes) as span:
        yield span


def record_usage(span: Any, usage: Any, model: str | None) -> None:
    """Tokens and cost of one model call on its span (`usage`: `extraction.protocols.Usage`)."""
    if span is None:
        return
    span.set_attribute("gen_ai.usage.input_tokens", int(usage.input_tokens))
    span.set_attribute("gen_ai.usage.output_tokens", int(usage.output_tokens))
    if model:
        span.set_attribute("gen_ai.response.model", model)
    if usage.cost_usd is not None:
        span.set_attribute("toolout.cost_usd", float(usage.cost_usd))


def _attributes(job_id: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    named = {f"toolout.{key}" if "." not in key else key: value for key, value in extra.items() if value is not None}
    return {"toolout.job_id": job_id, **named}


class LogContext(logging.Filter):
    """Adds `trace_id` and `job_id` to every log record (empty strings when there are none)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.job_id = getattr(record, "job_id", None) or current_job.get() or ""
        record.trace_id = _trace_id()
        return True


def _trace_id() -> str:
    if not _on:
        return ""
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else ""
