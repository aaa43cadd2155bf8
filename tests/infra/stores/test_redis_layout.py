"""What only the Redis implementations promise: their key layout, TTLs, and that secrets never reach a key name.

The job store's layout is checked on one Redis and on a 3-primary cluster (`client`): a job's keys share its tag,
and the indexes its scripts change with it are per-slot copies on its slot.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

import pytest

from extraction.errors import NotFound
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra.errors import TooManyRequests
from infra.redis import keys
from infra.redis.slots import key_slot
from infra.stores.apikeys import RedisApiKeyStore
from infra.stores.idempotency import RedisIdempotencyStore, StoredResponse
from infra.stores.jobs import JobRecord, JobStatus, JobStores, redis_job_stores
from infra.stores.jobs.model import MAX_REDUCE_LEVELS
from infra.stores.jobs.records.live import ADMIT_GRACE_SECONDS
from infra.stores.jobs.scripts import CODEC
from infra.stores.records import Space, new_id, redis_record_stores
from tests.infra.stores.conftest import REDIS_FIXTURES, Clock, output

SERVER = [pytest.mark.redis, pytest.mark.integration]


@pytest.fixture(params=[pytest.param(kind, marks=SERVER) for kind in REDIS_FIXTURES])
def client(request: pytest.FixtureRequest) -> Any:
    """One Redis, then a cluster: the job store's layout must hold on both."""
    return request.getfixturevalue(REDIS_FIXTURES[request.param])


@pytest.fixture()
def clock(client: Any) -> Clock:
    return Clock(client=client)


@pytest.fixture()
def jobs(client: Any, clock: Clock) -> JobStores:
    return redis_job_stores(client, ttl_seconds=600, deadline_seconds=60, clock=clock)


def everything(client: Any) -> set[str]:
    """Every key, on every primary of a cluster."""
    return set(client.scan_iter(count=1000))


def new_job(jobs: JobStores, job_id: str = "j1", tenant: str = "acme") -> JobRecord:
    return jobs.records.create(
        JobRecord(id=job_id, session_id="s1", tenant=tenant, handle="h1", extract="errors", nonce="n")
    )


def test_a_job_is_one_hash_whose_fields_the_codec_derives_from_the_record(jobs, client) -> None:
    job = new_job(jobs)
    fields = client.hgetall(keys.job("j1"))
    assert fields == CODEC.encode(job)
    assert {"usage_calls", "usage_input_tokens", "usage_output_tokens"} <= set(fields) and "usage" not in fields
    assert fields["nonce"] == "n" and fields["status"] == "queued" and "result" not in fields


def test_failures_are_appended_to_one_json_field_and_settled_in_their_own_hash(jobs, client) -> None:
    new_job(jobs)
    first = FailedRange(level=0, index=3, chunks=[3], start=300, end=410, reason='a "quoted" reason — ✓')
    group = FailedRange(level=2, index=0, chunks=[0, 1], start=0, end=210, reason="r")
    assert jobs.fanin.record_failure("j1", first) and jobs.fanin.record_failure("j1", group)
    fields = client.hgetall(keys.job("j1"))
    assert json.loads(fields["failed_ranges"]) == [first.model_dump(), group.model_dump()]
    assert fields["chunks_failed"] == "3"
    assert client.hgetall(keys.job_failures("j1")) == {"0:3": "1", "2:0": "1"}
    assert client.hgetall(keys.per_slot(keys.CHUNKS_FAILED_TOTAL, "j1")) == {"map": "1", "reduce": "2"}


def test_counters_are_incremented_in_place(jobs, client) -> None:
    new_job(jobs)
    jobs.fanin.record_chunk("j1", 0, "x", Usage(calls=1, input_tokens=3, cost_usd=0.1))
    jobs.accounting.add_usage("j1", Usage(calls=2, output_tokens=5, cost_usd=0.2))
    fields = client.hgetall(keys.job("j1"))
    assert (fields["chunks_done"], fields["usage_calls"], fields["usage_output_tokens"]) == ("1", "3", "5")
    assert float(fields["usage_cost_usd"]) == pytest.approx(0.3)


