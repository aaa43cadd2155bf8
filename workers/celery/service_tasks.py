"""The tasks that are no job's step: a finished job's webhook delivery and a just-stored output's preload.

Neither carries a job's step (`workers.job.drive` declares those), so neither passes the steps' middleware
(`workers.celery.tasks.MIDDLEWARE`): a webhook has no step to refuse or quiet, and a preload has no job.
"""

from __future__ import annotations

import math

from celery import Celery

from workers.celery.app import PRELOAD, WEBHOOK
from workers.celery.tasks import RETRIED_TASK, RedeliveryLogged
from workers.job.preload import preload
from workers.job.runtime import Runtime
from workers.job.webhooks import deliver_once


def register_service_tasks(celery: Celery, rt: Runtime) -> None:
    """Define the webhook and preload tasks on `celery` (the steps' are `workers.celery.tasks.register_tasks`')."""
    register_webhook(celery, rt)
    register_preload(celery, rt)


def register_webhook(celery: Celery, rt: Runtime) -> None:
    """One delivery attempt per message; the next is a new message after the backoff (no worker thread sleeps)."""

    @celery.task(name=WEBHOOK, **RETRIED_TASK)
    def deliver_webhook(job_id: str, attempt: int) -> None:
        deliver_webhook_attempt(celery, rt, job_id, attempt)


def register_preload(celery: Celery, rt: Runtime) -> None:
    """The query strategy's preload: not a job's step (no job id), and not retried — a preload that
    fails leaves the first question to load (`workers.job.preload` logs why)."""

    @celery.task(name=PRELOAD, base=RedeliveryLogged, shared=False, ignore_result=True)
    def preload_tables(handle: str, tenant: str) -> None:
        preload(rt, handle, tenant)


def deliver_webhook_attempt(celery: Celery, rt: Runtime, job_id: str, attempt: int) -> None:
    """One attempt; the next one is a new message after the backoff (no worker thread sleeps on it)."""
    delay = deliver_once(rt.settings, rt.jobs, job_id, attempt).retry_in
    if delay is not None:  # whole seconds: RabbitMQ's native delayed delivery counts no finer
        countdown = max(1, math.ceil(delay))
        celery.send_task(WEBHOOK, args=[job_id, attempt + 1], queue="webhooks", countdown=countdown, ignore_result=True)
