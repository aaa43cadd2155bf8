"""How the API hands a job to the workers: one message on the `extract` queue, nothing else."""

from __future__ import annotations

from kombu.exceptions import OperationalError

from infra.errors import BackendUnavailable


def submit_extraction(job_id: str) -> None:
    """Queue the job's first task; a broker outage becomes `BackendUnavailable` (HTTP 503)."""
    from workers.app import app

    try:
        app.send_task("toolout.start_extraction", args=[job_id], queue="extract", retry=False)
    except OperationalError as exc:
        raise BackendUnavailable(f"the task broker is unavailable: {exc}", backend="broker") from exc