def test_a_finished_job_and_everything_it_owns_expire_with_it(jobs, client) -> None:
    new_job(jobs)
    jobs.fanin.record_chunk("j1", 0, "x", Usage())
    jobs.fanin.record_failure("j1", FailedRange(level=0, index=1, chunks=[1], start=5, end=9, reason="r"))
    jobs.tasks.add_task_ids("j1", ["t1"])
    jobs.tasks.task_started("j1", "t1:0")
    jobs.traces.add_trace("j1", ['{"kind":"map"}'])
    for key in (keys.job_deliveries("j1"), keys.job_trace("j1")):
        assert 0 < client.ttl(key) <= client.ttl(keys.job("j1")), f"{key} lives as long as the job"
    assert jobs.records.finish("j1", JobStatus.SUCCEEDED, result="done")
    owned = (keys.job("j1"), keys.job_chunks("j1"), keys.job_failures("j1"), keys.job_tasks("j1"))
    for key in (*owned, keys.job_deliveries("j1"), keys.job_trace("j1")):
        assert 0 < client.ttl(key) <= 600, key
    assert client.ttl(keys.per_slot(keys.CHUNKS_FAILED_TOTAL, "j1")) == -1, "the store-wide count outlives jobs"
    assert client.zscore(keys.per_slot(keys.JOBS_ACTIVE, "j1"), "j1") is None
    assert client.zrange(keys.tenant_live_jobs("acme"), 0, -1) == []


def test_writes_after_a_delete_leave_no_key_behind(jobs, client) -> None:
    """HINCRBY, SADD or HSET on a deleted job's keys would re-create them (the job hash with no TTL)."""
    new_job(jobs)
    jobs.tasks.add_task_ids("j1", ["t1"])
    before = everything(client)
    jobs.records.delete_session_jobs("s1")
    for write in (
        lambda: jobs.accounting.add_agent_progress("j1", turns=1),
        lambda: jobs.fanin.expect_parts("j1", 0, 3, "{}"),
        lambda: jobs.fanin.record_chunk("j1", 0, "x", Usage(calls=1)),
        lambda: jobs.tasks.add_task_ids("j1", ["t2"]),
        lambda: jobs.tasks.task_started("j1", "t2:0"),
        lambda: jobs.tasks.task_ended("j1", "t2:0"),
        lambda: jobs.accounting.add_usage("j1", Usage(calls=1)),
        lambda: jobs.accounting.reserve_llm_call("j1", 5),
        lambda: jobs.fanin.settle_level("j1", 0),
        lambda: jobs.records.update("j1", mode_used="truncate"),
        lambda: jobs.traces.add_trace("j1", ['{"kind":"map"}']),
    ):
        with contextlib.suppress(NotFound):
            write()
    left = everything(client) - (before - {k for k in before if "j1" in k or "s1" in k})
    assert {k for k in left if not k.startswith(keys.slots_in_use(""))} == set(), left


def test_a_vanished_job_is_pruned_from_its_tenants_slots_when_the_limit_is_reached(jobs, client, clock) -> None:
    new_job(jobs, "a")
    jobs.records.create(JobRecord(id="b", session_id="s1", tenant="acme", handle="h1", extract="e"), max_live=2)
    client.delete(keys.job("b"))  # e.g. its record expired, or a create died before writing it
    c = JobRecord(id="c", session_id="s1", tenant="acme", handle="h1", extract="e")
    with pytest.raises(TooManyRequests):  # a missing job may be one being created: its slot is kept a while
        jobs.records.create(c, max_live=2)
    clock.now += ADMIT_GRACE_SECONDS + 1
    jobs.records.create(c, max_live=2)
    assert client.zrange(keys.tenant_live_jobs("acme"), 0, -1) == ["a", "c"]


def test_a_job_that_ended_but_never_left_its_tenant_is_pruned_at_once(jobs, client) -> None:
    """What a crash between `finish.lua` and leaving the tenant's live jobs leaves behind."""
    new_job(jobs, "a")
    assert jobs.records.finish("a", JobStatus.SUCCEEDED, result="x")
    client.zadd(keys.tenant_live_jobs("acme"), {"a": 1.0})
    jobs.records.create(JobRecord(id="b", session_id="s1", tenant="acme", handle="h1", extract="e"), max_live=1)
    assert client.zrange(keys.tenant_live_jobs("acme"), 0, -1) == ["b"]


