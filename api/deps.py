"""Request dependencies, full-stack-fastapi-template style: `Annotated` aliases routes declare by type.

Everything a route touches (settings, stores, the job submitter, the worker ping, the tenant) comes
through here, so tests swap one function via `app.dependency_overrides` and later changes (a
different dispatcher, another way to authenticate) stay local to this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import redis
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials

from api.auth import authenticate, bearer_scheme
from api.metrics import Metrics
from infra.apikeys import ApiKeyStore
from infra.blobstore import BlobStore
from infra.errors import BackendUnavailable
from infra.idempotency import IdempotencyStore
from infra.jobstore import JobStore
from infra.records import DEFAULT_TENANT, RecordStore
from infra.settings import Settings

Submitter = Callable[[str], None]
"""Hands a created job id to the workers; raises `BackendUnavailable` when the broker is down."""

WorkerPing = Callable[[], list[Any]]
"""Asks the Celery workers to answer; returns one entry per worker that did (empty when none)."""


@dataclass
class Services:
    """The long-lived clients the lifespan builds once per process and every request shares."""

    settings: Settings
    redis: redis.Redis
    records: RecordStore
    jobs: JobStore
    blobs: BlobStore
    api_keys: ApiKeyStore
    idempotency: IdempotencyStore


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(services: Annotated[Services, Depends(get_services)]) -> Settings:
    return services.settings


def get_records(services: Annotated[Services, Depends(get_services)]) -> RecordStore:
    return services.records


def get_jobs(services: Annotated[Services, Depends(get_services)]) -> JobStore:
    return services.jobs


def get_blobs(services: Annotated[Services, Depends(get_services)]) -> BlobStore:
    return services.blobs


def get_metrics(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


def get_idempotency(services: Annotated[Services, Depends(get_services)]) -> IdempotencyStore:
    return services.idempotency


def get_tenant(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]) -> str:
    """Who is calling: the tenant of the bearer API key (401 otherwise), or "dev" when auth_mode is dev.

    `bearer_scheme` only puts the lock in the OpenAPI document; the raw header is parsed here so a
    malformed one gets its own message instead of looking absent.
    """
    services = get_services(request)
    if services.settings.auth_mode == "dev":
        return DEFAULT_TENANT
    return authenticate(request.headers.get("authorization"), services.api_keys)


def submit_with_celery(job_id: str) -> None:
    """The production submitter; imported lazily so the API starts (and tests run) without `workers`."""
    try:
        from workers.dispatch import submit_extraction
    except ImportError as exc:
        raise BackendUnavailable("the job dispatcher is not installed", backend="broker") from exc
    submit_extraction(job_id)


def get_submitter() -> Submitter:
    return submit_with_celery


Revoker = Callable[[str], int]
"""Revokes a canceled job's queued Celery tasks (best effort, never raises); returns how many ids it revoked."""


def revoke_with_celery(job_id: str, jobs: JobStore) -> int:
    """The production revoker, imported lazily like the submitter; without `workers` there is nothing to revoke."""
    try:
        from workers.dispatch import revoke_job
    except ImportError:
        return 0
    return revoke_job(job_id, jobs=jobs)


def get_revoker(jobs: Annotated[JobStore, Depends(get_jobs)]) -> Revoker:
    """Revokes with the app's own job store (the task ids live on the job record)."""
    return lambda job_id: revoke_with_celery(job_id, jobs)


def ping_celery_workers() -> list[Any]:
    """Replies of live workers within one second; an import or broker failure means nobody answered."""
    from workers.app import app as celery_app

    return list(celery_app.control.ping(timeout=1, limit=1) or [])


def get_worker_ping() -> WorkerPing:
    return ping_celery_workers


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
RecordsDep = Annotated[RecordStore, Depends(get_records)]
JobsDep = Annotated[JobStore, Depends(get_jobs)]
BlobsDep = Annotated[BlobStore, Depends(get_blobs)]
SubmitterDep = Annotated[Submitter, Depends(get_submitter)]
RevokerDep = Annotated[Revoker, Depends(get_revoker)]
WorkerPingDep = Annotated[WorkerPing, Depends(get_worker_ping)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
IdempotencyDep = Annotated[IdempotencyStore, Depends(get_idempotency)]
Tenant = Annotated[str, Depends(get_tenant)]
