"""Removing sessions and outputs (on DELETE, when a session sits idle too long, when a TTL runs out), and the
versions variables left behind.

A session owns state in two systems: blobs under `sessions/<id>/` (raw outputs, their indexes and text views,
the query strategy's Parquet tables), job records with their traces and task ids, output/session records (with
its names, file paths and counters) and the pointers to its outputs' loaded forms in Redis, its outputs' entries
in the result cache, and the Idempotency-Keys whose kept answers name it. `purge_session` first cancels the
session's jobs still in flight (an agent ends its conversation whenever it likes: their tasks stop at their next
step instead of tripping over deleted state), then removes them in that order, so a failure half-way leaves
the session record in place and the next DELETE or sweep finishes the job. `purge_output` does the same for
one output and what was derived from it: its jobs (a pending webhook finds its job gone and sends nothing),
cached answers and kept replays.

A variable or file written again (append, replace) leaves its previous version *retired*: still
readable, because an extraction job or a download may be reading it. The sweeper removes a retired
version once it is older than `TOOLOUT_RETIRED_VERSION_GRACE_SECONDS` and no live job uses it (one
still in use is looked at again a grace period later); its cached answers go with it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool

from api.deps import Services
from api.result_cache import forget_outputs
from infra.outputs.storing import delete_stored_output, forget_loaded_form
from infra.stores.jobs import JobRecord
from infra.stores.records import Expiring, OutputRecord, session_prefix

log = logging.getLogger("toolout.api.sweeper")
T = TypeVar("T")


def purge_session(services: Services, session_id: str, tenant: str | None = None) -> None:
    """Cancel the session's live jobs, take its outputs out of the result cache, delete its blobs, then its
    jobs, then its records (the last step is what makes it gone), then the pointers to its outputs' loaded
    forms (after the records: `infra.outputs.storing.delete_stored_output` says why)."""
    jobs = cancel_live_jobs(services, session_id)
    outputs = services.records.sessions.session_outputs(session_id)
    forget_outputs(services, [output.handle for output in outputs])
    tenants = {job.tenant for job in jobs} | {output.tenant for output in outputs}
    for owner in tenants | ({tenant} if tenant else set()):
        services.idempotency.forget_owned(owner, session_id)
    services.blobs.delete_prefix(session_prefix(session_id))
    services.jobs.records.delete_session_jobs(session_id)
    services.records.sessions.drop_session_records(session_id)
    for output in outputs:
        forget_loaded_form(services.stores.loaded, output)


def purge_output(services: Services, record: OutputRecord) -> None:
    """One output and what was derived from it: its live jobs canceled, its cached answers and kept replays
    forgotten, its jobs (with their traces) deleted, then its blobs, text view, tables and record."""
    jobs = cancel_live_jobs(services, record.session_id, handle=record.handle)
    forget_outputs(services, [record.handle])
    services.idempotency.forget_owned(record.tenant, record.session_id, record.handle)
    services.jobs.records.delete([job.id for job in jobs])
    delete_stored_output(services.blobs, services.records, record, services.stores.loaded)


def cancel_live_jobs(services: Services, session_id: str, *, handle: str | None = None) -> list[JobRecord]:
    """The cooperative cancel of `POST …/cancel` for every job still queued or running (only those on `handle`,
    when given): its tasks see the cancel before their next step or model call and stop, instead of finding
    their job and blobs gone half-way; the queued ones are revoked. Returns the jobs looked at."""
    jobs = [job for job in services.jobs.records.list_for_session(session_id) if handle in (None, job.handle)]
    canceled = 0
    for job in jobs:
        if not job.status.terminal and services.jobs.records.cancel(job.id):
            services.dispatcher.revoke(job.id)
            canceled += 1
    if canceled:
        log.info("session %s ends with %d job(s) in flight: canceled", session_id, canceled)
    return jobs


def sweep_idle_sessions(services: Services, *, batch: int = 1000) -> int:
    """Purge every session idle past its TTL; returns how many went. Safe to run on many replicas.

    Each batch reads every per-slot copy of the last-use index (one command per slot in use, up to 16384),
    so a batch is paid for by many sessions and a backlog is taken a thousand sessions at a time, not a hundred."""
    listing = functools.partial(services.records.retention.idle_sessions, limit=batch)
    return _drain(listing, functools.partial(purge_session, services), "idle session(s)")


def sweep_expired(services: Services, *, batch: int = 100, now: float | None = None) -> int:
    """Purge every session and output whose TTL has run out (`api.retention`); returns how many went. Each one
    purged leaves the list, so the loop ends; safe to run on many replicas (a second purge finds nothing)."""
    before = time.time() if now is None else now
    listing = functools.partial(services.records.retention.expiring, before=before, limit=batch)
    return _drain(listing, functools.partial(_purge_expired, services), "expired session(s) and output(s)")


def _drain(listing: Callable[[], list[T]], purge: Callable[[T], None], what: str) -> int:
    """Purge what `listing` gives until it gives nothing (each purge takes its item off the list)."""
    swept = 0
    while due := listing():
        for item in due:
            purge(item)
        swept += len(due)
    if swept:
        log.info("swept %d %s", swept, what)
    return swept


def _purge_expired(services: Services, item: Expiring) -> None:
    if item.kind == "session":
        purge_session(services, item.id)
        return
    record = services.records.outputs.stored_output(item.id)
    if record is not None:
        purge_output(services, record)


def sweep_retired_versions(services: Services, *, batch: int = 100, now: float | None = None) -> int:
    """Remove retired versions past their grace period that no live job reads; returns how many went."""
    now = time.time() if now is None else now
    cutoff = now - services.settings.retired_version_grace_seconds
    live: dict[str, set[str]] = {}
    removed = 0
    for record in services.records.retention.retired_outputs(before=cutoff, limit=batch):
        if record.handle in _live_handles(services, record, live):
            services.records.retention.retire_output(record, now)  # look again a grace period later
            continue
        forget_outputs(services, [record.handle])
        delete_stored_output(services.blobs, services.records, record, services.stores.loaded)
        removed += 1
    if removed:
        log.info("removed %d retired version(s)", removed)
    return removed


def _live_handles(services: Services, record: OutputRecord, cache: dict[str, set[str]]) -> set[str]:
    """Handles that the session's queued or running jobs extract from (fetched once per session per sweep)."""
    if record.session_id not in cache:
        jobs = services.jobs.records.list_for_session(record.session_id, record.tenant)
        cache[record.session_id] = {job.handle for job in jobs if not job.status.terminal}
    return cache[record.session_id]


async def sweep_forever(services: Services, interval: float) -> None:
    """The lifespan's background task: one sweep per interval; a failed sweep is logged, not fatal."""
    while True:
        for sweep, what in (
            (sweep_idle_sessions, "session"),
            (sweep_expired, "expired session and output"),
            (sweep_retired_versions, "retired version"),
        ):
            try:
                await run_in_threadpool(sweep, services)
            except Exception:
                log.exception("%s sweep failed", what)
        await asyncio.sleep(interval)
