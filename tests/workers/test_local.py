"""The local dispatcher runs the very steps the Celery tasks run, so a job ends the same way on either."""

from __future__ import annotations

import pytest

from infra.stores.jobs import new_job
from tests.workers.conftest import needle_model, store_output
from tests.workers.job.test_pipeline import NEEDLE, document, drive
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin(
    "the embedded runner answers as the service's steps do, both on the same memory stores by design"
)


def test_the_embedded_run_answers_exactly_what_the_service_steps_answer(make_runtime) -> None:
    """Same steps, other executor: the chord-by-chord drive of the service and the thread pool agree."""
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000)
    output = store_output(rt, document())
    served, embedded = (
        rt.jobs.records.create(new_job(output, "database pool errors", "full-chunked")) for _ in range(2)
    )
    drive(rt, served.id)
    LocalDispatcher(rt, concurrency=4).run(embedded.id)
    a, b = rt.jobs.records.get(served.id), rt.jobs.records.get(embedded.id)
    assert a.result == b.result and NEEDLE in a.result
    assert (a.chunks_total, a.chunks_done, a.usage, a.mode_used) == (
        b.chunks_total,
        b.chunks_done,
        b.usage,
        b.mode_used,
    )
