"""Sessions end whenever their agent likes, jobs in flight included (docs/operations.md): on the faults stack (the API
and two Celery workers as processes, a private Redis, the offline model), 20 sessions are each deleted
0.3 s after starting two jobs. Every job must be gone, no log may hold a traceback or an ERROR line,
and Redis must be back to the keys it had before, within the default watchdog interval.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from infra.settings import Settings
from tests.fixtures.faults import FaultStack
from tests.integration.test_faults import REQUEST, log_document, wait_terminal
from toolout.client import ToolOutAPIError, ToolOutClient
from toolout.devstack.stack_watch import LogWatch, key_names, wait_for_baseline

pytestmark = pytest.mark.integration

SESSIONS = 20
DELETE_AFTER_SECONDS = 0.3
WATCHDOG_INTERVAL = Settings.model_fields["watchdog_interval_seconds"].default
QUIET_STOP = r"stopped, the job was canceled or deleted"


def run_session(stack: FaultStack, document: bytes, n: int) -> tuple[list[str], list[str]]:
    """One agent: a session, an upload, a map-reduce job and a read-grep job, then DELETE 0.3 s later.
    Returns the job ids and their statuses just before the delete."""
    with stack.client() as client:
        session = client.create_session()
        handle = client.store(session, document, tool_name="logs.fetch", tool_args='{"service": "payments"}')["handle"]
        ids = [
            client.submit(handle, f"{REQUEST} #{n}", "full-chunked", cache=False)["id"],
            client.submit(handle, f"{REQUEST} #{n}", "read-grep", cache=False)["id"],
        ]
        time.sleep(DELETE_AFTER_SECONDS)
        statuses = [client.job(job_id)["status"] for job_id in ids]
        client.delete_session(session)
    return ids, statuses


def warm_up(stack: FaultStack, document: bytes) -> None:
    """One of each job to its end, in a session then deleted: the store-wide keys (usage totals, the
    broker's bindings) exist before the baseline is taken."""
    with stack.client() as client:
        session = client.create_session()
        handle = client.store(session, document, tool_name="logs.fetch")["handle"]
        ids = [client.submit(handle, "warm-up", mode, cache=False)["id"] for mode in ("full-chunked", "read-grep")]
        wait_terminal(client, ids, timeout=120)
        client.delete_session(session)


def gone(client: ToolOutClient, job_id: str) -> bool:
    try:
        return client.job(job_id)["status"] == "canceled"
    except ToolOutAPIError as exc:
        return exc.status == 404


def test_sessions_deleted_mid_job_leave_no_job_no_key_and_no_traceback(faults_stack: FaultStack) -> None:
    stack = faults_stack
    stack.restart_model(latency_ms=150)
    document = log_document()
    warm_up(stack, document)
    redis = stack.redis_server.client()
    baseline = key_names(redis)
    logs = LogWatch([service.log_path for service in stack.services])

    with ThreadPoolExecutor(SESSIONS) as pool:
        runs = list(pool.map(lambda n: run_session(stack, document, n), range(SESSIONS)))
    ids = [job_id for run_ids, _ in runs for job_id in run_ids]
    live_at_delete = sum(status in ("queued", "running") for _, statuses in runs for status in statuses)
    left, seconds = wait_for_baseline(redis, baseline, timeout=WATCHDOG_INTERVAL)
    with stack.client() as client:
        not_gone = [job_id for job_id in ids if not gone(client, job_id)]
    problems = logs.problems()
    print(
        f"\n{SESSIONS} sessions deleted {DELETE_AFTER_SECONDS}s after starting 2 jobs each: {live_at_delete} of "
        f"{len(ids)} jobs live at the delete; keys back to baseline in {seconds:.1f}s ({len(left)} left); "
        f"{logs.count(QUIET_STOP)} task(s) stopped quietly; log problems: {sum(map(len, problems.values()))}"
    )
    assert live_at_delete >= len(ids) // 2, "the jobs must be in flight when their session ends"
    assert not_gone == []
    assert problems == {}, problems
    assert left == set(), sorted(left)[:20]
