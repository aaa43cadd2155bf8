"""Sessions and stored-output records in Redis.

A session groups the outputs (and jobs) of one agent conversation; deleting it, or leaving it
idle past its TTL, removes its records here and its blobs in the blob store (see `api/lifecycle.py`).
"""

from __future__ import annotations

import json
import time
import uuid

import redis
from pydantic import BaseModel, Field

from extraction.errors import NotFound
from extraction.stats import DocumentStats
from infra import keys
from infra.redis_client import redis_errors

DEFAULT_TENANT = "dev"


class SessionRecord(BaseModel):
    """One agent session: the unit of ownership and cleanup."""

    id: str
    tenant: str = DEFAULT_TENANT
    created_at: float
    last_used_at: float


class OutputRecord(BaseModel):
    """What we know of one stored tool output; the bytes live in the blob store under `blob_key`."""

    handle: str
    session_id: str
    tenant: str = DEFAULT_TENANT
    tool_name: str = "unknown"
    tool_args: str = "{}"
    content_type: str = "text/plain"
    stats: DocumentStats
    blob_key: str
    index_key: str
    lines_key: str | None = None
    created_at: float = Field(default_factory=time.time)


def blob_key(session_id: str, handle: str) -> str:
    """Where the raw output lives: `sessions/<session>/<handle>`."""
    return f"sessions/{session_id}/{handle}"


def session_prefix(session_id: str) -> str:
    return f"sessions/{session_id}/"


def new_id() -> str:
    """Session ids and handles are random UUID4s: unguessable, and valid blob-key segments."""
    return str(uuid.uuid4())


class RecordStore:
    """Sessions and output records; every method raises `NotFound` or `BackendUnavailable`, never redis errors."""

    def __init__(self, client: redis.Redis, *, session_ttl_seconds: int) -> None:
        self._r = client
        self._ttl = session_ttl_seconds

    # --- sessions -----------------------------------------------------------------------------
    def create_session(self, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        now = time.time()
        record = SessionRecord(id=new_id(), tenant=tenant, created_at=now, last_used_at=now)
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.hset(keys.session(record.id), mapping={"id": record.id, "tenant": tenant, "created_at": now})
            pipe.zadd(keys.SESSIONS_BY_LAST_USE, {record.id: now})
            pipe.execute()
        return record

    def get_session(self, session_id: str, tenant: str = DEFAULT_TENANT) -> SessionRecord:
        """The live session, refreshed; idle-expired and other tenants' sessions are `NotFound`."""
        with redis_errors():
            data = self._r.hgetall(keys.session(session_id))
            last_used = self._r.zscore(keys.SESSIONS_BY_LAST_USE, session_id)
        if not data or data.get("tenant") != tenant or last_used is None or self._expired(last_used):
            raise NotFound(f"no session {session_id!r}", session_id=session_id)
        self.touch(session_id)
        return SessionRecord(
            id=data["id"], tenant=data["tenant"], created_at=float(data["created_at"]), last_used_at=time.time()
        )

    def touch(self, session_id: str) -> None:
        with redis_errors():
            self._r.zadd(keys.SESSIONS_BY_LAST_USE, {session_id: time.time()}, xx=True)

    def idle_sessions(self, limit: int = 100) -> list[str]:
        """Sessions unused for longer than the TTL, oldest first."""
        with redis_errors():
            return self._r.zrangebyscore(keys.SESSIONS_BY_LAST_USE, 0, time.time() - self._ttl, start=0, num=limit)

    def _expired(self, last_used: float) -> bool:
        return last_used < time.time() - self._ttl

    def session_handles(self, session_id: str) -> list[str]:
        with redis_errors():
            return sorted(self._r.smembers(keys.session_outputs(session_id)))

    def session_job_ids(self, session_id: str) -> list[str]:
        with redis_errors():
            return list(self._r.zrange(keys.session_jobs(session_id), 0, -1))

    def add_session_job(self, session_id: str, job_id: str, created_at: float) -> None:
        with redis_errors():
            self._r.zadd(keys.session_jobs(session_id), {job_id: created_at})

    def drop_session_records(self, session_id: str) -> None:
        """Remove the session and its output records (blobs and jobs are the caller's to remove)."""
        handles = self.session_handles(session_id)
        with redis_errors():
            pipe = self._r.pipeline()
            for handle in handles:
                pipe.delete(keys.output(handle))
            pipe.delete(keys.session(session_id), keys.session_outputs(session_id), keys.session_jobs(session_id))
            pipe.zrem(keys.SESSIONS_BY_LAST_USE, session_id)
            pipe.execute()

    # --- outputs ------------------------------------------------------------------------------
    def put_output(self, record: OutputRecord) -> None:
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.set(keys.output(record.handle), record.model_dump_json())
            pipe.sadd(keys.session_outputs(record.session_id), record.handle)
            pipe.execute()

    def get_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord:
        with redis_errors():
            raw = self._r.get(keys.output(handle))
        if raw is None:
            raise NotFound(f"no stored output with handle {handle!r}", handle=handle)
        record = OutputRecord.model_validate(json.loads(raw))
        if record.tenant != tenant:
            raise NotFound(f"no stored output with handle {handle!r}", handle=handle)
        return record

    def find_output(self, handle: str, tenant: str = DEFAULT_TENANT) -> OutputRecord | None:
        try:
            return self.get_output(handle, tenant)
        except NotFound:
            return None

    def delete_output(self, record: OutputRecord) -> None:
        with redis_errors():
            pipe = self._r.pipeline()
            pipe.delete(keys.output(record.handle))
            pipe.srem(keys.session_outputs(record.session_id), record.handle)
            pipe.execute()
