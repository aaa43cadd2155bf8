"""What only the Redis implementations promise: their key layout, TTLs, and that secrets never reach a key name."""

from __future__ import annotations

import contextlib
import hashlib
import json

import pytest
import redis

from extraction.errors import NotFound
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from infra import keys
from infra.apikeys import RedisApiKeyStore
from infra.idempotency import RedisIdempotencyStore, StoredResponse
from infra.jobstore import JobRecord, JobStatus, RedisJobStore
from infra.jobstore.redis import CODEC
from infra.records import RedisRecordStore, Space, new_id
from infra.slots import key_slot
from tests.infra.stores.test_record_store_contract import output


@pytest.fixture()
def jobs(redis_client: redis.Redis) -> RedisJobStore:
    return RedisJobStore(redis_client, ttl_seconds=600, deadline_seconds=60)


def new_job(jobs: RedisJobStore, job_id: str = "j1", tenant: str = "acme") -> JobRecord:
    return jobs.create(JobRecord(id=job_id, session_id="s1", tenant=tenant, handle="h1", extract="errors", nonce="n"))


def test_a_job_is_one_hash_whose_fields_the_codec_derives_from_the_record(jobs, redis_client) -> None:
    job = new_job(jobs)
    fields = redis_client.hgetall(keys.job("j1"))
    assert fields == CODEC.encode(job)
    assert {"usage_calls", "usage_input_tokens", "usage_output_tokens"} <= set(fields) and "usage" not in fields
    assert fields["nonce"] == "n" and fields["status"] == "queued" and "result" not in fields


def test_failures_are_appended_to_one_json_field_and_settled_in_their_own_hash(jobs, redis_client) -> None:
    new_job(jobs)
    first = FailedRange(level=0, index=3, chunks=[3], start=300, end=410, reason='a "quoted" reason — ✓')
    group = FailedRange(level=2, index=0, chunks=[0, 1], start=0, end=210, reason="r")
    assert jobs.record_failure("j1", first) and jobs.record_failure("j1", group)
    fields = redis_client.hgetall(keys.job("j1"))
    assert json.loads(fields["failed_ranges"]) == [first.model_dump(), group.model_dump()]
    assert fields["chunks_failed"] == "3"
    assert redis_client.hgetall(keys.job_failures("j1")) == {"0:3": "1", "2:0": "1"}
    assert redis_client.hgetall(keys.CHUNKS_FAILED_TOTAL) == {"map": "1", "reduce": "2"}


def test_counters_are_incremented_in_place(jobs, redis_client) -> None:
    new_job(jobs)
    jobs.record_chunk("j1", 0, "x", Usage(calls=1, input_tokens=3, cost_usd=0.1))
    jobs.add_usage("j1", Usage(calls=2, output_tokens=5, cost_usd=0.2))
    fields = redis_client.hgetall(keys.job("j1"))
    assert (fields["chunks_done"], fields["usage_calls"], fields["usage_output_tokens"]) == ("1", "3", "5")
    assert float(fields["usage_cost_usd"]) == pytest.approx(0.3)


def test_a_finished_job_and_everything_it_owns_expire_with_it(jobs, redis_client) -> None:
    new_job(jobs)
    jobs.record_chunk("j1", 0, "x", Usage())
    jobs.record_failure("j1", FailedRange(level=0, index=1, chunks=[1], start=5, end=9, reason="r"))
    jobs.add_task_ids("j1", ["t1"])
    assert jobs.finish("j1", JobStatus.SUCCEEDED, result="done")
    for key in (keys.job("j1"), keys.job_chunks("j1"), keys.job_failures("j1"), keys.job_tasks("j1")):
        assert 0 < redis_client.ttl(key) <= 600, key
    assert redis_client.ttl(keys.CHUNKS_FAILED_TOTAL) == -1, "the store-wide count outlives jobs"
    assert redis_client.zscore(keys.JOBS_ACTIVE, "j1") is None
    assert redis_client.smembers(keys.tenant_live_jobs("acme")) == set()


def test_writes_after_a_delete_leave_no_key_behind(jobs, redis_client) -> None:
    """HINCRBY, SADD or HSET on a deleted job's keys would re-create them (the job hash with no TTL)."""
    new_job(jobs)
    jobs.add_task_ids("j1", ["t1"])
    before = set(redis_client.keys("*"))
    jobs.delete_session_jobs("s1")
    for write in (
        lambda: jobs.add_agent_progress("j1", turns=1),
        lambda: jobs.expect_parts("j1", 0, 3, "{}"),
        lambda: jobs.record_chunk("j1", 0, "x", Usage(calls=1)),
        lambda: jobs.add_task_ids("j1", ["t2"]),
        lambda: jobs.add_usage("j1", Usage(calls=1)),
        lambda: jobs.reserve_llm_call("j1", 5),
        lambda: jobs.settle_level("j1", 0),
        lambda: jobs.update("j1", mode_used="truncate"),
    ):
        with contextlib.suppress(NotFound):
            write()
    left = set(redis_client.keys("*")) - (before - {k for k in before if "j1" in k or "s1" in k})
    assert left == set(), left


