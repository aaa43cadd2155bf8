"""A live API for client-side tests: real HTTP on loopback, in-memory stores, jobs run in-process.

No Redis, no Celery: the app runs under uvicorn in a thread, and a `LocalDispatcher` runs each job's
steps with a scripted model, so the SDK and the CLI see exactly what they would from the service.

The server modules are imported inside the fixture, not at the top: this conftest is also loaded for
`tests/toolout/toolkit`, which `make test-light` runs on the light install (no fastapi, no litellm).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass
class LiveApi:
    url: str
    stores: Any  # infra.wiring.stores.Stores (not imported here: see the module docstring)


@pytest.fixture()
def live_api() -> Iterator[LiveApi]:
    from api.app import create_app
    from api.deps import Services
    from extraction.strategies.mapreduce import ModelLimits
    from infra.settings import Settings
    from infra.wiring.stores import open_stores
    from tests.fixtures.api_server import serve_app
    from tests.workers.conftest import needle_model
    from tests.workers.job.test_pipeline import NEEDLE
    from workers.job.runtime import build_runtime
    from workers.local import LocalDispatcher

    settings = Settings(redis_url="memory://", blob_store="memory://", auth_mode="dev", max_chunks_for_full_mode=100)
    stores = open_stores(settings)
    limits = ModelLimits(4000, 500)
    runtime = build_runtime(settings, stores, needle_model(NEEDLE), limits=limits)
    dispatcher = LocalDispatcher(runtime, concurrency=4)
    app = create_app(services=Services(settings=settings, stores=stores, dispatcher=dispatcher, limits=limits))
    with serve_app(app) as url:
        yield LiveApi(url, stores)
    dispatcher.close()
