"""Every Redis key toolout uses, in one place, so nobody guesses a name and TTLs stay auditable.

Keys a script (or a transaction) touches together share a hash tag, so they land on one Redis Cluster slot:
every key of a session is `toolout:{<session id>}:<what>`, every key of an output `toolout:{<handle>}:<what>`.
No script touches a session and an output together (`infra.stores.records.redis_context` says why that holds).
"""

from __future__ import annotations

from infra.redis.slots import key_slot, slot_tag

PREFIX = "toolout"

SESSIONS_BY_LAST_USE = "sessions:last_use"
"""Per-slot index (`per_slot`): sorted set of session id → last use (unix seconds); the sweeper deletes idle ones.
The copy beside a session's keys is `sessions_by_last_use(session_id)`."""


def sessions_by_last_use(session_id: str) -> str:
    """The copy of `SESSIONS_BY_LAST_USE` on the slot of the session's keys."""
    return per_slot(SESSIONS_BY_LAST_USE, session_id)


def session(session_id: str) -> str:
    """Hash: id, tenant, created_at and, with a TTL, expires_at."""
    return f"{PREFIX}:{{{session_id}}}:session"


def session_outputs(session_id: str) -> str:
    """Set of output handles stored in the session."""
    return f"{PREFIX}:{{{session_id}}}:outputs"


def session_jobs(session_id: str) -> str:
    """Sorted set: job id → created_at."""
    return f"{PREFIX}:{{{session_id}}}:jobs"


def session_aliases(session_id: str, space: str) -> str:
    """Hash: variable name (space `variable`) or file path (space `file`) → handle of its current version."""
    return f"{PREFIX}:{{{session_id}}}:{space}s"


def session_counters(session_id: str) -> str:
    """Hash: counter name (a tool's sanitised base name) → last number handed out (default names `<tool>_<n>`)."""
    return f"{PREFIX}:{{{session_id}}}:counters"


EXPIRING = "retention:expires"
"""Per-slot index (`per_slot`): sorted set of `session:<id>` and `output:<handle>` → its retention deadline (unix
seconds), set at upload from a TTL; the sweeper deletes each once it passes. The copy beside a session's or an
output's keys is `expiring(<id or handle>)`."""


def expiring(tag: str) -> str:
    """The copy of `EXPIRING` on the slot of the keys tagged `{tag}` (a session id or a handle)."""
    return per_slot(EXPIRING, tag)


def output(handle: str) -> str:
    """String: the OutputRecord JSON."""
    return f"{PREFIX}:{{{handle}}}:output"


def output_plans(handle: str) -> str:
    """Hash: plan key (planner version, content, encoding, budget, overlap) → the output's chunk plan (JSON).

    Written only while `output(handle)` exists, deleted with it (`infra.stores.records.plans`)."""
    return f"{PREFIX}:{{{handle}}}:plans"


RETIRED_OUTPUTS = "outputs:retired"
"""Per-slot index (`per_slot`): sorted set of the handle of a replaced version → when it was replaced; the sweeper
removes them after a grace period. The copy beside an output's keys is `retired_outputs(handle)`."""


def retired_outputs(handle: str) -> str:
    """The copy of `RETIRED_OUTPUTS` on the slot of the output's keys."""
    return per_slot(RETIRED_OUTPUTS, handle)


# --- jobs: every key of one job carries the tag {<job id>}, so a script sees them all on one primary --
def job(job_id: str) -> str:
    """Hash: the JobRecord's fields; counters are updated in place with HINCRBY."""
    return f"{PREFIX}:{{{job_id}}}:job"


def job_chunks(job_id: str) -> str:
    """Hash: chunk index → map output; written with HSETNX so a redelivered task applies nothing twice."""
    return f"{PREFIX}:{{{job_id}}}:chunks"


def job_reduce(job_id: str, level: int) -> str:
    """Hash: group index → reduce output at one level of a recursive reduce."""
    return f"{PREFIX}:{{{job_id}}}:reduce:{level}"


