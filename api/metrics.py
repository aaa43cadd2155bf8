"""Prometheus metrics: per-route request counts and latency, upload bytes, submitted jobs, cache hits, failed chunks.

Each app gets its own registry (tests build many apps in one process; the default global registry
would refuse the second set of collectors). Requests are labelled by route *template*
(`/v1/outputs/{handle}`), never by raw path, so label cardinality stays bounded.

Chunks fail in the workers, which serve no `/metrics`. Instead of giving every worker an HTTP
port (or counting in the API when it happens to see a finished job, which counts polls, not
chunks, and misses jobs nobody polls), the job store counts each failed chunk once, in the same
atomic step that records the failure on the job (`JobFanIn.record_failure`). `/metrics` reads that
store-wide count at scrape time, so `toolout_chunks_failed_total` is the same on every API
instance: aggregate it with `max`, not `sum`. It restarts from zero with Redis, which Prometheus
counters allow (a reset).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from extraction.errors import ToolOutError

log = logging.getLogger("toolout.api")
UNMATCHED_ROUTE = "<unmatched>"
STAGES = ("map", "reduce")


class FailedChunksCollector(Collector):
    """`toolout_chunks_failed_total{stage}`: read from the job store at each scrape (see the module doc)."""

    def __init__(self, read: Callable[[], dict[str, int]]) -> None:
        self._read = read

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield self._family()

    def collect(self) -> Iterator[CounterMetricFamily]:
        try:
            counts = self._read()
        except ToolOutError as exc:  # Redis down: the scrape still answers, without this series
            log.warning("metrics: failed-chunk count unavailable: %s", exc.message)
            return
        family = self._family()
        for stage in STAGES:
            family.add_metric([stage], counts.get(stage, 0))
        yield family

    @staticmethod
    def _family() -> CounterMetricFamily:
        return CounterMetricFamily(
            "toolout_chunks_failed",
            "Chunks of map-reduce jobs that could not be read after their retry, by the stage that lost them "
            "(map: the chunk's own call; reduce: a reduce group holding it), counted once in the job store "
            "for all workers",
            labels=["stage"],
        )


class HedgesCollector(Collector):
    """`toolout_model_hedges_{sent,won}_total` and `toolout_model_hedge_tokens_total{kind}` (what the losing copies
    cost): hedges are sent by the workers, so these are read from the job store at each scrape, as failed chunks."""

    def __init__(self, read: Callable[[], dict[str, int]]) -> None:
        self._read = read

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield from self._families()

    def collect(self) -> Iterator[CounterMetricFamily]:
        try:
            counts = self._read()
        except ToolOutError as exc:
            log.warning("metrics: hedge counts unavailable: %s", exc.message)
            return
        sent, won, tokens = self._families()
        sent.add_metric([], counts.get("sent", 0))
        won.add_metric([], counts.get("won", 0))
        for kind in ("prompt", "completion"):
            tokens.add_metric([kind], counts.get(kind, 0))
        yield from (sent, won, tokens)

    @staticmethod
    def _families() -> tuple[CounterMetricFamily, ...]:
        return (
            CounterMetricFamily("toolout_model_hedges_sent", "Hedge copies of slow model calls sent"),
            CounterMetricFamily("toolout_model_hedges_won", "Calls a hedge answered first (the original cancelled)"),
            CounterMetricFamily(
                "toolout_model_hedge_tokens",
                "What hedging cost: tokens of the losing copies (a cancelled copy: its prompt, as sent)",
                labels=["kind"],
            ),
        )


class Metrics:
    def __init__(
        self,
        failed_chunks: Callable[[], dict[str, int]] | None = None,
        hedges: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self.registry = CollectorRegistry()
        if failed_chunks is not None:
            self.registry.register(FailedChunksCollector(failed_chunks))
        if hedges is not None:
            self.registry.register(HedgesCollector(hedges))
        self.requests = Counter(
            "toolout_http_requests", "HTTP requests served", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "toolout_http_request_duration_seconds",
            "Time to the end of the response",
            ["method", "route"],
            registry=self.registry,
        )
        self.upload_bytes = Counter(
            "toolout_upload_bytes", "Bytes of tool output received by uploads", registry=self.registry
        )
        self.jobs_submitted = Counter(
            "toolout_jobs_submitted", "Extraction jobs handed to the workers", registry=self.registry
        )
        self.cache_hits = Counter(
            "toolout_result_cache_hits",
            "Extractions answered from an earlier job's result (no job dispatched)",
            ["tenant"],
            registry=self.registry,
        )

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Pure ASGI (not BaseHTTPMiddleware) so streamed request and response bodies pass through untouched."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            self._observe(scope, status, time.perf_counter() - started)

    def _observe(self, scope: Scope, status: int, seconds: float) -> None:
        route = getattr(scope.get("route"), "path", UNMATCHED_ROUTE)
        self.metrics.requests.labels(scope["method"], route, str(status)).inc()
        self.metrics.latency.labels(scope["method"], route).observe(seconds)
