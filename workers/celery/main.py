"""The worker process's entry point: the one place that builds a worker and applies process-wide patches.

`toolout worker` calls `run_worker`; nothing here runs at import time.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from celery import Celery
from celery.signals import setup_logging, worker_ready

from extraction.documents.tokens import token_byte_lengths
from extraction.tokenizer_files import ensure_offline_encodings
from infra import tracing
from infra.logs import configure_logging
from infra.process import late_imports
from infra.process.warm_up import later
from infra.settings import Settings
from infra.wiring.stores import open_stores
from workers.celery.app import create_celery
from workers.celery.broker_clients import share_channel_clients
from workers.celery.broker_guard import guard_closed_transport
from workers.celery.dispatch import CeleryDispatcher
from workers.celery.service_tasks import register_service_tasks
from workers.celery.tasks import register_tasks
from workers.job.runtime import Runtime, build_runtime
from workers.watchdog import start_watchdog


def build_worker(settings: Settings) -> tuple[Celery, Runtime]:
    """The worker's Celery app with toolout's tasks registered on it, and the runtime they share."""
    ensure_offline_encodings()  # tiktoken must not try to download its BPE files
    guard_closed_transport()
    share_channel_clients()
    tracing.setup("toolout-worker")  # only with OTEL_EXPORTER_OTLP_ENDPOINT set; before the Redis clients exist
    rt = build_runtime(settings, open_stores(settings))
    celery = create_celery(settings)
    register_tasks(celery, rt)
    register_service_tasks(celery, rt)
    dispatcher = CeleryDispatcher(celery, rt.jobs)
    rt.jobs.records.listen_finished(dispatcher.finished)  # webhooks: queued when a job ends, never awaited

    def on_ready(**_: Any) -> None:
        """Start the watchdog once there are workers, and the warm-ups in the background, a few seconds on
        (`infra.process.warm_up`): a handler that blocks here holds off the worker's first ping replies, and so the
        readiness of a stack, for seconds of CPU the other processes need to start."""
        start_watchdog(rt, dispatcher.submit)
        table = functools.partial(token_byte_lengths, settings.tokenizer_encoding)
        later("toolout-warm-up", _start_spare, rt.llm_ready, rt.map_limits, table, late_imports.watch)

    worker_ready.connect(on_ready, weak=False)
    return celery, rt


def _start_spare() -> None:
    """A spare DuckDB child (slow to start: a preload's load takes it), so the first load does not wait, and the
    query step's modules, which the first preload or query job would otherwise import (hours in, a late import can
    step RSS up: `infra.process.late_imports`). The other warm-ups (litellm with its hedged path, the map
    model's limits, the tokenizer's token-length table: chunk planning then decodes no token)
    keep the same aim: paid before the first job, and `late_imports.watch` reports what still comes later."""
    from infra.query.process import start_spare  # DuckDB: imported once the worker is up
    from workers.job import query  # noqa: F401 - imported for its modules' sake

    start_spare()


CELERY_TASK_LOGGERS = ("celery.worker.strategy", "celery.app.trace")
"""Where Celery logs "Task … received" and "Task … succeeded in …" at INFO: two lines per task."""


def quiet_celery_task_logs() -> None:
    """Before the worker starts: Celery decides once, as it builds each task's tracer, whether to log."""
    for name in CELERY_TASK_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def run_worker(settings: Settings, argv: list[str], *, task_logs: bool = False) -> None:
    """Run a Celery worker (`argv` as for `celery worker`) until it is stopped.

    Celery's two INFO lines per task are off unless `task_logs`: a big job is one task per chunk and more, and
    formatting and writing them takes GIL time a busy worker's maps need (docs/performance.md). toolout
    logs each job's mode choice and end itself, and /metrics counts what the tasks did.
    """
    if not task_logs:
        quiet_celery_task_logs()
    if configure_logging(settings):
        setup_logging.connect(lambda **_: None, weak=False)  # Celery leaves the JSON root handler alone
    celery, _ = build_worker(settings)
    celery.worker_main(["worker", *argv])