def job_failures(job_id: str) -> str:
    """Hash: `<level>:<index>` of each part (chunk or reduce group) that could not be read → 1.

    Checked by the same scripts that store outputs, so a part is settled once: as an output or as a failure.
    """
    return f"{PREFIX}:{{{job_id}}}:failures"


def job_tasks(job_id: str) -> str:
    """Set: Celery task ids scheduled for the job (chord parts, chord bodies, agent), so a cancel can revoke them."""
    return f"{PREFIX}:{{{job_id}}}:tasks"


def job_fanin(job_id: str) -> str:
    """Hash: `<level>:expected` and `<level>:then` (the step after that level's parts), and `sent:<attempt>:<level>`
    claimed with HSETNX by the part that completes the level (its task id, so its redelivered message can take
    the step again): our own chord counter, one Lua step per part."""
    return f"{PREFIX}:{{{job_id}}}:fanin"


def job_deliveries(job_id: str) -> str:
    """Hash: `<task id>:<retry>` → how many starts of that task message's step did not end (`JobTasks.task_started`):
    the worker died under them. A message whose deliveries keep killing their worker is refused after
    `max_task_deliveries`."""
    return f"{PREFIX}:{{{job_id}}}:deliveries"


def job_trace(job_id: str) -> str:
    """Hash: the job's trace events `0..next-1` (JSON), with `bytes` used, `next` and, once bounded, `cut`
    (`infra.stores.jobs.traces`)."""
    return f"{PREFIX}:{{{job_id}}}:trace"


def job_keys(job_id: str, max_levels: int) -> list[str]:
    """All keys a job owns (for TTLs and deletion); one slot, so one DEL removes them all."""
    levels = [job_reduce(job_id, level) for level in range(max_levels + 1)]
    owned = [job_chunks(job_id), job_failures(job_id), job_tasks(job_id), job_fanin(job_id), job_deliveries(job_id)]
    owned.append(job_trace(job_id))
    return [job(job_id), *owned, *levels]


# Per-slot indexes the job scripts update together with the job (names for `per_slot` / `SlotIndex`: the copy
# beside job `j` is `per_slot(JOBS_ACTIVE, j)`); readers of a whole index walk `SlotIndex(...).copies()`.
JOBS_ACTIVE = "jobs:active"
"""Index of sorted sets: non-terminal job id → deadline (unix seconds); the watchdog scans every copy."""

USAGE_TOTALS = "metrics:usage"
"""Index of hashes: `<tenant>\\x1f<model>\\x1f<calls|input_tokens|output_tokens|cost_usd>` → sum over the jobs of
that slot since this Redis began, counted in the same Lua step as the job's own usage; `/metrics` sums the copies
per tenant and model (no TTL)."""

MODEL_USAGE_TOTALS = "metrics:model_usage"
"""Index of hashes: `<tenant>\\x1f<model>\\x1f<stage>\\x1f<counter>` → every model call, under the model that
answered it."""

CHUNKS_FAILED_TOTAL = "metrics:chunks_failed"
"""Index of hashes: stage (`map`, `reduce`) → chunks lost since this Redis began; `/metrics` sums the copies."""

HEDGES_TOTAL = "metrics:hedges"
"""Index of hashes: `sent`, `won`, `prompt`, `completion` (the losing copies' tokens) → since this Redis began."""


def jobs_ended(client: object) -> str:
    """Pub/sub channel (not a key): `finish.lua` publishes each job id as the job ends; API processes wake its long
    polls. A cluster broadcasts a PUBLISH to every node, so a subscriber on any node hears every end.

    Redis delivers a PUBLISH to every subscriber on the server, whatever database each selected: the channel names
    the client's database, so deployments sharing a server on two databases each hear only their own ends."""
    pool = getattr(client, "connection_pool", None)
    database = pool.connection_kwargs.get("db", 0) if pool is not None else 0
    return f"{PREFIX}:jobs:ended:{database}"


WATCHDOG_LOCK = f"{PREFIX}:watchdog:lock"
"""String with a TTL of one watchdog interval: the worker that sets it scans overdue jobs for that tick."""


