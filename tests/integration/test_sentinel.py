"""Redis fails over under running jobs: the primary is SIGKILLed with 8 jobs in flight, the Sentinels promote
the replica, and the API and workers follow them to it (`TOOLOUT_REDIS_SENTINELS`; the Redis broker too).

Every job must end (succeeded, or failed with a reason), no chunk may be applied twice, and what was stored
before the failover (an output, a named variable) must still be readable after it. Writes the primary took
but had not yet sent to the replica are what a failover can lose: the primary here runs with
`min-replicas-to-write 1`, which refuses writes while no replica is connected (docs/guides/deploy.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from infra.redis import keys
from tests.fixtures.faults import DEADLINE_SECONDS, FaultStack
from tests.fixtures.sentinel import SentinelSet
from tests.integration.test_faults import FACT, chunk_progress, log_document, poll_until, submit_jobs, wait_terminal

pytestmark = pytest.mark.integration

UNAVAILABLE_AFTER_PROMOTION = 15.0
"""Seconds after Sentinel names the new master in which the API may still answer 503 (a clear, retryable error): its
Sentinel client asks again on its next command, and a sentinel that has not yet seen the promotion says no master."""


def test_a_primary_killed_mid_run_fails_over_and_every_job_ends(
    sentinel_stack: tuple[SentinelSet, FaultStack], measurements: Callable[[str], None]
) -> None:
    servers, stack = sentinel_stack
    with stack.client() as client:
        session = client.create_session()
        stored = client.store(session, log_document(), tool_name="logs.fetch", name="payments_log")
        ids = submit_jobs(client, stored["handle"], 8)
        assert poll_until(lambda: (p := chunk_progress(client, ids))[1] > 0 and p[0] >= p[1] // 4, timeout=60)
        before = servers.master()
        time.sleep(0.5)  # replication lag is bounded by min-replicas-max-lag; give the last writes a moment
        killed = time.monotonic()
        servers.primary.process.kill()
        assert poll_until(lambda: servers.master() not in (None, before), timeout=30), "no failover in 30 s"
        promoted = time.monotonic() - killed
        refused: list[float] = []  # the API's 503s while its Sentinel client catches up with the new master
        jobs = wait_terminal(client, ids, timeout=4 * DEADLINE_SECONDS + 60, unavailable=refused)
        ended = time.monotonic() - killed
        last_503 = max(refused, default=killed) - killed
        assert last_503 <= promoted + UNAVAILABLE_AFTER_PROMOTION, (
            f"the API answered 503 {last_503:.1f}s after the kill, {promoted:.1f}s after which a master was named"
        )
        content = client.content(stored["handle"])
        variable = client.variable(session, "payments_log")
    new_master = servers.replica.client()
    succeeded = [job for job in jobs.values() if job["status"] == "succeeded"]
    measurements(
        f"Sentinel failover: replica promoted {promoted:.1f}s after the primary's SIGKILL; all 8 jobs ended "
        f"{ended:.1f}s after it ({len(succeeded)} succeeded, "
        f"{sum(1 for j in jobs.values() if j['attempts'] > 1)} re-submitted by the watchdog); "
        f"{len(refused)} poll(s) answered 503, the last {last_503:.1f}s after the kill"
    )
    for job_id, job in jobs.items():
        assert job["status"] in {"succeeded", "failed"}, job
        if job["status"] == "failed":
            assert job["error"], job
            continue
        assert FACT in job["result"]
        maps = new_master.hlen(keys.job_chunks(job_id))
        assert job["chunks_done"] == job["chunks_total"] == maps, (job, maps)  # no chunk applied twice
    errors = [(job["attempts"], job["error"]) for job in jobs.values() if job["status"] == "failed"]
    assert len(succeeded) >= 6, ("a failover may lose the last writes of a job or two, not most of them", errors)
    assert content == log_document()
    assert variable["handle"] == stored["handle"]
