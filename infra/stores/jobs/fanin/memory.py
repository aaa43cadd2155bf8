"""Fan-in in process memory: the same promises as Redis, kept by the shared state's one lock."""

from __future__ import annotations

from collections.abc import Sequence

from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.stores.jobs.accounting.base import JobAccounting
from infra.stores.jobs.fanin.base import JobFanIn, failure_stage
from infra.stores.jobs.memory_state import MAP_LEVEL, MemoryJobState, with_fields
from infra.stores.jobs.model import JobRecord
from infra.stores.jobs.model_calls import ModelCall
from infra.stores.jobs.traces.base import JobTraces


class MemoryJobFanIn(JobFanIn):
    """`JobFanIn` over the in-memory jobs; a map's end also counts its calls and trace (`accounting`, `traces`)."""

    def __init__(self, state: MemoryJobState, accounting: JobAccounting, traces: JobTraces) -> None:
        self._s, self._accounting, self._traces = state, accounting, traces

    def expect_parts(self, job_id: str, level: int, expected: int, then: str) -> None:
        with self._s.lock:
            self._s.existing(job_id).fanin[level] = (expected, then)

    def settle_level(self, job_id: str, level: int, *, by: str | None = None) -> str | None:
        with self._s.lock:
            job = self._s.job(job_id)
            if job is None or job.record.status.terminal or level not in job.fanin:
                return None
            expected, then = job.fanin[level]
            at = MAP_LEVEL if level == 0 else level
            settled = sum(1 for part, _ in job.parts if part == at) + sum(1 for lvl, _ in job.failed if lvl == level)
            claim = (job.record.attempts, level)
            holder = job.fanin_sent.get(claim)
            if settled < expected or (holder is not None and (not by or holder != by)):
                return None
            job.fanin_sent[claim] = by or ""
            return then

    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        return self._record(job_id, (MAP_LEVEL, index), text, usage, count_chunk=True)

    def chunk_output(self, job_id: str, index: int) -> str | None:
        return self.chunk_outputs(job_id).get(index)

    def chunk_outputs(self, job_id: str) -> dict[int, str]:
        return self._level(job_id, MAP_LEVEL)

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        return self._record(job_id, (level, group), text, usage, count_chunk=False)

    def reduce_output(self, job_id: str, level: int, group: int) -> str | None:
        return self.reduce_outputs(job_id, level).get(group)

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]:
        return self._level(job_id, level)

    def record_failure(self, job_id: str, failure: FailedRange, usage: Usage | None = None) -> bool:
        part = (MAP_LEVEL if failure.level == 0 else failure.level, failure.index)
        with self._s.lock:
            job = self._s.existing(job_id)
            if job.record.status.terminal or part in job.parts or _failure_key(part) in job.failed:
                return False
            job.failed.add(_failure_key(part))
            lost = len(failure.chunks)
            update = {
                "failed_ranges": [*job.record.failed_ranges, failure],
                "chunks_failed": job.record.chunks_failed + lost,
                "usage": job.record.usage + (usage or Usage()),
            }
            job.record = with_fields(job.record, update)
            self._s.total(job.record, usage or Usage())
            self._s.failed_chunks[failure_stage(failure.level)] += lost
            return True

    def begin_map(self, job_id: str, index: int, call_limit: int) -> tuple[JobRecord, str | None, bool]:
        """Three steps, as nothing here is a round trip."""
        record = self._s.read(job_id)
        return record, self.chunk_output(job_id, index), self._accounting.reserve_llm_call(job_id, call_limit)

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
        for call in calls:
            self._accounting.count_model_call(job_id, call.stage, call.model, call.usage, call.fallback)
        if trace:
            self._traces.add_trace(job_id, trace)
        self.record_chunk(job_id, index, text, usage)
        return self.settle_level(job_id, 0, by=by)

    def _record(self, job_id: str, part: tuple[int, int], text: str, usage: Usage, *, count_chunk: bool) -> bool:
        with self._s.lock:
            job = self._s.existing(job_id)
            if part in job.parts or _failure_key(part) in job.failed:
                return False
            job.parts[part] = text
            job.record.chunks_done += int(count_chunk)
            self._s.spend(job, usage)
            return True

    def _level(self, job_id: str, level: int) -> dict[int, str]:
        with self._s.lock:
            job = self._s.job(job_id)
            parts = job.parts if job is not None else {}
            return {index: text for (at, index), text in parts.items() if at == level}


def _failure_key(part: tuple[int, int]) -> tuple[int, int]:
    """A part's key in `MemoryJob.failed`: chunks are level 0 there (-1 among the outputs)."""
    level, index = part
    return (0 if level == MAP_LEVEL else level, index)
