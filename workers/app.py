"""The Celery application and its reliability settings.

Choices, each for a known Celery+Redis trap:
- `acks_late` + `reject_on_worker_lost`: a task whose worker dies is redelivered, not lost.
- prefetch 1: a slow LLM call never holds other tasks hostage in a busy worker's buffer.
- timeouts ordered LLM < soft < hard < visibility (validated in Settings), so redelivery
  never races a task that is still legitimately running.
- separate queues: map, reduce and agent work can be scaled or prioritised independently,
  and reduce never waits behind a backlog of map tasks.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from infra.settings import get_settings
from infra.tokenizer_files import ensure_offline_encodings
from workers.broker_guard import guard_closed_transport

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ensure_offline_encodings()
guard_closed_transport()

QUEUES = ("extract", "map", "reduce", "agent")

TASK_ROUTES = {
    "toolout.start_extraction": {"queue": "extract"},
    "toolout.map_chunk": {"queue": "map"},
    "toolout.reduce_stage": {"queue": "reduce"},
    "toolout.reduce_group": {"queue": "reduce"},
    "toolout.read_grep": {"queue": "agent"},
}


def create_celery() -> Celery:
    settings = get_settings()
    celery = Celery("toolout", broker=settings.celery_broker_url, backend=settings.redis_url, include=["workers.tasks"])
    transport = {"visibility_timeout": settings.visibility_timeout_seconds}
    celery.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=settings.task_soft_time_limit_seconds,
        task_time_limit=settings.task_time_limit_seconds,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        task_routes=TASK_ROUTES,
        task_default_queue="extract",
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=settings.job_ttl_seconds,
        broker_connection_retry_on_startup=True,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        task_track_started=False,
        worker_hijack_root_logger=False,
    )
    return celery


app = create_celery()


@worker_ready.connect
@worker_process_init.connect
def _warm_up(**_: object) -> None:
    """Import litellm once at start-up (~5 s) instead of inside the first job's first LLM call."""
    from workers.runtime import runtime

    runtime().llm_ready()


@worker_ready.connect
def _start_watchdog(**_: object) -> None:
    """Every worker runs the watchdog loop; a Redis lock lets one of them act per tick."""
    from workers.runtime import runtime
    from workers.watchdog import start_watchdog

    start_watchdog(runtime())
