"""How jobs reach the workers and leave them: one message on the `extract` queue; revocation on cancel."""

from __future__ import annotations

import logging
from typing import Any

from kombu.exceptions import OperationalError

from infra.errors import BackendUnavailable
from infra.jobstore import JobStore

log = logging.getLogger("toolout.workers")


def submit_extraction(job_id: str) -> None:
    """Queue the job's first task; a broker outage becomes `BackendUnavailable` (HTTP 503)."""
    from workers.app import app

    try:
        app.send_task("toolout.start_extraction", args=[job_id], queue="extract", retry=False)
    except OperationalError as exc:
        raise BackendUnavailable(f"the task broker is unavailable: {exc}", backend="broker") from exc


def revoke_job(job_id: str, *, jobs: JobStore, control: Any = None) -> int:
    """Revoke the Celery tasks scheduled for a job (best effort); returns how many ids were revoked.

    The cancel itself is the job record's terminal state; revoking spares the workers from taking,
    one by one, hundreds of queued map tasks that would each find the job ended. A task already
    running is not interrupted (a thread pool cannot kill a thread): it stops at its next model
    call, where the gate finds the job ended. Never raises: the cancel has already happened.
    """
    try:
        ids = jobs.task_ids(job_id)
        if ids:
            _revoke(ids, control)
        return len(ids)
    except (BackendUnavailable, OperationalError) as exc:
        log.warning("job %s: could not revoke its queued tasks: %s", job_id, exc)
        return 0


def _revoke(ids: list[str], control: Any) -> None:
    """Broadcast the revoke on a connection checked first, so a dead broker fails fast instead of retrying forever."""
    if control is not None:
        control.revoke(ids)
        return
    from workers.app import app

    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1)
        app.control.revoke(ids, connection=connection)