def test_every_key_of_a_job_and_its_index_copies_share_one_slot(jobs, client) -> None:
    new_job(jobs)
    jobs.fanin.record_chunk("j1", 0, "x", Usage(calls=1))
    jobs.accounting.count_model_call("j1", "map", "m", Usage(calls=1))
    jobs.tasks.task_started("j1", "t1:0")
    owned = keys.job_keys("j1", MAX_REDUCE_LEVELS)
    indexes = [keys.JOBS_ACTIVE, keys.USAGE_TOTALS, keys.MODEL_USAGE_TOTALS, keys.CHUNKS_FAILED_TOTAL]
    copies = [keys.per_slot(index, "j1") for index in indexes]
    assert {key_slot(key) for key in [*owned, *copies]} == {key_slot("{j1}")}
    assert all(key.startswith("toolout:{j1}:") for key in owned)
    assert client.zscore(copies[0], "j1") is not None and client.hgetall(copies[1]) and client.hgetall(copies[2])


def test_whole_index_readers_sum_the_copies_of_every_slot(jobs, client) -> None:
    ids = [f"job-{n}" for n in range(12)]
    for job_id in ids:
        jobs.records.create(JobRecord(id=job_id, session_id="s1", tenant="acme", handle="h1", extract="e", model="m"))
        jobs.accounting.add_usage(job_id, Usage(calls=1, input_tokens=2, cost_usd=0.5))
    slots = {key_slot("{" + job_id + "}") for job_id in ids}
    assert len(slots) > 1 and {key_slot(k) for k in client.smembers(keys.slots_in_use(keys.JOBS_ACTIVE))} != set()
    assert (
        jobs.watch.count_active() == 12
        and len(jobs.watch.overdue(now=jobs.records.get("job-0").deadline_at + 1, limit=5)) == 5
    )
    (total,) = jobs.accounting.usage_totals()
    assert (total.usage.calls, total.usage.input_tokens, total.usage.cost_usd) == (12, 24, pytest.approx(6.0))


def test_the_watchdog_lock_expires_on_its_own(jobs, client) -> None:
    assert jobs.watch.claim_watchdog_tick("a", 5)
    assert 0 < client.pttl(keys.WATCHDOG_LOCK) <= 5000


def test_only_key_hashes_are_stored(redis_client) -> None:
    store = RedisApiKeyStore(redis_client)
    key, info = store.create("acme")
    stored = redis_client.hgetall(keys.API_KEYS)
    assert list(stored) == [info.key_hash] == [hashlib.sha256(key.encode()).hexdigest()]
    assert key not in json.dumps(stored) and json.loads(stored[info.key_hash])["tenant"] == "acme"


def test_an_idempotency_key_never_names_a_redis_key_and_expires(redis_client) -> None:
    store = RedisIdempotencyStore(redis_client, ttl_seconds=60)
    lease = store.begin("acme", "key with spaces:and*glob", "fp")
    store.complete(lease, StoredResponse(202, "{}"))
    names = redis_client.keys("*")
    assert names == [keys.idempotency("acme", lease.digest)] and "spaces" not in names[0]
    assert 0 < redis_client.ttl(names[0]) <= 60


def test_usage_totals_are_one_hash_per_slot_keyed_by_tenant_and_model(jobs, client) -> None:
    jobs.records.create(JobRecord(id="j1", session_id="s1", tenant="acme", handle="h1", extract="e", model="openai/m"))
    jobs.fanin.record_chunk("j1", 0, "x", Usage(calls=1, input_tokens=3, output_tokens=2, cost_usd=0.1))
    fields = client.hgetall(keys.per_slot(keys.USAGE_TOTALS, "j1"))
    assert {k: v for k, v in fields.items() if not k.endswith("cost_usd")} == {
        "acme\x1fopenai/m\x1fcalls": "1",
        "acme\x1fopenai/m\x1finput_tokens": "3",
        "acme\x1fopenai/m\x1foutput_tokens": "2",
    }
    assert float(fields["acme\x1fopenai/m\x1fcost_usd"]) == pytest.approx(0.1)
    assert client.ttl(keys.per_slot(keys.USAGE_TOTALS, "j1")) == -1  # a counter since this Redis began


def test_names_and_paths_are_one_hash_per_session_and_space(redis_client) -> None:
    records = redis_record_stores(redis_client, session_ttl_seconds=600)
    session = records.sessions.create_session()
    records.names.bind_alias(session.id, Space.VARIABLE, "foo", "h1", expected=None)
    records.names.bind_alias(session.id, Space.FILE, "out/a.md", "h2", expected=None)
    records.names.next_count(session.id, "search")
    assert redis_client.hgetall(keys.session_aliases(session.id, "variable")) == {"foo": "h1"}
    assert redis_client.hgetall(keys.session_aliases(session.id, "file")) == {"out/a.md": "h2"}
    assert redis_client.hgetall(keys.session_counters(session.id)) == {"search": "1"}
    records.sessions.drop_session_records(session.id)
    assert redis_client.keys(f"*{session.id}*") == []


