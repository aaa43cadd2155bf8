"""Removing sessions (on DELETE and when they sit idle too long), and the versions variables left behind.

A session owns three kinds of state in two systems: blobs under `sessions/<id>/`, job records and
output/session records (with its names, file paths and counters) in Redis, and its outputs' entries in
the result cache. `purge_session` first cancels the session's jobs still in flight (an agent ends its
conversation whenever it likes: their tasks stop at their next step instead of tripping over deleted
state), then removes them in that order, so a failure half-way leaves the session record in place and
the next DELETE or sweep finishes the job.

A variable or file written again (append, replace) leaves its previous version *retired*: still
readable, because an extraction job or a download may be reading it. The sweeper removes a retired
version once it is older than `TOOLOUT_RETIRED_VERSION_GRACE_SECONDS` and no live job uses it (one
still in use is looked at again a grace period later); its cached answers go with it.
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.concurrency import run_in_threadpool

from api.deps import Services
from api.result_cache import forget_outputs
from infra.outputs.storing import delete_stored_output, forget_loaded_form
from infra.stores.records import OutputRecord, session_prefix

log = logging.getLogger("toolout.api.sweeper")

SWEEP_INTERVAL_SECONDS = 60.0


def purge_session(services: Services, session_id: str) -> None:
    """Cancel the session's live jobs, take its outputs out of the result cache, delete its blobs, then its
    jobs, then its records (the last step is what makes it gone), then the pointers to its outputs' loaded
    forms (after the records: `infra.outputs.storing.delete_stored_output` says why)."""
    cancel_live_jobs(services, session_id)
    outputs = services.records.session_outputs(session_id)
    forget_outputs(services, [output.handle for output in outputs])
    services.blobs.delete_prefix(session_prefix(session_id))
    services.jobs.delete_session_jobs(session_id)
    services.records.drop_session_records(session_id)
    for output in outputs:
        forget_loaded_form(services.stores.loaded, output)


def cancel_live_jobs(services: Services, session_id: str) -> int:
    """The cooperative cancel of `POST …/cancel` for every job still queued or running: its tasks see the
    cancel before their next step or model call and stop, instead of finding their job and blobs gone
    half-way; the queued ones are revoked. Returns how many jobs were canceled."""
    canceled = 0
    for job in services.jobs.list_for_session(session_id):
        if not job.status.terminal and services.jobs.cancel(job.id):
            services.dispatcher.revoke(job.id)
            canceled += 1
    if canceled:
        log.info("session %s ends with %d job(s) in flight: canceled", session_id, canceled)
    return canceled


def sweep_idle_sessions(services: Services, *, batch: int = 1000) -> int:
    """Purge every session idle past its TTL; returns how many went. Safe to run on many replicas.

    Each batch reads every per-slot copy of the last-use index (one command per slot in use, up to 16384:
    ~0.5 s at 14k copies), so a backlog is taken a thousand sessions at a time, not a hundred."""
    swept = 0
    while ids := services.records.idle_sessions(limit=batch):
        for session_id in ids:
            purge_session(services, session_id)
        swept += len(ids)
    if swept:
        log.info("swept %d idle session(s)", swept)
    return swept


def sweep_retired_versions(services: Services, *, batch: int = 100, now: float | None = None) -> int:
    """Remove retired versions past their grace period that no live job reads; returns how many went."""
    now = time.time() if now is None else now
    cutoff = now - services.settings.retired_version_grace_seconds
    live: dict[str, set[str]] = {}
    removed = 0
    for record in services.records.retired_outputs(before=cutoff, limit=batch):
        if record.handle in _live_handles(services, record, live):
            services.records.retire_output(record, now)  # look again a grace period later
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
        jobs = services.jobs.list_for_session(record.session_id, record.tenant)
        cache[record.session_id] = {job.handle for job in jobs if not job.status.terminal}
    return cache[record.session_id]


async def sweep_forever(services: Services, interval: float = SWEEP_INTERVAL_SECONDS) -> None:
    """The lifespan's background task: one sweep per interval; a failed sweep is logged, not fatal."""
    while True:
        for sweep, what in ((sweep_idle_sessions, "session"), (sweep_retired_versions, "retired version")):
            try:
                await run_in_threadpool(sweep, services)
            except Exception:
                log.exception("%s sweep failed", what)
        await asyncio.sleep(interval)
