"""Liveness, readiness and metrics, outside `/v1`: probes and scrapers are not API clients.

`/healthz` touches nothing, so a slow Redis never gets the process restarted. `/readyz` asks every
backend a request may need (Redis, the blob store, at least one Celery worker, each stage's model
endpoint) concurrently and says which one failed and why, so a load balancer stops routing here
until all of them answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Response
from starlette.concurrency import run_in_threadpool

from api.deps import MetricsDep, ServicesDep
from api.schemas import Check, Readiness
from infra.errors import BackendUnavailable
from infra.llm.probe import ModelEndpoint, ModelProbe

router = APIRouter(tags=["health"])

CHECK_TIMEOUT_SECONDS = 3.0


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up and serving; no I/O on purpose."""
    return {"status": "ok"}


async def _check(probe: Callable[[], Any]) -> Check:
    """Run one blocking probe in a thread, bounded in time; any failure becomes a failed check."""
    try:
        result = await asyncio.wait_for(run_in_threadpool(probe), CHECK_TIMEOUT_SECONDS)
    except TimeoutError:
        return Check(ok=False, detail=f"no answer within {CHECK_TIMEOUT_SECONDS:g} s")
    except Exception as exc:  # noqa: BLE001 - the check reports whatever went wrong
        return Check(ok=False, detail=f"{type(exc).__name__}: {exc}")
    return result if isinstance(result, Check) else Check(ok=True, detail="ok")


def _workers_answer(ping: Callable[[], list[Any]]) -> Callable[[], Check]:
    def probe() -> Check:
        replies = ping()
        return Check(
            ok=bool(replies), detail=f"{len(replies)} worker(s) answered" if replies else "no Celery worker answered"
        )

    return probe


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"description": "a backend is not ready; details.checks says which and why"}},
)
async def readyz(services: ServicesDep) -> Readiness:
    """Ready when Redis pings, the blob store pings, at least one worker answers and every stage's
    model endpoint answers (`infra.llm.probe`: a cached `GET /models`, never a completion).
    """
    probes: dict[str, Callable[[], Any]] = {
        "redis": services.stores.ping,
        "blob_store": services.blobs.ping,
        "workers": _workers_answer(services.dispatcher.ping),
    }
    for endpoint in services.models.endpoints:
        probes[endpoint.check_name] = _model_answers(services.models, endpoint)
    results = await asyncio.gather(*(_check(probe) for probe in probes.values()))
    checks = dict(zip(probes, results, strict=True))
    failed = {name: check for name, check in checks.items() if not check.ok}
    if failed:
        why = "; ".join(f"{name} ({check.detail})" for name, check in failed.items())
        raise BackendUnavailable(
            f"not ready: {why}", checks={name: check.model_dump() for name, check in checks.items()}
        )
    return Readiness(status="ready", checks=checks)


def _model_answers(probe: ModelProbe, endpoint: ModelEndpoint) -> Callable[[], Check]:
    def check() -> Check:
        result = probe.check(endpoint)
        return Check(ok=result.ok, detail=result.detail)

    return check


@router.get("/metrics", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def metrics(collected: MetricsDep) -> Response:
    """Prometheus exposition of this process's counters and histograms."""
    body, content_type = collected.render()
    return Response(body, media_type=content_type)
