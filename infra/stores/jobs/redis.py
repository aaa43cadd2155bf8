"""The job store in Redis: a hash per job, changed in place; every promise of `JobStore` is one Lua script.

Transitions to a terminal state and every counted result go through the scripts in `lua/`, so a
redelivered task or a late worker can neither apply a chunk twice nor overwrite a job that was
already finished or canceled. The hash's fields are derived from `JobRecord` (`infra.redis.hash_codec`).

Cluster-ready: every key of a job is tagged `{<job id>}` and each script touches only those and the per-slot
index copies on the same slot (`infra.stores.jobs.redis_indexes`). What spans slots (the tenant's live jobs, the
session's job list) is a separate step, ordered so a crash between steps leaves only what a reader skips or
`TenantLiveJobs.prune` repairs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from extraction.errors import NotFound
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.redis import keys
from infra.redis.client import redis_errors, text_list, text_map
from infra.redis.client import text as as_text
from infra.stores.jobs.base import (
    HEDGE_COUNTS,
    JobStore,
    UsageTotal,
    admitted,
    check_finished,
    failure_stage,
    too_many_requests,
)
from infra.stores.jobs.model import (
    MAX_FALLBACKS_KEPT,
    MAX_REDUCE_LEVELS,
    JobRecord,
    JobStatus,
    ModelFallback,
    OverdueAction,
    ended,
)
from infra.stores.jobs.model_calls import ModelCall, ModelUsageTotal, job_model_usage, totals_from_fields
from infra.stores.jobs.redis_indexes import JobIndexes, TenantLiveJobs
from infra.stores.jobs.redis_traces import RedisTraces
from infra.stores.jobs.scripts import CODEC, SCRIPTS, TOTALS_SEPARATOR, script_source, usage_args
from infra.stores.jobs.traces import DEFAULT_TRACE_MAX_BYTES, TraceEvent


class RedisJobStore(JobStore):
    """`JobStore` on one Redis; safe to share between threads and processes."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        ttl_seconds: int,
        deadline_seconds: int,
        clock: Callable[[], float] = time.time,
        trace_max_bytes: int = DEFAULT_TRACE_MAX_BYTES,
    ) -> None:
        self._r = client
        self._traces = RedisTraces(client, trace_max_bytes)
        self._clock = clock
        self._ttl = ttl_seconds
        self._deadline = deadline_seconds
        self._lua = {name: client.register_script(script_source(name)) for name in SCRIPTS}
        self._index = JobIndexes(client)
        self._tenants = TenantLiveJobs(client, lambda keys_, args: self._run("admit", keys_, args))

    def _run(self, script: str, keys_: list[str], args: list[Any]) -> Any:
        with redis_errors():
            return self._lua[script](keys=keys_, args=args)

    # --- lifecycle ----------------------------------------------------------------------------
    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        """Three steps, each on its own slot: the tenant admits the job (the cap, atomic), the session lists it,
        then the job is written and indexed as live. A crash after admission leaves the tenant an id with no
        job (`TenantLiveJobs` repairs it); after the listing, a session entry with no job (listings skip it,
        the session's deletion removes it). No crash leaves a live job that its tenant or session misses."""
        record = admitted(record, self._deadline)
        tenant, now = record.tenant, self._clock()
        if not self._tenants.admit(tenant, record.id, max_live, now) and not (
            self._tenants.prune(tenant, now) and self._tenants.admit(tenant, record.id, max_live, now)
        ):
            raise too_many_requests(tenant, max_live)
        self._write(record, self._ttl + self._deadline, record.deadline_at)
        return record

    def create_finished(self, record: JobRecord) -> JobRecord:
        check_finished(record)
        self._write(record, self._ttl, "")
        self.notify_finished(record.id)
        return record

    def _write(self, record: JobRecord, ttl: int, deadline: float | str) -> None:
        """List the job in its session, then write it (indexed as live unless `deadline` is ''): two round trips,
        not one pipeline, since a cluster pipeline sends to each primary in its own order. `create.lua` writes
        the hash and its TTL together."""
        with redis_errors():
            self._r.zadd(keys.session_jobs(record.session_id), {record.id: record.created_at})
        job_keys = [keys.job(record.id), self._index.active.key_for(record.id)]
        self._run("create", job_keys, [record.id, ttl, deadline, *_flat(CODEC.encode(record))])

    def count_live(self, tenant: str) -> int:
        return self._tenants.count(tenant)

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        with redis_errors():
            fields = text_map(self._r.hgetall(keys.job(job_id)))
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return _decode(fields)

    def update(self, job_id: str, **fields: Any) -> bool:
        return bool(self._run("update_live", [keys.job(job_id)], _flat(CODEC.fields(**fields))) == 1)

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        assert status.terminal, status
        values = CODEC.fields(status=status, finished_at=self._clock(), **fields)
        with redis_errors():
            tenant = as_text(self._r.hget(keys.job(job_id), "tenant") or "")
        owned = keys.job_keys(job_id, MAX_REDUCE_LEVELS)[1:]
        job_keys = [keys.job(job_id), self._index.active.key_for(job_id), *owned]
        outcome = self._run("finish", job_keys, [job_id, self._ttl, keys.JOBS_ENDED, *_flat(values)])
        if tenant:  # then it leaves its tenant's live jobs, whatever the script answered: an ended job holds no
            self._tenants.leave(tenant, [job_id])  # slot, and this repairs an earlier finish that crashed here
        if outcome == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        if outcome == 1:
            self.notify_finished(job_id)
        return bool(outcome == 1)

    def is_terminal(self, job_id: str) -> bool:
        with redis_errors():
            status = self._r.hget(keys.job(job_id), "status")
        return ended(None if status is None else as_text(status))

    # --- faults ---------------------------------------------------------------------------------
    def reserve_llm_call(self, job_id: str, limit: int) -> bool:
        return bool(self._run("reserve_call", [keys.job(job_id)], [limit]) == 1)

    def retry_overdue(self, job_id: str, *, now: float, max_attempts: int) -> OverdueAction:
        args = [job_id, now, now + self._deadline, max_attempts]
        job_keys = [keys.job(job_id), self._index.active.key_for(job_id)]
        return OverdueAction(as_text(self._run("retry_overdue", job_keys, args)))

    def overdue(self, now: float | None = None, limit: int = 100) -> list[str]:
        """Read from every copy of the active-jobs index (one per slot in use)."""
        return self._index.overdue(self._clock() if now is None else now, limit)

    def count_active(self) -> int:
        return self._index.count_active()

    def add_task_ids(self, job_id: str, task_ids: list[str]) -> None:
        if not task_ids:
            return
        self._add_owned(job_id, keys.job_tasks(job_id), "SADD", task_ids)

    def task_ids(self, job_id: str) -> list[str]:
        with redis_errors():
            return sorted(text_list(self._r.smembers(keys.job_tasks(job_id))))

    def task_started(self, job_id: str, delivery: str) -> int:
        return int(self._run("count_start", [keys.job(job_id), keys.job_deliveries(job_id)], [delivery, 1]))

    def task_ended(self, job_id: str, delivery: str) -> None:
        self._run("count_start", [keys.job(job_id), keys.job_deliveries(job_id)], [delivery, -1])

    def claim_watchdog_tick(self, owner: str, seconds: float) -> bool:
        with redis_errors():
            return bool(self._r.set(keys.WATCHDOG_LOCK, owner, nx=True, px=max(1, int(seconds * 1000))))

    # --- fan-in -----------------------------------------------------------------------------------
    def expect_parts(self, job_id: str, level: int, expected: int, then: str) -> None:
        if self._add_owned(
            job_id, keys.job_fanin(job_id), "HSET", [f"{level}:expected", expected, f"{level}:then", then]
        ):
            return
        raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)

    def _add_owned(self, job_id: str, key: str, command: str, args: list[Any]) -> bool:
        """Write to a key the job owns only while the job exists (False: it is gone, nothing was written)."""
        return bool(self._run("add_owned", [keys.job(job_id), key], [self._ttl + self._deadline, command, *args]) == 1)

    def settle_level(self, job_id: str, level: int, *, by: str | None = None) -> str | None:
        then = self._run("settle_level", *self._settle_call(job_id, level, by))
        return None if then is None else as_text(then)

    @staticmethod
    def _settle_call(job_id: str, level: int, by: str | None) -> tuple[list[str], list[Any]]:
        outputs = keys.job_chunks(job_id) if level == 0 else keys.job_reduce(job_id, level)
        return [keys.job(job_id), outputs, keys.job_failures(job_id), keys.job_fanin(job_id)], [level, by or ""]

    # --- results, counted once ----------------------------------------------------------------
    def record_chunk(self, job_id: str, index: int, text: str, usage: Usage) -> bool:
        return self._record(keys.job_chunks(job_id), job_id, (0, index), text, usage, counter="chunks_done")

    def chunk_output(self, job_id: str, index: int) -> str | None:
        with redis_errors():
            found = self._r.hget(keys.job_chunks(job_id), str(index))
        return None if found is None else as_text(found)

    def begin_map(self, job_id: str, index: int, call_limit: int) -> tuple[JobRecord, str | None, bool]:
        """One round trip instead of three: in a busy worker each round trip is a GIL hand-off (~10 ms per
        32-chunk job when the model answers at once)."""

        def reads(pipe: redis.client.Pipeline) -> None:
            pipe.hgetall(keys.job(job_id))
            pipe.hget(keys.job_chunks(job_id), str(index))
            self._evalsha(pipe, "reserve_call", [keys.job(job_id)], [call_limit])

        fields, found, reserved = self._batch(reads, "reserve_call")
        if not fields:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return _decode(text_map(fields)), None if found is None else as_text(found), reserved == 1

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
        """The map's model calls counted, its trace added, its part recorded, its level settled: one round
        trip, the scripts run in this order (the settle sees the part; a job's per-model counts are complete
        before a map hands its reduce on)."""

        def writes(pipe: redis.client.Pipeline) -> None:
            for call in calls:
                self._evalsha(pipe, "count_model_call", *self._count_call(job_id, call))
            if trace:
                self._evalsha(pipe, "add_trace", *self._traces.call(job_id, trace))
            self._evalsha(
                pipe,
                "record_part",
                *self._record_call(keys.job_chunks(job_id), job_id, (0, index), text, usage, "chunks_done"),
            )
            self._evalsha(pipe, "settle_level", *self._settle_call(job_id, 0, by))

        *_, outcome, then = self._batch(writes, "count_model_call", "add_trace", "record_part", "settle_level")
        if outcome == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return None if then is None else as_text(then)

    def _batch(self, commands: Callable[[redis.client.Pipeline], None], *scripts: str) -> list[Any]:
        """`commands` in one round trip. Scripts go by plain EVALSHA (redis-py's scripts in a pipeline ask
        SCRIPT EXISTS first: one more round trip every time); when Redis lost them (a restart, SCRIPT FLUSH)
        they are loaded and the whole batch runs again, which every batch here allows: its reads change
        nothing and each script applies its effect once."""
        with redis_errors():
            try:
                return self._run_batch(commands)
            except redis.exceptions.NoScriptError:
                for name in scripts:
                    self._r.script_load(self._lua[name].script)
                return self._run_batch(commands)

    def _run_batch(self, commands: Callable[[redis.client.Pipeline], None]) -> list[Any]:
        pipe = self._r.pipeline(transaction=False)
        commands(pipe)
        return list(pipe.execute())

    def _evalsha(self, pipe: redis.client.Pipeline, script: str, keys_: list[str], args: list[Any]) -> None:
        """Spelled as a raw command: a cluster pipeline refuses `pipe.evalsha` but routes EVALSHA by its keys."""
        pipe.execute_command("EVALSHA", self._lua[script].sha, len(keys_), *keys_, *args)  # type: ignore[no-untyped-call]

    def chunk_outputs(self, job_id: str) -> dict[int, str]:
        return self._parts(keys.job_chunks(job_id))

    def record_reduce(self, job_id: str, level: int, group: int, text: str, usage: Usage) -> bool:
        return self._record(keys.job_reduce(job_id, level), job_id, (level, group), text, usage, counter="")

    def record_failure(self, job_id: str, failure: FailedRange, usage: Usage | None = None) -> bool:
        parts = keys.job_chunks(job_id) if failure.level == 0 else keys.job_reduce(job_id, failure.level)
        indexes = [self._index.chunks_failed.key_for(job_id), self._index.usage.key_for(job_id)]
        job_keys = [keys.job(job_id), parts, keys.job_failures(job_id), *indexes]
        args = [
            failure.index,
            _failure_field(failure.level, failure.index),
            failure.model_dump_json(),
            len(failure.chunks),
            failure_stage(failure.level),
            self._ttl + self._deadline,
            *usage_args(usage or Usage()),
        ]
        outcome = self._run("record_failure", job_keys, args)
        if outcome == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return bool(outcome == 1)

    def failed_chunk_counts(self) -> dict[str, int]:
        counts = self._index.summed(self._index.chunks_failed)
        return {stage: int(counts.get(stage, 0)) for stage in ("map", "reduce")}

    def reserve_hedge(self, job_id: str, limit: int) -> bool:
        return bool(self._run("reserve_hedge", [keys.job(job_id)], [limit]) == 1)

    def count_hedges(self, job_id: str, sent: int, won: bool, cost: Usage) -> None:
        args = [sent, int(won), cost.input_tokens, cost.output_tokens]
        self._run("count_hedges", [keys.job(job_id), self._index.hedges.key_for(job_id)], args)

    def hedge_totals(self) -> dict[str, int]:
        counts = self._index.summed(self._index.hedges)
        return {name: int(counts.get(name, 0)) for name in HEDGE_COUNTS}

    def reduce_output(self, job_id: str, level: int, group: int) -> str | None:
        with redis_errors():
            found = self._r.hget(keys.job_reduce(job_id, level), str(group))
        return None if found is None else as_text(found)

    def reduce_outputs(self, job_id: str, level: int) -> dict[int, str]:
        return self._parts(keys.job_reduce(job_id, level))

    def _parts(self, key: str) -> dict[int, str]:
        with redis_errors():
            return {int(k): v for k, v in text_map(self._r.hgetall(key)).items()}

    def add_usage(self, job_id: str, usage: Usage) -> None:
        self._run("add_usage", [keys.job(job_id), self._index.usage.key_for(job_id)], usage_args(usage))

    def usage_totals(self) -> list[UsageTotal]:
        fields = self._index.summed(self._index.usage)
        owners: dict[tuple[str, str], dict[str, str]] = {}
        for field, value in fields.items():
            tenant, model, name = field.rsplit(TOTALS_SEPARATOR, 2)
            owners.setdefault((tenant, model), {})[name] = value
        return [
            UsageTotal(tenant=tenant, model=model, usage=Usage.model_validate(counts))
            for (tenant, model), counts in sorted(owners.items())
        ]

    def add_trace(self, job_id: str, events: Sequence[str]) -> None:
        if events:
            self._run("add_trace", *self._traces.call(job_id, events))

    def trace(self, job_id: str, after: int = 0) -> list[TraceEvent]:
        return self._traces.read(job_id, after)

    def add_agent_progress(self, job_id: str, *, turns: int = 0, tool_calls: int = 0) -> None:
        counts = ["agent_turns", turns, "agent_tool_calls", tool_calls]
        if self._run("add_progress", [keys.job(job_id)], counts) == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)

    def count_model_call(
        self, job_id: str, stage: str, model: str, usage: Usage, fallback: ModelFallback | None = None
    ) -> None:
        self._run("count_model_call", *self._count_call(job_id, ModelCall(stage, model, usage, fallback)))

    def _count_call(self, job_id: str, call: ModelCall) -> tuple[list[str], list[Any]]:
        noted = call.fallback.model_dump_json() if call.fallback is not None else ""
        args = [call.stage, call.model, *usage_args(call.usage), noted, MAX_FALLBACKS_KEPT]
        return [keys.job(job_id), self._index.model_usage.key_for(job_id)], args

    def model_usage_totals(self) -> list[ModelUsageTotal]:
        return totals_from_fields(self._index.summed(self._index.model_usage))

    def note_waiting(self, job_id: str, delta: int, seconds: float = 0.0) -> None:
        self._run("note_waiting", [keys.job(job_id)], [delta, repr(seconds)])

    def _record(self, key: str, job_id: str, part: tuple[int, int], text: str, usage: Usage, *, counter: str) -> bool:
        outcome = self._run("record_part", *self._record_call(key, job_id, part, text, usage, counter))
        if outcome == -1:
            raise NotFound(f"no extraction job {job_id!r}", job_id=job_id)
        return bool(outcome == 1)

    def _record_call(
        self, key: str, job_id: str, part: tuple[int, int], text: str, usage: Usage, counter: str
    ) -> tuple[list[str], list[Any]]:
        level, index = part
        job_keys = [keys.job(job_id), key, keys.job_failures(job_id), self._index.usage.key_for(job_id)]
        return job_keys, [
            index,
            text,
            counter,
            self._ttl + self._deadline,
            _failure_field(level, index),
            *usage_args(usage),
        ]

    # --- queries ------------------------------------------------------------------------------
    def list_for_session(self, session_id: str, tenant: str | None = None) -> list[JobRecord]:
        with redis_errors():
            ids = text_list(self._r.zrange(keys.session_jobs(session_id), 0, -1))
        return [job for job in (self._find(job_id, tenant) for job_id in ids) if job is not None]

    def _find(self, job_id: str, tenant: str | None) -> JobRecord | None:
        try:
            return self.get(job_id, tenant)
        except NotFound:
            return None

    def delete(self, job_ids: list[str]) -> None:
        """Each job's keys and its active entry (one slot), then its place among its tenant's live jobs."""
        if not job_ids:
            return
        tenants = self._tenants_of(job_ids)
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            for job_id in job_ids:
                pipe.execute_command("DEL", *keys.job_keys(job_id, MAX_REDUCE_LEVELS))  # type: ignore[no-untyped-call]
                pipe.zrem(self._index.active.key_for(job_id), job_id)
            for tenant in {tenant for tenant in tenants if tenant is not None}:
                ids = [job_id for job_id, owner in zip(job_ids, tenants, strict=True) if owner == tenant]
                self._tenants.leave(tenant, ids, pipe)
            pipe.execute()

    def delete_session_jobs(self, session_id: str) -> None:
        with redis_errors():
            ids = text_list(self._r.zrange(keys.session_jobs(session_id), 0, -1))
        self.delete(ids)
        with redis_errors():
            self._r.delete(keys.session_jobs(session_id))

    def _tenants_of(self, job_ids: list[str]) -> list[str | None]:
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            for job_id in job_ids:
                pipe.hget(keys.job(job_id), "tenant")
            return [None if tenant is None else as_text(tenant) for tenant in pipe.execute()]


def _decode(fields: dict[str, str]) -> JobRecord:
    """The record, with its per-model counters (kept as fields of their own so Lua can add to them)."""
    record = CODEC.decode(fields)
    return record.model_copy(update={"model_usage": job_model_usage(fields)})


def _failure_field(level: int, index: int) -> str:
    """The part's field in the failures hash: level 0 for chunks, n >= 1 for reduce groups."""
    return f"{level}:{index}"


def _flat(fields: dict[str, str]) -> list[str]:
    return [item for pair in fields.items() for item in pair]
