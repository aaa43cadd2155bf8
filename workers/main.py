"""The worker process's entry point: the one place that builds a worker and applies process-wide patches.

`toolout worker` calls `run_worker`; nothing here runs at import time.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from celery.signals import worker_ready

from extraction.tokens import token_byte_lengths
from infra.settings import Settings
from infra.stores import open_stores
from infra.tokenizer_files import ensure_offline_encodings
from workers.broker_clients import share_channel_clients
from workers.broker_guard import guard_closed_transport
from workers.celery_app import create_celery
from workers.celery_dispatch import CeleryDispatcher
from workers.runtime import Runtime, build_runtime
from workers.tasks import register_tasks
from workers.watchdog import start_watchdog


def build_worker(settings: Settings) -> tuple[Celery, Runtime]:
    """The worker's Celery app with toolout's tasks registered on it, and the runtime they share."""
    ensure_offline_encodings()  # tiktoken must not try to download its BPE files
    guard_closed_transport()
    share_channel_clients()
    rt = build_runtime(settings, open_stores(settings))
    celery = create_celery(settings)
    register_tasks(celery, rt)
    dispatcher = CeleryDispatcher(celery, rt.jobs)
    rt.jobs.listen_finished(dispatcher.finished)  # webhooks: queued when a job ends, never awaited

    def on_ready(**_: Any) -> None:
        """Import litellm now (~5 s) and build the tokenizer's token-length table (~0.1 s: chunk planning
        then decodes no token, half its time), not in the first job; start the watchdog once there are workers."""
        rt.llm_ready()
        token_byte_lengths(settings.tokenizer_encoding)
        start_watchdog(rt, dispatcher.submit)

    worker_ready.connect(on_ready, weak=False)
    return celery, rt


def run_worker(settings: Settings, argv: list[str]) -> None:
    """Run a Celery worker (`argv` as for `celery worker`) until it is stopped."""
    celery, _ = build_worker(settings)
    celery.worker_main(["worker", *argv])
