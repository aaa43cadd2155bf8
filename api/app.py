"""The FastAPI application factory, the API process's composition root: `uvicorn --factory api.app:create_app`.

There is deliberately no module-level `app`: settings come from the environment when the app is
built, and tests build apps with their own settings and services. The factory builds the stores
and the dispatcher once (`build_services`), unless the caller passes its own `Services` (tests:
in-memory stores and a recording dispatcher; the embedded mode: a local thread pool). The lifespan
runs the idle-session sweeper and the feed of ended jobs that wakes long polls, and closes the
stores. Every `/v1` router is included behind `get_tenant` (API key → tenant), so no resource route
can forget to authenticate.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from api.auth import announce_auth_mode
from api.deps import Services, get_tenant
from api.errors import error_responses, install_error_handlers
from api.lifecycle import sweep_forever
from api.metrics import Metrics, MetricsMiddleware
from api.openapi_doc import install_openapi
from api.routers import (
    buffers,
    extractions,
    files,
    health,
    lines,
    outputs,
    routing,
    sessions,
    traces,
    variables,
    webhooks,
)
from api.usage_metrics import UsageCollector
from extraction.tokenizer_files import ensure_offline_encodings
from infra import tracing
from infra.outputs import tokenizers
from infra.process import late_imports
from infra.process.warm_up import later
from infra.settings import Settings, get_settings
from infra.wiring.stores import open_stores

CONSOLE_DIR = Path(__file__).parent / "console"
"""The console's pages: plain HTML, CSS and JavaScript, no build step and nothing fetched from elsewhere."""


def build_services(settings: Settings) -> Services:
    """The production services: Redis stores, the blob store, and Celery as the dispatcher."""
    from workers.celery.app import create_celery  # Celery only where the API really sends tasks
    from workers.celery.broker_clients import share_channel_clients
    from workers.celery.dispatch import CeleryDispatcher

    share_channel_clients()  # publishing a job's start task: no redis-py client built per publish
    tracing.setup("toolout-api")  # only with OTEL_EXPORTER_OTLP_ENDPOINT set; before any Redis client is built

    stores = open_stores(settings)
    return Services(settings=settings, stores=stores, dispatcher=CeleryDispatcher(create_celery(settings), stores.jobs))


def warm_up(services: Services) -> None:
    """Import litellm and load the store-time token counter (seconds each) in the background once the process
    is up (`infra.process.warm_up`: not while the rest of a stack starts), so the first estimate, budgeted job or
    upload does not wait for them."""
    encoding = services.settings.tokenizer_encoding
    later("toolout-warm-up", services.model_limits, functools.partial(tokenizers.warm_up, encoding), late_imports.watch)


def create_app(
    settings: Settings | None = None,
    *,
    services: Services | None = None,
    sweep_interval: float | None = None,
) -> FastAPI:
    """The API; its sweeper runs every `sweep_interval` seconds (None: `TOOLOUT_SWEEP_INTERVAL_SECONDS`)."""
    settings = services.settings if services is not None else settings or get_settings()
    ensure_offline_encodings()  # uploads tokenize; tiktoken must not try to download its BPE files
    built = services if services is not None else build_services(settings)
    built.jobs.records.listen_finished(built.dispatcher.finished)  # a cancel here ends a job too: its webhook goes out

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        announce_auth_mode(settings, built.api_keys)
        if services is None:
            warm_up(built)
        interval = sweep_interval or settings.sweep_interval_seconds
        sweeper = asyncio.create_task(sweep_forever(built, interval), name="toolout-session-sweeper")
        stop_following = built.stores.follow_ends(built.ends.ended)  # wakes `?wait=` long polls
        try:
            yield
        finally:
            stop_following()
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            built.stores.close()

    app = FastAPI(
        title="toolout",
        summary="Store oversized tool outputs and extract what the agent needs from them.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.services = built
    app.state.metrics = Metrics(
        failed_chunks=built.jobs.accounting.failed_chunk_counts, hedges=built.jobs.accounting.hedge_totals
    )
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    app.state.metrics.registry.register(UsageCollector(built.jobs.accounting))
    install_error_handlers(app)
    tracing.instrument_app(app)  # a job's trace starts at the request that creates it
    for module in (sessions, outputs, lines, extractions, traces, webhooks, variables, buffers, files, routing):
        app.include_router(module.router, dependencies=[Depends(get_tenant)], responses=error_responses(401))
    app.include_router(health.router)  # probes and metrics stay open
    install_openapi(app, settings)
    if settings.console:
        mount_console(app)
    return app


def mount_console(app: FastAPI) -> None:
    """The web console at `/console/`: static files only, no data in them. Every request it makes goes
    through the API with the key the user types in, so it sees exactly what that key may see."""
    app.mount("/console", StaticFiles(directory=CONSOLE_DIR, html=True), name="console")
