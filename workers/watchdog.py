"""The watchdog: no job stays live past its deadline, whatever died underneath.

A reduce stage that is never sent (a map task lost with its worker, so its level never settles; the
fan-in's counts lost while Redis was down), a SIGKILLed worker's unacked tasks (Redis hands them out again only after
`visibility_timeout_seconds`, an hour by default), a start message lost with the broker: each
leaves a live job nobody works on. Every `watchdog_interval_seconds` one worker — whichever takes
that tick's Redis lock — looks at the jobs past their deadline in the active-jobs index (every per-slot
copy of it: `JobWatch.overdue`) and, decided atomically in Redis, re-submits each (`start_extraction` is
idempotent: stored map and reduce outputs are reused, so only lost work is redone; a read-grep agent starts
over) with a new deadline, until `job_max_attempts`; then it fails the job with a reason (`workers.job.outcomes`).
If the old tasks were only slow, not lost, both runs proceed: HSETNX lets one store each output,
and the job's terminal transition happens once.

It is a daemon thread in every worker process (started on `worker_ready`), not a Celery beat:
no extra process to deploy, and it runs exactly when there are workers to take the re-submitted jobs.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from extraction.errors import NotFound
from infra.errors import BackendUnavailable
from infra.stores.jobs import OverdueAction
from workers.job import outcomes
from workers.job.runtime import Runtime

log = logging.getLogger("toolout.workers.watchdog")

Submit = Callable[[str], None]
"""Re-queues a job's first step (`Dispatcher.submit`, given by the process's entry point)."""


@dataclass
class WatchdogReport:
    """What one pass did, for logs and tests."""

    retried: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def run_watchdog_once(rt: Runtime, now: float | None = None, *, submit: Submit) -> WatchdogReport:
    """Retry or fail every job past its deadline at `now` (no lock: callers decide who runs a pass)."""
    now = time.time() if now is None else now
    report = WatchdogReport()
    for job_id in rt.jobs.watch.overdue(now):
        settle_overdue(rt, job_id, now, submit, report)
    return report


def settle_overdue(rt: Runtime, job_id: str, now: float, submit: Submit, report: WatchdogReport) -> None:
    action = rt.jobs.watch.retry_overdue(job_id, now=now, max_attempts=rt.settings.job_max_attempts)
    if action is OverdueAction.RETRY:
        _retry(rt, job_id, submit, report)
    elif action is OverdueAction.GIVE_UP:
        _give_up(rt, job_id, report)


def _retry(rt: Runtime, job_id: str, submit: Submit, report: WatchdogReport) -> None:
    """Re-submit; if the broker is down the job keeps its new deadline and the next pass tries again."""
    log.warning("job %s is past its deadline: re-submitting it", job_id)
    try:
        submit(job_id)
    except BackendUnavailable as exc:
        log.warning("job %s: re-submission failed, the next deadline will retry: %s", job_id, exc.message)
        return
    report.retried.append(job_id)


def _give_up(rt: Runtime, job_id: str, report: WatchdogReport) -> None:
    try:
        job = rt.jobs.records.get(job_id)
    except NotFound:
        return
    if outcomes.give_up_overdue(rt, job):
        report.failed.append(job_id)


# --- the loop inside each worker -----------------------------------------------------------------
class Watchdog(threading.Thread):
    """Runs a pass every `interval` seconds when this worker takes the tick's lock; never dies of an outage."""

    def __init__(self, rt: Runtime, interval: float, submit: Submit) -> None:
        super().__init__(name="toolout-watchdog", daemon=True)
        self.rt, self.interval, self.submit = rt, interval, submit
        self.owner = f"{uuid.uuid4().hex[:12]}"
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.tick()

    def tick(self) -> WatchdogReport | None:
        """One tick: None when another worker holds this tick's lock or Redis is unreachable."""
        try:
            if self.rt.jobs.watch.claim_watchdog_tick(self.owner, self.interval):
                return run_watchdog_once(self.rt, submit=self.submit)
        except BackendUnavailable as exc:
            log.warning("watchdog tick skipped: %s", exc.message)
        except Exception:
            log.exception("watchdog tick failed")
        return None


_started: list[Watchdog] = []
_lock = threading.Lock()


def start_watchdog(rt: Runtime, submit: Submit) -> Watchdog | None:
    """Start this process's watchdog thread once (a non-positive interval disables it)."""
    interval = rt.settings.watchdog_interval_seconds
    with _lock:
        if interval <= 0 or _started:
            return _started[0] if _started else None
        _started.append(Watchdog(rt, interval, submit))
        _started[0].start()
    log.info(
        "watchdog running every %.1fs (deadline %ss, %d attempts)",
        interval,
        rt.settings.job_deadline_seconds,
        rt.settings.job_max_attempts,
    )
    return _started[0]
