"""Extraction jobs: create (202 + Location; 201 from the result cache), estimate, poll (or long-poll), cancel.

The job record in Redis (`infra.stores.jobs`) is the truth the API reports; Celery only carries the
job id. A job is written before it is submitted, so a fast worker always finds it, and a submit
that fails marks it failed, so no job stays queued forever without a task behind it. Creating is
idempotent with an `Idempotency-Key`, and refused (429) while the tenant has
`max_concurrent_jobs_per_tenant` jobs live.
"""

from __future__ import annotations

import time
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import result_cache
from api.deps import (
    DispatcherDep,
    EndsDep,
    IdempotencyDep,
    JobsDep,
    MetricsDep,
    Services,
    ServicesDep,
    SettingsDep,
    Tenant,
)
from api.errors import error_responses, validation_error
from api.idempotency import IdempotencyKey, idempotent
from api.routers import API_PREFIX
from api.schemas import EstimateView, ExtractionRequest, JobView, job_view
from extraction.errors import Conflict, NotFound
from extraction.texts.results import unknown_handle_text
from infra.errors import BackendUnavailable
from infra.llm.catalog import check_requested_model
from infra.outputs.views import check_readable, reading_view
from infra.planning.estimates import ExtractionEstimate, check_budget, estimate_extraction
from infra.privacy.policy import log_unredacted, unredacted_reason
from infra.settings import Settings
from infra.stores.idempotency import fingerprint
from infra.stores.jobs import JobRecord, JobStatus, JobStores
from infra.stores.jobs.ends import JobEnds
from infra.stores.records import OutputRecord, RecordStores
from infra.webhooks.delivery import WebhooksNotConfigured, check_callback_url
from workers.dispatcher import Dispatcher

router = APIRouter(prefix=f"{API_PREFIX}/extractions", tags=["extractions"])

REREAD_SECONDS = 0.5
"""A long poll re-reads its job this often even unannounced: the fallback when the end feed missed it."""


def _live_output(records: RecordStores, handle: str, tenant: str) -> OutputRecord:
    """The output, if it and its session still exist; otherwise a 404 carrying the agent-facing text."""
    try:
        record = records.outputs.get_output(handle, tenant)
        records.sessions.get_session(record.session_id, tenant)
    except NotFound:
        raise NotFound(
            f"no stored output with handle {handle!r}", handle=handle, tool_result=unknown_handle_text(handle)
        ) from None
    return record


def _readable_output(records: RecordStores, body: ExtractionRequest, tenant: str, settings: Settings) -> OutputRecord:
    """The output as the job will read it (an HTML page's text view unless `view` is raw); binary is refused."""
    record = _live_output(records, str(body.handle), tenant)
    check_readable(record)
    return reading_view(record, body.view, redact=body.redacting(settings, tenant))


def _submit(jobs: JobStores, dispatcher: Dispatcher, job: JobRecord) -> None:
    try:
        dispatcher.submit(job.id)
    except BackendUnavailable as exc:
        jobs.records.finish(job.id, JobStatus.FAILED, error=f"could not queue the job: {exc.message}")
        raise


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobView,
    responses={
        201: {"model": JobView, "description": "answered from the result cache: the job is already succeeded"},
        **error_responses(400, 404, 409, 422, 429, 503),
    },
)
def create_extraction(
    body: ExtractionRequest,
    request: Request,
    services: ServicesDep,
    metrics: MetricsDep,
    tenant: Tenant,
    idempotency: IdempotencyDep,
    idempotency_key: IdempotencyKey = None,
) -> Any:
    """Start extracting `extract` from the output under `handle` (the `tool_output` tool call).

    An identical extraction that already succeeded answers at once (201, `cached: true`) unless the
    body says `"cache": false`; with `max_input_tokens` / `max_cost_usd` a job whose estimate is over
    budget is refused (422) before anything runs. With an `Idempotency-Key`, a retry of the same
    request gets the first answer, not a second job.
    """
    _check_extract(body, services.settings)

    def produce() -> Response:
        output = _readable_output(services.records, body, tenant, services.settings)
        key = result_cache.request_key(services, tenant, output, body.extract, body.mode.value, body.model)
        source = result_cache.find_source(services, key, tenant) if key and body.cache else None
        if key and source is not None:
            metrics.cache_hits.labels(tenant).inc()
            return _answered(result_cache.serve_cached(services, key, source, output, body))
        if body.max_input_tokens is not None or body.max_cost_usd is not None:
            check_budget(
                _estimate(services, output, body),
                max_input_tokens=body.max_input_tokens,
                max_cost_usd=body.max_cost_usd,
            )
        job = _create(services, output, body)
        result_cache.offer(services, key, job)
        metrics.jobs_submitted.inc()
        return _accepted(job)

    return idempotent(
        idempotency, tenant, idempotency_key, fingerprint("POST", request.url.path, body.model_dump_json()), produce
    )


def _check_extract(body: ExtractionRequest, settings: Settings) -> None:
    if len(body.extract) > settings.max_extract_chars:
        raise validation_error(
            ("body", "extract"), f"at most {settings.max_extract_chars} characters", "string_too_long"
        )
    if body.callback_url is not None:
        check_webhook(settings, body.callback_url)
    check_requested_model(settings, body.model)


