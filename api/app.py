"""The FastAPI application factory: `uvicorn --factory api.app:create_app`.

There is deliberately no module-level `app`: settings come from the environment when the app is
built, and tests build apps with their own settings. The lifespan opens Redis and the blob store
once per process and runs the idle-session sweeper in the background. Every `/v1` router is
included behind `get_tenant` (API key → tenant), so no resource route can forget to authenticate.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI

from api.auth import announce_auth_mode
from api.deps import get_tenant
from api.errors import error_responses, install_error_handlers
from api.lifecycle import SWEEP_INTERVAL_SECONDS, build_services, sweep_forever
from api.metrics import Metrics, MetricsMiddleware
from api.routers import extractions, health, lines, outputs, sessions
from infra.settings import Settings, get_settings
from infra.tokenizer_files import ensure_offline_encodings


def create_app(settings: Settings | None = None, *, sweep_interval: float = SWEEP_INTERVAL_SECONDS) -> FastAPI:
    settings = settings or get_settings()
    ensure_offline_encodings()  # uploads tokenize; tiktoken must not try to download its BPE files

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = build_services(settings)
        app.state.services = services
        announce_auth_mode(settings, services.api_keys)
        sweeper = asyncio.create_task(sweep_forever(services, sweep_interval), name="toolout-session-sweeper")
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            services.redis.close()

    app = FastAPI(
        title="toolout",
        summary="Store oversized tool outputs and extract what the agent needs from them.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = Metrics()
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    install_error_handlers(app)
    for module in (sessions, outputs, lines, extractions):
        app.include_router(module.router, dependencies=[Depends(get_tenant)], responses=error_responses(401))
    app.include_router(health.router)  # probes and metrics stay open
    return app
