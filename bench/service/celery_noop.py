"""Trivial tasks on toolout's own Celery app: the baseline of P1 in `bench/service/end_to_end.py`.

They are registered on a toolout worker's own Celery app (`workers.celery.main.build_worker`), so a worker started with
`python -m celery -A bench.service.celery_noop worker ...` serves toolout's tasks *and* these, with the
same broker, result backend, serializers, acks and prefetch settings. A chord of `noop` tasks
then costs exactly what Celery + Redis cost, and nothing of what toolout does inside a task.
"""

from __future__ import annotations

from infra.settings import get_settings
from workers.celery.main import build_worker

app, _ = build_worker(get_settings())  # an entry point for `celery -A`: building the app here is its job

__all__ = ["app", "noop", "noop_body"]


@app.task(name="bench.noop")
def noop(index: int) -> None:
    """Stands in for `toolout.map_chunk`: takes its place in the header, does nothing."""
    return None


@app.task(name="bench.noop_body")
def noop_body() -> None:
    """Stands in for `toolout.reduce_stage`: the chord body, run once every header task is done."""
    return None
