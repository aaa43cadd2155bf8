"""Fan-in: a job's map and reduce parts, each settled once, and the step after a level, handed out once per attempt.

Every implementation keeps these promises, which `tests/infra/stores/test_job_fanin_contract.py` checks on each:

* a map or reduce output is stored and counted once, however often its task is delivered;
* a part (a chunk, or a reduce group) is settled once: as an output or as a failure, never both,
  so a part that failed is never also counted as done, nor counted as failed twice;
* once every part of a level is settled, the level's next step goes to one caller per attempt.

What a part spent is counted with it, on the job and in the accounting's store-wide totals, in the same step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.stores.jobs.model import JobRecord
from infra.stores.jobs.model_calls import ModelCall


class JobFanIn(Protocol):
    """The parts of jobs and their levels' next steps; methods raise `NotFound` / `BackendUnavailable`."""

    def expect_parts(self, job_id: str, level: int, expected: int, then: str) -> None:
        """Before a level's parts are sent: once `expected` parts of `level` are settled (output or failure),
        `settle_level` hands `then` (the next step, opaque here) to one caller per attempt."""
        ...

    def settle_level(self, job_id: str, level: int, *, by: str | None = None) -> str | None:
        """Called after each part of `level` settles: the `then` of `expect_parts` for the one caller that
        finds every part settled in the job's current attempt; None for everyone else, or once the job ended.

        Keyed by attempt, so a job the watchdog re-submits can send its next step again (a twin of the
        first attempt's, if that one was only slow: every step is idempotent).

        `by` is the calling task's id. The caller that got the step runs it in its own task (a reduce stage
        runs inside the map task that completed level 0, `workers.celery.tasks.run_next`), so a worker killed there
        takes the step down with it, and its message comes back (RabbitMQ redelivers it at once) under the
        same id: that caller, and only that one, is handed the step again. Without it the job would wait
        for the watchdog, its deadline. An anonymous caller (`by` None) is never handed a step twice.
        """
        ...

    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        """Store a map output and count it; a second delivery of the same chunk, or a chunk already
        recorded as failed, counts nothing (False)."""
        ...

    def chunk_output(self, job_id: str, index: int) -> str | None: ...

    def chunk_outputs(self, job_id: str) -> dict[int, str]: ...

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        """Store a reduce output (group `group` of level `level`) once; its usage is counted with it.
        Refused (False) for a group already recorded as failed."""
        ...

    def reduce_output(self, job_id: str, level: int, group: int) -> str | None: ...

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]: ...

    def record_failure(self, job_id: str, failure: FailedRange, usage: Usage | None = None) -> bool:
        """Record once that a part could not be read: a chunk (`failure.level` 0, its index) or a
        reduce group (level n >= 1, its group index), with the `usage` its failed attempts spent.

        False, changing nothing, when the job ended or the part is already settled (its output is
        stored, or its failure was recorded by a twin or redelivered task). Otherwise the failure
        joins `failed_ranges`, its chunks are added to `chunks_failed` and to the store-wide count
        behind `JobAccounting.failed_chunk_counts`, and its usage to the job's, in one atomic step.
        """
        ...

    # A map task's two visits to the store, fused so each is one round trip where the store can.
    def begin_map(self, job_id: str, index: int, call_limit: int) -> tuple[JobRecord, str | None, bool]:
        """What a map task reads as it starts: the job, chunk `index`'s stored output (None: not yet), and
        whether one model call was reserved for it (`JobAccounting.reserve_llm_call`; a map that then finds it
        has nothing to do leaves that call unused, which only a redelivered map does)."""
        ...

    def record_chunk_and_settle(
        self,
        job_id: str,
        index: int,
        text: str,
        usage: Usage,
        calls: Sequence[ModelCall] = (),
        *,
        by: str | None = None,
        trace: Sequence[str] = (),
    ) -> str | None:
        """`JobAccounting.count_model_call` for each of `calls` (the map's own, counted whatever becomes of its
        output), `JobTraces.add_trace`, `record_chunk`, then `settle_level(job_id, 0, by=by)`: what a map task
        does as it ends."""
        ...


def failure_stage(level: int) -> str:
    """Where a part was lost: `map` for a chunk's own call, `reduce` for a reduce group."""
    return "map" if level == 0 else "reduce"