# --- query strategy ---------------------------------------------------------------------------------
def query_load_lock(tenant: str, sha256: str) -> str:
    """String set NX (a short TTL its holder renews) while one process loads the tenant's content `sha256`
    as tables: a question or a preload for the same content waits for it instead of loading again."""
    return f"{PREFIX}:query:{tenant}:{sha256}:loading"


def query_loaded(tenant: str, sha256: str) -> str:
    """String: the blob prefix where the tenant's content `sha256` was last kept as tables (an output with
    the same content copies it instead of loading); deleted with the output kept there
    (`infra.query.loaded_forms.LoadedForms.forget`), its TTL (the session TTL) only a last resort."""
    return f"{PREFIX}:query:{tenant}:{sha256}:loaded"


# --- result cache ---------------------------------------------------------------------------------
def result_cache(key: str) -> str:
    """Sorted set: job id → when it was offered as the answer to cache key `key` (a sha256 hex; see
    `extraction.result_key`); expires `result_cache_ttl_seconds` after the last offer."""
    return f"{PREFIX}:cache:{key}"


def result_cache_output(handle: str) -> str:
    """Set of `<cache key> <job id>` for every source that read the output `handle`: what deleting it removes."""
    return f"{PREFIX}:cache:output:{handle}"


# --- access control -------------------------------------------------------------------------------
API_KEYS = f"{PREFIX}:apikeys"
"""Hash: sha256(api key) hex → JSON `{"tenant", "created_at"}`. Only hashes are stored; `toolout keys` manages it."""


def tenant_live_jobs(tenant: str) -> str:
    """Sorted set: the tenant's non-terminal job id → when it was admitted (unix seconds). Its own tag: the
    admission script touches only this key; a job joins it before its own keys are written and leaves it after
    its finish (`RedisJobRecords.finish`)."""
    return f"{PREFIX}:{{tenant:{tenant}}}:jobs:live"


def session_idempotency(session_id: str) -> str:
    """Hash: digest of each Idempotency-Key whose kept response belongs to the session → the handle it names (or
    ""): what deleting the session (or that output) removes. Expires with the keys it lists."""
    return f"{PREFIX}:{{{session_id}}}:idempotency"


def idempotency(tenant: str, key_digest: str) -> str:
    """String: the stored response (JSON) of the first request with that Idempotency-Key; expires after the TTL.

    Tagged `{idem:<tenant>:<digest>}` with its lock: `complete.lua` keeps the response and drops the lock in one step.
    """
    return f"{PREFIX}:{{idem:{tenant}:{key_digest}}}"


def idempotency_lock(tenant: str, key_digest: str) -> str:
    """String set NX while the first request with that Idempotency-Key is in flight (short TTL)."""
    return f"{idempotency(tenant, key_digest)}:lock"


def model_rate_limit(model: str) -> str:
    """Hash: the model's limiter state (`r_tat`, `t_tat`: ms); expires a minute after its last reserved slot."""
    return f"{PREFIX}:ratelimit:{model}"


# --- per-slot indexes (Redis Cluster) -------------------------------------------------------------
def per_slot(index: str, tag: str) -> str:
    """The copy of index `index` (e.g. `jobs:active`) that lives on the slot of the keys tagged `{tag}`, so one
    script can change a job's (or a session's) keys and its index entry together, on one primary."""
    return slot_copy(index, key_slot("{" + tag + "}"))


def slot_copy(index: str, slot: int) -> str:
    """The copy of index `index` on cluster slot `slot`."""
    return f"{PREFIX}:{{{slot_tag(slot)}}}:{index}"


def is_slot_copy(key: str, index: str) -> bool:
    """Whether `key` is one slot's copy of index `index` (`toolout:{<slot tag>}:<index>`)."""
    return key.startswith(f"{PREFIX}:{{") and key.endswith(f"}}:{index}")


def slots_in_use(index: str) -> str:
    """Set of the slots whose copy of `index` has been written: what a reader of the whole index reads."""
    return f"{PREFIX}:slots:{index}"
