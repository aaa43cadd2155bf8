"""Jobs as Celery tasks on the broker (Redis or RabbitMQ): the production `Dispatcher`."""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError

from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStores
from workers.celery.app import PRELOAD, START, WEBHOOK
from workers.job.webhooks import wants_webhook

log = logging.getLogger("toolout.workers")


class CeleryDispatcher:
    """Jobs as Celery tasks; `jobs` holds the task ids a cancel revokes."""

    def __init__(self, celery: Celery, jobs: JobStores) -> None:
        self.celery, self.jobs = celery, jobs

    def submit(self, job_id: str) -> None:
        try:
            self.celery.send_task(START, args=[job_id], queue="extract", retry=False, ignore_result=True)
        except OperationalError as exc:
            raise BackendUnavailable(f"the task broker is unavailable: {exc}", backend="broker") from exc

    def revoke(self, job_id: str) -> int:
        """The cancel itself is the job record's terminal state; revoking spares the workers from taking,
        one by one, hundreds of queued map tasks that would each find the job ended. A task already
        running is not interrupted (a thread pool cannot kill a thread): it stops at its next model
        call, where the gate finds the job ended.
        """
        try:
            ids = self.jobs.tasks.task_ids(job_id)
            if ids:
                self._revoke(ids)
            return len(ids)
        except (BackendUnavailable, OperationalError) as exc:
            log.warning("job %s: could not revoke its queued tasks: %s", job_id, exc)
            return 0

    def _revoke(self, ids: list[str]) -> None:
        """Broadcast on a connection checked first, so a dead broker fails fast instead of retrying forever."""
        with self.celery.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1)
            self.celery.control.revoke(ids, connection=connection)

    def finished(self, job_id: str) -> None:
        """Queue the webhook task (retried with backoff on the `webhooks` queue); a broker outage is logged."""
        if not wants_webhook(self.jobs, job_id):
            return
        try:
            self.celery.send_task(WEBHOOK, args=[job_id, 1], queue="webhooks", retry=False, ignore_result=True)
        except OperationalError as exc:
            log.warning("job %s: could not queue its webhook: %s", job_id, exc)

    def preload(self, handle: str, tenant: str) -> None:
        """Queue the preload on the agent queue (where the query step loads too); a broker outage is logged."""
        try:
            self.celery.send_task(PRELOAD, args=[handle, tenant], queue="agent", retry=False, ignore_result=True)
        except OperationalError as exc:
            log.warning("output %s: could not queue its preload: %s", handle, exc)

    def ping(self) -> list[Any]:
        return list(self.celery.control.ping(timeout=1, limit=1) or [])
