"""Running jobs in this process: the pipeline's steps on a thread pool instead of Celery.

A step's answer (`workers.job.steps`) is handed on by `workers.job.drive`, the one interpreter of steps;
`workers.celery.tasks` sends it as task messages, `LocalDispatcher` runs it on threads: the parts of a
`Fanout` (maps, or one level's reduce groups) in parallel, then the stage after them; a lone step (read-grep,
query) in the calling thread. The steps, the stores' promises and the job's ending (`workers.job.outcomes`)
are shared, so a job ends here exactly as it would on the service. Two pools: job drivers wait on their
steps, and steps never wait on anything, so no pool size can deadlock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from extraction.errors import NotFound
from workers.job import drive, outcomes
from workers.job.context import job_over
from workers.job.preload import preload
from workers.job.runtime import Runtime
from workers.job.steps import Fanout, Start, Step
from workers.job.webhooks import deliver_once, wants_webhook

log = logging.getLogger("toolout.workers.local")


class LocalDispatcher:
    """A `Dispatcher` that runs jobs in this process (the embedded mode, an in-process API)."""

    def __init__(self, rt: Runtime, *, concurrency: int | None = None) -> None:
        self.rt = rt
        threads = concurrency or rt.settings.worker_concurrency
        self._jobs = ThreadPoolExecutor(max(1, threads), thread_name_prefix="toolout-job")
        self._steps = ThreadPoolExecutor(max(1, threads), thread_name_prefix="toolout-step")
        self._preloads = ThreadPoolExecutor(1, thread_name_prefix="toolout-preload")

    # --- Dispatcher ---------------------------------------------------------------------------
    def submit(self, job_id: str) -> None:
        self.start(job_id)

    def revoke(self, job_id: str) -> int:
        """Nothing is queued anywhere: running steps stop at their next model call (the gate sees the cancel)."""
        return 0

    def ping(self) -> list[Any]:
        return [{"local": {"ok": "pong"}}]

    def preload(self, handle: str, tenant: str) -> Future[str]:
        """On a pool of its own, one at a time: a load never takes a job's thread (`preload` never raises)."""
        return self._preloads.submit(preload, self.rt, handle, tenant)

    def finished(self, job_id: str) -> None:
        """Deliver the job's webhook from a timer thread; retries are later timers, so nothing here waits."""
        if wants_webhook(self.rt.jobs, job_id):
            self._deliver(job_id, 1)

    def _deliver(self, job_id: str, attempt: int, delay: float = 0.0) -> None:
        def run() -> None:
            retry_in = deliver_once(self.rt.settings, self.rt.jobs, job_id, attempt).retry_in
            if retry_in is not None:
                self._deliver(job_id, attempt + 1, retry_in)

        timer = threading.Timer(delay, run)
        timer.daemon = True
        timer.start()

    # --- running ------------------------------------------------------------------------------
    def start(self, job_id: str) -> Future[None]:
        """Run the job in the background; the future resolves when it has ended."""
        return self._jobs.submit(self.run, job_id)

    def run(self, job_id: str) -> None:
        """Run the job to its end in the calling thread (its map and reduce groups on the step pool)."""
        try:
            self.send(Start(job_id))
        except Exception as exc:
            if job_over(self.rt.jobs, job_id):
                log.info("job %s stopped, the job was canceled or deleted (%s)", job_id, type(exc).__name__)
                return
            log.exception("job %s: a step failed", job_id)
            self._fail(job_id, f"{type(exc).__name__}: {exc}")

    # --- drive.Executor ---------------------------------------------------------------------------
    def send(self, step: Step) -> None:
        """Run the step in this thread, then whatever it answers."""
        drive.advance(self, drive.run(self.rt, step))

    def fan_out(self, fanout: Fanout) -> None:
        """The parts on the step pool, waited for all (the fan-in), then the stage after them in this thread."""
        for future in [self._steps.submit(drive.run, self.rt, part) for part in fanout.parts]:
            future.result()
        self.send(fanout.then)

    def _fail(self, job_id: str, error: str) -> None:
        with contextlib.suppress(NotFound):  # deleted meanwhile: nothing left to end
            outcomes.fail(self.rt, self.rt.jobs.records.get(job_id), error)

    def close(self) -> None:
        self._jobs.shutdown(wait=True, cancel_futures=True)
        self._steps.shutdown(wait=True, cancel_futures=True)
        self._preloads.shutdown(wait=True, cancel_futures=True)
