"""Slot tags: every shipped tag hashes to its own slot, our slot function agrees with redis-py's and the cluster's."""

from __future__ import annotations

import uuid
from typing import cast

import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot as redis_py_key_slot

from infra.redis import keys
from infra.redis.slot_index import SlotIndex
from infra.redis.slots import INDEX_STRIDE, SLOTS, draw_id, generate_slot_tags, key_slot, same_slot_tag, slot_tag


def test_every_shipped_tag_lands_on_its_slot() -> None:
    assert [key_slot("{" + slot_tag(slot) + "}") for slot in range(SLOTS)] == list(range(SLOTS))


def test_the_shipped_file_is_what_the_generator_makes() -> None:
    assert [slot_tag(slot) for slot in range(SLOTS)] == generate_slot_tags()


def test_key_slot_agrees_with_redis_py_on_tags_and_plain_keys() -> None:
    keys = ["toolout:{job-1}:chunks", "toolout:job:1", "a{}b", "{}{x}", "x{y", "{ab}{cd}", "toolout:{é}:x"]
    assert [key_slot(key) for key in keys] == [redis_py_key_slot(key.encode()) for key in keys]


def test_a_same_slot_tag_shares_the_slot_of_the_tag_it_serves() -> None:
    for tag in ("job-1", "0b6c1f0e-9a", "session:abc"):
        assert key_slot("i:{" + same_slot_tag(tag) + "}") == key_slot("k:{" + tag + "}")


def test_the_cluster_puts_a_tag_and_its_index_tag_on_one_slot(redis_cluster_client: RedisCluster) -> None:
    job_key, index_key = "toolout:{job-7}:chunks", "toolout:{" + same_slot_tag("job-7") + "}:jobs:active"
    assert redis_cluster_client.cluster_keyslot(job_key) == redis_cluster_client.cluster_keyslot(index_key)
    script = "redis.call('SET', KEYS[1], 'a'); redis.call('SET', KEYS[2], 'b'); return 1"
    assert redis_cluster_client.eval(script, 2, job_key, index_key) == 1


def test_a_slot_index_registers_each_copy_it_writes_and_reads_them_all(redis_cluster_client: RedisCluster) -> None:
    client = cast(redis.Redis, redis_cluster_client)
    index = SlotIndex(client, "jobs:active")
    written = {index.key_for(f"job-{n}") for n in range(20)}
    for key in written:
        client.zadd(key, {"x": 1.0})
    assert set(index.copies()) == written
    assert sorted(key_slot(key) for key in index.copies()) == [key_slot(key) for key in index.copies()]


def test_drawn_ids_are_uuid4s_on_the_256_index_slots_only() -> None:
    ids = [draw_id() for _ in range(3000)]
    slots = {key_slot("{" + drawn + "}") for drawn in ids}
    assert all(uuid.UUID(drawn).version == 4 for drawn in ids) and len(set(ids)) == len(ids)
    assert all(slot % INDEX_STRIDE == 0 for slot in slots) and len(slots) > 200  # 256 possible, ~245 expected


def test_a_slot_index_over_drawn_ids_writes_at_most_256_copies(redis_cluster_client: RedisCluster) -> None:
    index = SlotIndex(cast(redis.Redis, redis_cluster_client), "jobs:active")
    written = {index.key_for(draw_id()) for _ in range(2000)}
    assert len(written) <= SLOTS // INDEX_STRIDE == 256 and len(list(index.copies())) == len(written)


def test_a_slot_copy_is_told_from_other_keys_by_its_index_name() -> None:
    copy = keys.per_slot(keys.USAGE_TOTALS, "job-1")
    assert keys.is_slot_copy(copy, keys.USAGE_TOTALS) and not keys.is_slot_copy(copy, keys.MODEL_USAGE_TOTALS)
    assert not keys.is_slot_copy(keys.job("job-1"), keys.USAGE_TOTALS)
    assert not keys.is_slot_copy(keys.slots_in_use(keys.USAGE_TOTALS), keys.USAGE_TOTALS)
