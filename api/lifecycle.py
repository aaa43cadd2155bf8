"""Removing sessions (on DELETE and when they sit idle too long).

A session owns three kinds of state in two systems: blobs under `sessions/<id>/`, job records and
output/session records in Redis (and its outputs' entries in the result cache). `purge_session`
removes them in that order, so a failure half-way leaves the session record in place and the next
DELETE or sweep finishes the job.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.concurrency import run_in_threadpool

from api.deps import Services
from api.result_cache import forget_outputs
from infra.records import session_prefix

log = logging.getLogger("toolout.api.sweeper")

SWEEP_INTERVAL_SECONDS = 60.0


def purge_session(services: Services, session_id: str) -> None:
    """Take the session's outputs out of the result cache, delete its blobs, then its jobs, then its records
    (the last step is what makes it gone)."""
    forget_outputs(services, services.records.session_handles(session_id))
    services.blobs.delete_prefix(session_prefix(session_id))
    services.jobs.delete_session_jobs(session_id)
    services.records.drop_session_records(session_id)


def sweep_idle_sessions(services: Services, *, batch: int = 100) -> int:
    """Purge every session idle past its TTL; returns how many went. Safe to run on many replicas."""
    swept = 0
    while ids := services.records.idle_sessions(limit=batch):
        for session_id in ids:
            purge_session(services, session_id)
        swept += len(ids)
    if swept:
        log.info("swept %d idle session(s)", swept)
    return swept


async def sweep_forever(services: Services, interval: float = SWEEP_INTERVAL_SECONDS) -> None:
    """The lifespan's background task: one sweep per interval; a failed sweep is logged, not fatal."""
    while True:
        try:
            await run_in_threadpool(sweep_idle_sessions, services)
        except Exception:
            log.exception("session sweep failed")
        await asyncio.sleep(interval)
