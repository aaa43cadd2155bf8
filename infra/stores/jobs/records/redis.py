"""Job records in Redis: a hash per job, changed in place; creating, updating and finishing are each one script.

A transition to a terminal state goes through `finish.lua`, so a late worker can never overwrite a job that was
already finished or canceled. The hash's fields are derived from `JobRecord` (`infra.redis.hash_codec`).

Cluster-ready: every key of a job is tagged `{<job id>}` and each script touches only those and the per-slot index
copies on the same slot (`infra.stores.jobs.redis_indexes`). What spans slots (the tenant's live jobs, the
session's job list) is a separate step, ordered so a crash between steps leaves only what a reader skips or
`TenantLiveJobs.prune` repairs.
"""

from __future__ import annotations

from typing import Any

from extraction.errors import NotFound
from infra.redis import keys
from infra.redis.client import redis_errors, text_list, text_map
from infra.redis.client import text as as_text
from infra.stores.jobs.model import MAX_REDUCE_LEVELS, JobRecord, JobStatus, ended
from infra.stores.jobs.records.base import JobRecords, admitted, check_finished, too_many_requests
from infra.stores.jobs.records.live import TenantLiveJobs
from infra.stores.jobs.redis_context import RedisJobContext, decode, flat, not_found
from infra.stores.jobs.scripts import CODEC, ScriptSet

SCRIPTS = ScriptSet("infra.stores.jobs.records", ("admit", "create", "finish", "update_live"))


class RedisJobRecords(JobRecords):
    """`JobRecords` on one Redis."""

    def __init__(self, context: RedisJobContext) -> None:
        context.register(SCRIPTS)
        self._c, self._r = context, context.r
        self._tenants = TenantLiveJobs(context.r, lambda keys_, args: context.run("admit", keys_, args))

    def create(self, record: JobRecord, *, max_live: int = 0) -> JobRecord:
        """Three steps, each on its own slot: the tenant admits the job (the cap, atomic), the session lists it,
        then the job is written and indexed as live. A crash after admission leaves the tenant an id with no
        job (`TenantLiveJobs` repairs it); after the listing, a session entry with no job (listings skip it,
        the session's deletion removes it). No crash leaves a live job that its tenant or session misses."""
        record = admitted(record, self._c.deadline)
        tenant, now = record.tenant, self._c.clock()
        if not self._tenants.admit(tenant, record.id, max_live, now) and not (
            self._tenants.prune(tenant, now) and self._tenants.admit(tenant, record.id, max_live, now)
        ):
            raise too_many_requests(tenant, max_live)
        self._write(record, self._c.owned_ttl, record.deadline_at)
        return record

    def create_finished(self, record: JobRecord) -> JobRecord:
        check_finished(record)
        self._write(record, self._c.ttl, "")
        self.notify_finished(record.id)
        return record

    def _write(self, record: JobRecord, ttl: int, deadline: float | str) -> None:
        """List the job in its session, then write it (indexed as live unless `deadline` is ''): two round trips,
        not one pipeline, since a cluster pipeline sends to each primary in its own order. `create.lua` writes
        the hash and its TTL together."""
        with redis_errors():
            self._r.zadd(keys.session_jobs(record.session_id), {record.id: record.created_at})
        job_keys = [keys.job(record.id), self._c.index.active.key_for(record.id)]
        self._c.run("create", job_keys, [record.id, ttl, deadline, *flat(CODEC.encode(record))])

    def count_live(self, tenant: str) -> int:
        return self._tenants.count(tenant)

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        with redis_errors():
            fields = text_map(self._r.hgetall(keys.job(job_id)))
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            raise not_found(job_id)
        return decode(fields)

    def update(self, job_id: str, **fields: Any) -> bool:
        return bool(self._c.run("update_live", [keys.job(job_id)], flat(CODEC.fields(**fields))) == 1)

    def finish(self, job_id: str, status: JobStatus, **fields: Any) -> bool:
        assert status.terminal, status
        values = CODEC.fields(status=status, finished_at=self._c.clock(), **fields)
        with redis_errors():
            tenant = as_text(self._r.hget(keys.job(job_id), "tenant") or "")
        owned = keys.job_keys(job_id, MAX_REDUCE_LEVELS)[1:]
        job_keys = [keys.job(job_id), self._c.index.active.key_for(job_id), *owned]
        outcome = self._c.run("finish", job_keys, [job_id, self._c.ttl, keys.jobs_ended(self._r), *flat(values)])
        if tenant:  # then it leaves its tenant's live jobs, whatever the script answered: an ended job holds no
            self._tenants.leave(tenant, [job_id])  # slot, and this repairs an earlier finish that crashed here
        if outcome == -1:
            raise not_found(job_id)
        if outcome == 1:
            self.notify_finished(job_id)
        return bool(outcome == 1)

    def is_terminal(self, job_id: str) -> bool:
        with redis_errors():
            status = self._r.hget(keys.job(job_id), "status")
        return ended(None if status is None else as_text(status))

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
        """Each job's keys and its active entry (one slot), its place in its session's list, then its place among
        its tenant's live jobs."""
        if not job_ids:
            return
        tenants = self._field_of(job_ids, "tenant")
        sessions = self._field_of(job_ids, "session_id")
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            for job_id, session_id in zip(job_ids, sessions, strict=True):
                pipe.execute_command("DEL", *keys.job_keys(job_id, MAX_REDUCE_LEVELS))  # type: ignore[no-untyped-call]
                pipe.zrem(self._c.index.active.key_for(job_id), job_id)
                if session_id is not None:
                    pipe.zrem(keys.session_jobs(session_id), job_id)
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

    def _field_of(self, job_ids: list[str], name: str) -> list[str | None]:
        with redis_errors():
            pipe = self._r.pipeline(transaction=False)
            for job_id in job_ids:
                pipe.hget(keys.job(job_id), name)
            return [None if found is None else as_text(found) for found in pipe.execute()]
