"""Delivering a finished job's webhook: one attempt per call, retried by the executor with backoff.

The job's ending never waits for this: the store's finish listener only *queues* a delivery (a
Celery task on the `webhooks` queue, or a thread in the embedded mode). A delivery re-checks the
URL (DNS may have changed since the job was created), POSTs the signed job, and says whether
another attempt may help (a 5xx, a 429, no answer) — never more than `webhook_max_attempts`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from extraction.errors import NotFound
from infra.settings import Settings
from infra.stores.jobs import JobStores
from infra.webhooks.delivery import Delivery, InvalidCallbackUrl, check_callback_url, deliver, payload, tenant_secret

log = logging.getLogger("toolout.webhooks")


@dataclass(frozen=True)
class Attempt:
    """The outcome of one delivery attempt: None when nothing is to be done again, else the delay before the next."""

    delivery: Delivery | None
    retry_in: float | None


def deliver_once(settings: Settings, jobs: JobStores, job_id: str, attempt: int) -> Attempt:
    """Attempt `attempt` (1-based) to POST the finished job to its callback URL."""
    try:
        job = jobs.records.get(job_id)
    except NotFound:
        return Attempt(None, None)  # expired or deleted meanwhile: nothing to tell
    if job.callback_url is None or settings.webhook_secret is None or not job.status.terminal:
        return Attempt(None, None)
    try:
        target = check_callback_url(job.callback_url, allow_private=settings.webhook_allow_private)
    except InvalidCallbackUrl as exc:
        log.warning("job %s: webhook not sent: %s", job_id, exc.message)
        return Attempt(None, None)
    body = payload(job.model_dump(mode="json"))
    secret = tenant_secret(settings.webhook_secret, job.tenant)
    result = deliver(target, body, secret, timeout=settings.webhook_timeout_seconds)
    return Attempt(result, _next_delay(settings, result, attempt, job_id))


def _next_delay(settings: Settings, result: Delivery, attempt: int, job_id: str) -> float | None:
    if result.delivered:
        log.info("job %s: webhook delivered (%s) on attempt %d", job_id, result.status, attempt)
        return None
    if not result.retryable or attempt >= settings.webhook_max_attempts:
        log.warning("job %s: webhook given up after attempt %d: %s %s", job_id, attempt, result.status, result.detail)
        return None
    return float(settings.webhook_retry_base_seconds * 2 ** (attempt - 1))


def wants_webhook(jobs: JobStores, job_id: str) -> bool:
    """Whether a job that just finished asked for a webhook (one read, only when a job ends)."""
    try:
        return jobs.records.get(job_id).callback_url is not None
    except NotFound:
        return False
