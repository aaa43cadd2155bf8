"""Request dependencies, full-stack-fastapi-template style: `Annotated` aliases routes declare by type.

Everything a route touches (settings, stores, the job dispatcher, the tenant) comes through here,
from the `Services` the app factory built once; tests pass their own `Services` (in-memory stores,
a recording dispatcher) to `create_app` instead of patching anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials

from api.auth import authenticate, bearer_scheme
from api.metrics import Metrics
from api.routers import API_PREFIX
from api.upload_guards import UploadSlots
from extraction.strategies.mapreduce import ModelLimits
from infra.blobstore import BlobStore
from infra.errors import Unauthorized
from infra.llm.info import model_limits_for
from infra.llm.probe import ModelProbe
from infra.settings import Settings
from infra.stores.apikeys import ApiKeyStore
from infra.stores.bundle import Stores
from infra.stores.idempotency import IdempotencyStore
from infra.stores.jobs import JobStores
from infra.stores.jobs.ends import JobEnds
from infra.stores.records import DEFAULT_TENANT, RecordStores
from infra.stores.resultcache import ResultCache
from workers.dispatcher import Dispatcher


@dataclass
class Services:
    """What the app factory builds once per process (`api.app.create_app`) and every request shares."""

    settings: Settings
    stores: Stores
    dispatcher: Dispatcher
    limits: ModelLimits | None = None
    """The model's limits for estimates; None: litellm's model map (imported on first use, seconds)."""
    ends: JobEnds = field(default_factory=JobEnds)
    """The long polls waiting for a job to end; the app's lifespan feeds it from `stores.follow_ends`."""
    uploads: UploadSlots = field(default_factory=UploadSlots)
    """The uploads being received now (bounded by `max_uploads_in_flight`)."""
    model_probe: ModelProbe | None = None
    """What `/readyz` asks about the model endpoints; None: probe the settings' endpoints (`infra.llm.probe`)."""

    def __post_init__(self) -> None:
        if self.model_probe is None:
            self.model_probe = ModelProbe.from_settings(self.settings)

    @property
    def models(self) -> ModelProbe:
        assert self.model_probe is not None  # set in __post_init__
        return self.model_probe

    def model_limits(self, model: str | None = None) -> ModelLimits:
        """`model`'s limits (default: the map stage's); a `limits` given to the services serves every model."""
        if self.limits is not None:
            return self.limits
        return model_limits_for(self.settings, model or self.settings.stage_model("map"))

    @property
    def records(self) -> RecordStores:
        return self.stores.records

    @property
    def jobs(self) -> JobStores:
        return self.stores.jobs

    @property
    def blobs(self) -> BlobStore:
        return self.stores.blobs

    @property
    def api_keys(self) -> ApiKeyStore:
        return self.stores.api_keys

    @property
    def idempotency(self) -> IdempotencyStore:
        return self.stores.idempotency

    @property
    def cache(self) -> ResultCache:
        return self.stores.cache


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(services: Annotated[Services, Depends(get_services)]) -> Settings:
    return services.settings


def get_records(services: Annotated[Services, Depends(get_services)]) -> RecordStores:
    return services.records


def get_jobs(services: Annotated[Services, Depends(get_services)]) -> JobStores:
    return services.jobs


def get_ends(services: Annotated[Services, Depends(get_services)]) -> JobEnds:
    return services.ends


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
    tenant = DEFAULT_TENANT if services.settings.auth_mode == "dev" else _authenticate(request, services)
    request.state.tenant = tenant  # seen by `refusal_before`: this request's errors come after its key was checked
    return tenant


def _authenticate(request: Request, services: Services) -> str:
    return authenticate(request.headers.get("authorization"), services.api_keys)


def refusal_before(request: Request) -> Unauthorized | None:
    """The 401 a `/v1` request deserves when it failed before `get_tenant` ran (None: no refusal).

    FastAPI parses the body, path and query before any dependency runs, so an unauthenticated request
    with a malformed body would learn of its 422 first; the error handler asks here, so a caller without
    a valid key is told only that.
    """
    if not request.url.path.startswith(f"{API_PREFIX}/") or hasattr(request.state, "tenant"):
        return None
    services = get_services(request)
    if services.settings.auth_mode == "dev":
        return None
    try:
        _authenticate(request, services)
    except Unauthorized as exc:
        return exc
    return None


def get_dispatcher(services: Annotated[Services, Depends(get_services)]) -> Dispatcher:
    """Hands created jobs to the workers (`submit`), revokes canceled ones, pings the workers."""
    return services.dispatcher


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
RecordsDep = Annotated[RecordStores, Depends(get_records)]
JobsDep = Annotated[JobStores, Depends(get_jobs)]
EndsDep = Annotated[JobEnds, Depends(get_ends)]
BlobsDep = Annotated[BlobStore, Depends(get_blobs)]
DispatcherDep = Annotated[Dispatcher, Depends(get_dispatcher)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
IdempotencyDep = Annotated[IdempotencyStore, Depends(get_idempotency)]
Tenant = Annotated[str, Depends(get_tenant)]
