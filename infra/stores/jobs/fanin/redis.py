"""Fan-in in Redis: a hash of outputs per level, a hash of failures and the fan-in hash, all on the job's slot.

Every counted result goes through `record_part.lua` or `record_failure.lua`, so a redelivered task can never
apply a part twice; `settle_level.lua` is our own chord counter. A map task's start and end are each one round
trip (`begin_map`, `record_chunk_and_settle`), running the accounting's and the traces' scripts beside its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.redis import keys
from infra.redis.client import redis_errors, text_map
from infra.redis.client import text as as_text
from infra.stores.jobs.accounting.redis import RedisJobAccounting
from infra.stores.jobs.fanin.base import JobFanIn, failure_stage
from infra.stores.jobs.model import JobRecord
from infra.stores.jobs.model_calls import ModelCall
from infra.stores.jobs.redis_context import RedisJobContext, decode, failure_field, not_found
from infra.stores.jobs.scripts import ScriptSet, usage_args
from infra.stores.jobs.traces.redis import RedisJobTraces

SCRIPTS = ScriptSet("infra.stores.jobs.fanin", ("record_part", "record_failure", "settle_level"))

Call = tuple[list[str], list[Any]]
"""A script's keys and arguments."""


class RedisJobFanIn(JobFanIn):
    """`JobFanIn` on one Redis; the map's round trips also run `accounting`'s and `traces`' scripts."""

    def __init__(self, context: RedisJobContext, accounting: RedisJobAccounting, traces: RedisJobTraces) -> None:
        context.register(SCRIPTS)
        self._c, self._accounting, self._traces = context, accounting, traces

    def expect_parts(self, job_id: str, level: int, expected: int, then: str) -> None:
        fields = [f"{level}:expected", expected, f"{level}:then", then]
        if not self._c.add_owned(job_id, keys.job_fanin(job_id), "HSET", fields):
            raise not_found(job_id)

    def settle_level(self, job_id: str, level: int, *, by: str | None = None) -> str | None:
        then = self._c.run("settle_level", *_settle_call(job_id, level, by))
        return None if then is None else as_text(then)

    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        return self._record(keys.job_chunks(job_id), job_id, (0, index), text, usage, counter="chunks_done")

    def chunk_output(self, job_id: str, index: int) -> str | None:
        return self._part(keys.job_chunks(job_id), index)

    def chunk_outputs(self, job_id: str) -> dict[int, str]:
        return self._parts(keys.job_chunks(job_id))

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        return self._record(keys.job_reduce(job_id, level), job_id, (level, group), text, usage, counter="")

    def reduce_output(self, job_id: str, level: int, group: int) -> str | None:
        return self._part(keys.job_reduce(job_id, level), group)

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]:
        return self._parts(keys.job_reduce(job_id, level))

    def record_failure(self, job_id: str, failure: FailedRange, usage: Usage | None = None) -> bool:
        parts = keys.job_chunks(job_id) if failure.level == 0 else keys.job_reduce(job_id, failure.level)
        indexes = [self._c.index.chunks_failed.key_for(job_id), self._c.index.usage.key_for(job_id)]
        job_keys = [keys.job(job_id), parts, keys.job_failures(job_id), *indexes]
        args = [
            failure.index,
            failure_field(failure.level, failure.index),
            failure.model_dump_json(),
            len(failure.chunks),
            failure_stage(failure.level),
            self._c.owned_ttl,
            *usage_args(usage or Usage()),
        ]
        outcome = self._c.run("record_failure", job_keys, args)
        if outcome == -1:
            raise not_found(job_id)
        return bool(outcome == 1)

    def begin_map(self, job_id: str, index: int, call_limit: int) -> tuple[JobRecord, str | None, bool]:
        """One round trip instead of three: in a busy worker each round trip is a GIL hand-off, which
        adds up over a job's maps when the model answers at once."""

        reads = [
            ("HGETALL", keys.job(job_id)),
            ("HGET", keys.job_chunks(job_id), str(index)),
            self._c.script("reserve_call", *self._accounting.reserve_call_script(job_id, call_limit)),
        ]
        fields, found, reserved = self._c.batch(reads)
        if not fields:
            raise not_found(job_id)
        return decode(text_map(fields)), None if found is None else as_text(found), reserved == 1

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
        """The map's model calls counted, its trace added, its part recorded, its level settled: one round trip
        rather than one per script, for the same GIL hand-offs `begin_map` saves. The scripts run in this order (the
        settle sees the part; a job's per-model counts are complete before a map hands its reduce on)."""
        record = self._record_call(keys.job_chunks(job_id), job_id, (0, index), text, usage, "chunks_done")

        writes = [
            *(self._c.script("count_model_call", *self._accounting.count_call_script(job_id, call)) for call in calls),
            *([self._c.script("add_trace", *self._traces.add_script(job_id, trace))] if trace else []),
            self._c.script("record_part", *record),
            self._c.script("settle_level", *_settle_call(job_id, 0, by)),
        ]
        *_, outcome, then = self._c.batch(writes)
        if outcome == -1:
            raise not_found(job_id)
        return None if then is None else as_text(then)

    def _record(self, key: str, job_id: str, part: tuple[int, int], text: str, usage: Usage, *, counter: str) -> bool:
        outcome = self._c.run("record_part", *self._record_call(key, job_id, part, text, usage, counter))
        if outcome == -1:
            raise not_found(job_id)
        return bool(outcome == 1)

    def _record_call(self, key: str, job_id: str, part: tuple[int, int], text: str, usage: Usage, counter: str) -> Call:
        level, index = part
        job_keys = [keys.job(job_id), key, keys.job_failures(job_id), self._c.index.usage.key_for(job_id)]
        failure = failure_field(level, index)
        return job_keys, [index, text, counter, self._c.owned_ttl, failure, *usage_args(usage)]

    def _part(self, key: str, index: int) -> str | None:
        with redis_errors():
            found = self._c.r.hget(key, str(index))
        return None if found is None else as_text(found)

    def _parts(self, key: str) -> dict[int, str]:
        with redis_errors():
            return {int(k): v for k, v in text_map(self._c.r.hgetall(key)).items()}


def _settle_call(job_id: str, level: int, by: str | None) -> Call:
    outputs = keys.job_chunks(job_id) if level == 0 else keys.job_reduce(job_id, level)
    return [keys.job(job_id), outputs, keys.job_failures(job_id), keys.job_fanin(job_id)], [level, by or ""]
