"""Prometheus metrics: per-route request counts and latency, upload bytes, submitted jobs, cache hits.

Each app gets its own registry (tests build many apps in one process; the default global registry
would refuse the second set of collectors). Requests are labelled by route *template*
(`/v1/outputs/{handle}`), never by raw path, so label cardinality stays bounded.
"""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED_ROUTE = "<unmatched>"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
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
