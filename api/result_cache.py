"""Answering an extraction from an earlier one: the API's side of the result cache (`infra.stores.resultcache`).

A request's key names the document by its sha256, so the same bytes uploaded again (another handle,
another session of the same tenant) find the answer too. Every job the API creates is offered as a
source for its key; a lookup walks the key's sources newest first and takes the first that succeeded
with a real report and whose output still exists, dropping the ones that never will. A hit is a new
job of its own (its id, its session, its links), written already succeeded, with nothing dispatched.
"""

from __future__ import annotations

import logging

from api.deps import Services
from api.schemas import ExtractionRequest
from extraction.errors import NotFound
from infra.errors import BackendUnavailable
from infra.stores.jobs import JobRecord
from infra.stores.records import OutputRecord
from infra.stores.resultcache.key import cache_key
from infra.stores.resultcache.reuse import answered_from, cacheable

log = logging.getLogger("toolout.api")


def request_key(
    services: Services, tenant: str, output: OutputRecord, extract: str, mode: str, model: str | None = None
) -> str | None:
    """The request's cache key (its stages' models in it), or None when this deployment keeps no result cache."""
    if services.settings.result_cache_ttl_seconds <= 0:
        return None
    return cache_key(services.settings, tenant=tenant, output=output, extract=extract, mode=mode, model=model)


def find_source(services: Services, key: str, tenant: str) -> JobRecord | None:
    """The newest job under `key` that may answer again; sources that never will are dropped on the way."""
    for job_id in services.cache.sources(key):
        source = _job(services, job_id, tenant)
        if source is not None and not source.status.terminal:
            continue  # still running: it may answer the next request
        if source is not None and cacheable(source) and services.records.outputs.find_output(source.handle, tenant):
            return source
        services.cache.forget(key, job_id)
    return None


def serve_cached(
    services: Services, key: str, source: JobRecord, output: OutputRecord, body: ExtractionRequest
) -> JobRecord:
    """A new job on `output`, finished with `source`'s answer; itself a source for the next request.

    Its own `callback_url`, if the request gave one, is called like any finished job's.
    """
    job = answered_from(source, body.job_on(output, services.settings))
    services.jobs.records.create_finished(job)
    offer(services, key, job)
    return job


def offer(services: Services, key: str | None, job: JobRecord) -> None:
    """Offer `job` as a source for `key`. Best effort: without it the next request simply runs again."""
    if key is None:
        return
    try:
        services.cache.remember(key, job.id, job.handle)
    except BackendUnavailable as exc:
        log.warning("result cache: job %s not offered: %s", job.id, exc.message)


def forget_outputs(services: Services, handles: list[str]) -> None:
    """Deleted outputs take their answers out of the cache (a lookup also checks, so this is tidiness)."""
    services.cache.forget_outputs(handles)


def _job(services: Services, job_id: str, tenant: str) -> JobRecord | None:
    try:
        return services.jobs.records.get(job_id, tenant)
    except NotFound:
        return None