def _create(services: Services, output: OutputRecord, body: ExtractionRequest) -> JobRecord:
    """Write the job (admitted against the tenant's live-job cap), then hand it to the workers."""
    record = body.job_on(output, services.settings)
    job = services.jobs.records.create(record, max_live=services.settings.max_concurrent_jobs_per_tenant)
    if not job.redact:
        why = unredacted_reason(services.settings.unredacted_tenants, job.tenant, body.redact_reason)
        log_unredacted(job.id, job.tenant, job.handle, why)
    _submit(services.jobs, services.dispatcher, job)
    return job


def _estimate(services: Services, output: OutputRecord, body: ExtractionRequest) -> ExtractionEstimate:
    return estimate_extraction(
        output,
        body.extract,
        body.mode,
        settings=services.settings,
        blobs=services.blobs,
        records=services.records,
        limits=services.model_limits,
        requested_model=body.model,
        hedge=body.hedge,
    )


@router.post("/estimate", response_model=EstimateView, responses=error_responses(400, 404, 422, 503))
def estimate(body: ExtractionRequest, services: ServicesDep, tenant: Tenant) -> EstimateView:
    """What `POST /v1/extractions` with this body would do and cost: route, chunks, calls, tokens, USD.

    Nothing runs and no job is stored; the numbers come from the same planning the job does (see
    the README's "Estimates and budgets" for what is exact and what is assumed), and the chunk plan
    it makes is kept with the output, so the job asked next starts without planning again.
    """
    _check_extract(body, services.settings)
    output = _readable_output(services.records, body, tenant, services.settings)
    key = result_cache.request_key(services, tenant, output, body.extract, body.mode.value, body.model)
    source = result_cache.find_source(services, key, tenant) if key and body.cache else None
    found = _estimate(services, output, body)
    return EstimateView(**found.model_dump(), cached=source is not None, cached_from=source.id if source else None)


@router.get("/estimate", include_in_schema=False)
def estimate_is_post_only() -> None:
    """405 (Allow: POST): without this route `GET /{job_id}` would take `estimate` for a malformed job id."""
    raise StarletteHTTPException(status.HTTP_405_METHOD_NOT_ALLOWED)


def check_webhook(settings: Settings, url: str) -> None:
    """422 unless webhooks are configured and the URL is one we may call (http(s), public unless allowed)."""
    if settings.webhook_secret is None:
        raise WebhooksNotConfigured("this deployment sends no webhooks (TOOLOUT_WEBHOOK_SECRET is not set)")
    check_callback_url(url, allow_private=settings.webhook_allow_private)


def _accepted(job: JobRecord) -> JSONResponse:
    """202 with where to poll; built here (not by FastAPI) so the idempotency layer can keep it."""
    headers = {"Location": f"/v1/extractions/{job.id}", "Retry-After": "1"}
    return JSONResponse(job_view(job).model_dump(mode="json"), status_code=status.HTTP_202_ACCEPTED, headers=headers)


def _answered(job: JobRecord) -> JSONResponse:
    """201: a job created already succeeded (a cache hit): nothing to wait for."""
    headers = {"Location": f"/v1/extractions/{job.id}"}
    return JSONResponse(job_view(job).model_dump(mode="json"), status_code=status.HTTP_201_CREATED, headers=headers)


@router.get("/{job_id}", response_model=JobView, responses=error_responses(404, 422))
async def get_extraction(
    job_id: uuid.UUID,
    request: Request,
    jobs: JobsDep,
    ends: EndsDep,
    settings: SettingsDep,
    tenant: Tenant,
    response: Response,
    wait: Annotated[float, Query(ge=0, description="seconds to wait for the job to finish (long poll)")] = 0,
) -> Any:
    """The job; with `wait=N` the answer comes when it finishes or after N seconds, whichever is first."""
    if wait > settings.max_wait_seconds:
        raise validation_error(("query", "wait"), f"at most {settings.max_wait_seconds} seconds", "less_than_equal")
    job = await _wait_for_terminal(jobs, ends, str(job_id), tenant, wait, request)
    if not job.status.terminal:
        response.headers["Retry-After"] = "1"
    return job_view(job)


async def _wait_for_terminal(
    jobs: JobStores, ends: JobEnds, job_id: str, tenant: str, wait: float, request: Request
) -> JobRecord:
    """Read the record again when the job's end is announced, or every `REREAD_SECONDS` in case an
    announcement was missed; stop early if the client went away. No thread is held while waiting."""
    deadline = time.monotonic() + wait
    with ends.watch(job_id) as ended:  # before the first read: an end between read and wait still wakes us
        while True:
            job = await run_in_threadpool(jobs.records.get, job_id, tenant)
            if job.status.terminal or time.monotonic() >= deadline or await request.is_disconnected():
                return job
            await ended.wait(min(REREAD_SECONDS, max(deadline - time.monotonic(), 0)))


@router.post("/{job_id}/cancel", response_model=JobView, responses=error_responses(404, 409, 422))
def cancel_extraction(job_id: uuid.UUID, jobs: JobsDep, dispatcher: DispatcherDep, tenant: Tenant) -> Any:
    """Cancel a live job (idempotent); a job that already finished otherwise is a 409.

    The record's terminal state is the cancel (running steps see it before their next model call);
    revoking the job's queued tasks then spares the workers from taking them at all.
    """
    job = jobs.records.get(str(job_id), tenant)
    if not jobs.records.cancel(job.id):
        job = jobs.records.get(job.id, tenant)
        if job.status is not JobStatus.CANCELED:
            raise Conflict(
                f"extraction {job.id} already finished as {job.status.value}", job_id=job.id, status=job.status.value
            )
    dispatcher.revoke(job.id)
    return job_view(jobs.records.get(job.id, tenant))