def test_a_vanished_job_is_pruned_from_its_tenants_slots_when_the_limit_is_reached(jobs, redis_client) -> None:
    new_job(jobs, "a")
    jobs.create(JobRecord(id="b", session_id="s1", tenant="acme", handle="h1", extract="e"), max_live=2)
    redis_client.delete(keys.job("b"))  # e.g. its record expired
    jobs.create(JobRecord(id="c", session_id="s1", tenant="acme", handle="h1", extract="e"), max_live=2)
    assert redis_client.smembers(keys.tenant_live_jobs("acme")) == {"a", "c"}


def test_the_watchdog_lock_expires_on_its_own(jobs, redis_client) -> None:
    assert jobs.claim_watchdog_tick("a", 5)
    assert 0 < redis_client.pttl(keys.WATCHDOG_LOCK) <= 5000


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


def test_usage_totals_are_one_hash_per_deployment_keyed_by_tenant_and_model(jobs, redis_client) -> None:
    jobs.create(JobRecord(id="j1", session_id="s1", tenant="acme", handle="h1", extract="e", model="openai/m"))
    jobs.record_chunk("j1", 0, "x", Usage(calls=1, input_tokens=3, output_tokens=2, cost_usd=0.1))
    fields = redis_client.hgetall(keys.USAGE_TOTALS)
    assert {k: v for k, v in fields.items() if not k.endswith("cost_usd")} == {
        "acme\x1fopenai/m\x1fcalls": "1",
        "acme\x1fopenai/m\x1finput_tokens": "3",
        "acme\x1fopenai/m\x1foutput_tokens": "2",
    }
    assert float(fields["acme\x1fopenai/m\x1fcost_usd"]) == pytest.approx(0.1)
    assert redis_client.ttl(keys.USAGE_TOTALS) == -1  # a counter since this Redis began


def test_names_and_paths_are_one_hash_per_session_and_space(redis_client) -> None:
    records = RedisRecordStore(redis_client, session_ttl_seconds=600)
    session = records.create_session()
    records.bind_alias(session.id, Space.VARIABLE, "foo", "h1", expected=None)
    records.bind_alias(session.id, Space.FILE, "out/a.md", "h2", expected=None)
    records.next_count(session.id, "search")
    assert redis_client.hgetall(keys.session_aliases(session.id, "variable")) == {"foo": "h1"}
    assert redis_client.hgetall(keys.session_aliases(session.id, "file")) == {"out/a.md": "h2"}
    assert redis_client.hgetall(keys.session_counters(session.id)) == {"search": "1"}
    records.drop_session_records(session.id)
    assert redis_client.keys(f"*{session.id}*") == []


def test_a_map_settles_after_redis_lost_its_scripts(jobs, redis_client) -> None:
    """The pair of scripts goes by EVALSHA in one pipeline (redis-py's pipelined scripts would ask SCRIPT
    EXISTS first, every time); after a restart or SCRIPT FLUSH the batch loads them and runs again, and
    each script applies its effect once."""
    new_job(jobs)
    jobs.expect_parts("j1", 0, 2, "stage 0")
    redis_client.script_flush()
    assert jobs.record_chunk_and_settle("j1", 0, "a", Usage(calls=1)) is None
    redis_client.script_flush()
    assert jobs.record_chunk_and_settle("j1", 1, "b", Usage(calls=1)) == "stage 0"
    redis_client.script_flush()
    assert jobs.record_chunk_and_settle("j1", 1, "b again", Usage(calls=1)) is None
    assert jobs.get("j1").chunks_done == 2 and jobs.chunk_outputs("j1") == {0: "a", 1: "b"}
    redis_client.script_flush()
    assert jobs.begin_map("j1", 1, 10)[1:] == ("b", True)
    assert jobs.get("j1").llm_calls_reserved == 1, "reserved once, not once per try"


def test_a_sessions_keys_share_its_slot_and_an_outputs_keys_theirs(redis_client) -> None:
    """What lets a script or transaction touch them together on a Redis Cluster: each index entry lives in the
    copy on its session's (or output's) slot; only the registries of slots in use live elsewhere."""
    records = RedisRecordStore(redis_client, session_ttl_seconds=600)
    session = records.create_session()
    record = output(session.id)
    records.put_output(record)
    records.bind_alias(session.id, Space.VARIABLE, "v", record.handle, expected=None)
    records.next_count(session.id, "tool")
    records.keep_chunk_plan(record, "k", "[]")
    records.retire_output(record, 1.0)
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
    records = RedisRecordStore(redis_cluster_client, session_ttl_seconds=600)
    for _ in range(20):
        session = records.create_session()
        records.bind_alias(session.id, Space.FILE, "a.md", new_id(), expected=None)
        records.drop_session_records(session.id)
    check = redis_cluster.cluster_check()
    assert check.returncode == 0 and "[OK] All 16384 slots covered." in check.stdout, check.stdout