def test_a_map_settles_after_redis_lost_its_scripts(jobs, client) -> None:
    """The pair of scripts goes by EVALSHA in one pipeline (redis-py's pipelined scripts would ask SCRIPT
    EXISTS first, every time); after a restart or SCRIPT FLUSH the batch loads them and runs again, and
    each script applies its effect once."""
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 2, "stage 0")
    client.script_flush()
    assert jobs.fanin.record_chunk_and_settle("j1", 0, "a", Usage(calls=1)) is None
    client.script_flush()
    assert jobs.fanin.record_chunk_and_settle("j1", 1, "b", Usage(calls=1)) == "stage 0"
    client.script_flush()
    assert jobs.fanin.record_chunk_and_settle("j1", 1, "b again", Usage(calls=1)) is None
    assert jobs.records.get("j1").chunks_done == 2 and jobs.fanin.chunk_outputs("j1") == {0: "a", 1: "b"}
    client.script_flush()
    assert jobs.fanin.begin_map("j1", 1, 10)[1:] == ("b", True)
    assert jobs.records.get("j1").llm_calls_reserved == 1, "reserved once, not once per try"


def test_a_sessions_keys_share_its_slot_and_an_outputs_keys_theirs(redis_client) -> None:
    """What lets a script or transaction touch them together on a Redis Cluster: each index entry lives in the
    copy on its session's (or output's) slot; only the registries of slots in use live elsewhere."""
    records = redis_record_stores(redis_client, session_ttl_seconds=600)
    session = records.sessions.create_session()
    record = output(session.id)
    records.outputs.put_output(record)
    records.names.bind_alias(session.id, Space.VARIABLE, "v", record.handle, expected=None)
    records.names.next_count(session.id, "tool")
    records.plans.keep_chunk_plan(record, "k", "[]")
    records.retention.retire_output(record, 1.0)
    by_slot: dict[int, set[str]] = {}
    for key in redis_client.scan_iter():
        if not key.startswith(keys.slots_in_use("")):
            by_slot.setdefault(key_slot(key), set()).add(key)
    assert by_slot == {
        key_slot(keys.session(session.id)): {
            keys.session(session.id),
            keys.session_outputs(session.id),
            keys.session_aliases(session.id, Space.VARIABLE),
            keys.session_counters(session.id),
            keys.sessions_by_last_use(session.id),
        },
        key_slot(keys.output(record.handle)): {
            keys.output(record.handle),
            keys.output_plans(record.handle),
            keys.retired_outputs(record.handle),
        },
    }


def test_the_cluster_is_sound_after_sessions_come_and_go(redis_cluster, redis_cluster_client) -> None:
    records = redis_record_stores(redis_cluster_client, session_ttl_seconds=600)
    for _ in range(20):
        session = records.sessions.create_session()
        records.names.bind_alias(session.id, Space.FILE, "a.md", new_id(), expected=None)
        records.sessions.drop_session_records(session.id)
    check = redis_cluster.cluster_check()
    assert check.returncode == 0 and "[OK] All 16384 slots covered." in check.stdout, check.stdout


def test_the_cluster_checks_clean_after_jobs_ran_on_every_primary(redis_cluster, redis_cluster_client) -> None:
    """`redis-cli --cluster check` after jobs on every primary lived and ended: no open slot, all covered."""
    jobs = redis_job_stores(redis_cluster_client, ttl_seconds=600, deadline_seconds=60)
    for n in range(12):
        job_id = f"job-{n}"
        jobs.records.create(JobRecord(id=job_id, session_id="s1", tenant="acme", handle="h1", extract="e"), max_live=20)
        jobs.fanin.record_chunk_and_settle(job_id, 0, "x", Usage(calls=1))
        jobs.records.finish(job_id, JobStatus.SUCCEEDED, result="ok")
    jobs.records.delete_session_jobs("s1")
    check = redis_cluster.cluster_check()
    assert check.returncode == 0 and "[OK] All 16384 slots covered." in check.stdout, check.stdout
