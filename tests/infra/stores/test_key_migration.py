"""`toolout migrate-keys` on real Redis: keys written in the layout of the release before the Redis Cluster one
(by hand, as that release wrote them) are read by today's stores after the migration, and a second run is a no-op.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from extraction.documents.lines import build_line_index
from extraction.documents.stats import measure
from extraction.variables.resolve import resolve
from infra.blobstore import MemoryBlobStore
from infra.outputs.storing import Target, UploadMeta, WriteOptions, store_output
from infra.outputs.variables import SessionVariables
from infra.outputs.versions import BytesSource
from infra.redis import keys
from infra.stores.idempotency import RedisIdempotencyStore
from infra.stores.key_migration import migrate, new_name
from infra.stores.records import OutputRecord, Space, memory_record_stores, redis_record_stores
from toolout.cli import app as cli

CONFIG = {"limits": {"rps": 40}, "name": "edge"}
RENAMED = 10
"""The keys `write_old_layout` writes: the session's hash, outputs, variables, files and counters; two output records
and a plans hash; an idempotency response and its lock."""


@dataclass
class OldSession:
    id: str
    retired: OutputRecord
    current: OutputRecord


def blob_writer(blobs: MemoryBlobStore, data: bytes) -> Callable[[str], None]:
    def write(key: str) -> None:
        blobs.put_bytes(key, data)

    return write


def stored_config() -> OldSession:
    """Two versions of the variable `cfg` (the first retired), stored inline the way the service stores them."""
    records, blobs = memory_record_stores(session_ttl_seconds=600), MemoryBlobStore()
    session = records.sessions.create_session("acme")
    versions = []
    for value in ({"limits": {"rps": 10}}, CONFIG):
        data = json.dumps(value).encode()
        store_output(
            blobs,
            records,
            session,
            UploadMeta("fetch_config", "{}", "application/json"),
            measure([data]),
            build_line_index([data]),
            blob_writer(blobs, data),
            target=Target(Space.VARIABLE, "cfg"),
            options=WriteOptions(inline_max_bytes=1 << 20),
            source=BytesSource(data),
        )
        versions.append(records.outputs.get_output(str(records.names.alias(session.id, Space.VARIABLE, "cfg")), "acme"))
    return OldSession(session.id, *versions)


def write_old_layout(client: redis.Redis, now: float) -> OldSession:
    """What the release before wrote for one session with a variable replaced once and a used idempotency key."""
    written = stored_config()
    session, retired, current = written.id, written.retired, written.current
    old = f"toolout:session:{session}"
    client.hset(old, mapping={"id": session, "tenant": "acme", "created_at": now - 50})
    client.sadd(f"{old}:outputs", retired.handle, current.handle)
    client.hset(f"{old}:variables", "cfg", current.handle)
    client.hset(f"{old}:files", "out/cfg.json", current.handle)
    client.hset(f"{old}:counters", "fetch_config", 3)
    for record in (retired, current):
        client.set(f"toolout:output:{record.handle}", record.model_dump_json())
    client.hset(f"toolout:output:{current.handle}:plans", "k", "[[0, 10, 4]]")
    client.zadd("toolout:sessions:last_use", {session: now - 10, "other-session": now - 20})
    client.zadd("toolout:outputs:retired", {retired.handle: now - 30})
    client.set("toolout:idempotency:acme:ab12", json.dumps({"status": 202, "body": "{}", "fingerprint": "f"}), ex=500)
    client.set("toolout:idempotency:acme:ab12:lock", "holder", ex=30)
    return written


def test_an_old_sessions_variables_resolve_after_the_migration(redis_client: redis.Redis) -> None:
    now = time.time()
    old = write_old_layout(redis_client, now)
    retired, current = old.retired, old.current

    done = migrate(redis_client)

    assert (done.renamed, done.indexed, done.taken, done.unknown) == (RENAMED, 3, [], [])
    records = redis_record_stores(redis_client, session_ttl_seconds=600)
    session = records.sessions.get_session(old.id, "acme")
    variables = SessionVariables(records, MemoryBlobStore(), session, block_size=4096)
    assert resolve({"rps": "$cfg.limits.rps", "name": "$cfg.name"}, variables).value == {"rps": 40, "name": "edge"}
    assert records.names.alias(old.id, Space.FILE, "out/cfg.json") == current.handle
    assert records.names.next_count(old.id, "fetch_config") == 4
    assert records.plans.chunk_plan(current, "k") == "[[0, 10, 4]]"
    assert [record.handle for record in records.retention.retired_outputs(before=now)] == [retired.handle]
    assert records.sessions.session_handles(old.id) == sorted([retired.handle, current.handle])


def test_ttls_survive_and_the_sweeper_finds_migrated_sessions(redis_client: redis.Redis) -> None:
    now = time.time()
    old = write_old_layout(redis_client, now)
    migrate(redis_client)

    response = keys.idempotency("acme", "ab12")
    assert 400 < redis_client.ttl(response) <= 500 and 0 < redis_client.ttl(f"{response}:lock") <= 30
    stored = RedisIdempotencyStore(redis_client, ttl_seconds=60).stored_response("acme", "ab12")
    assert stored is not None and stored.status == 202
    later = redis_record_stores(redis_client, session_ttl_seconds=600, clock=lambda: now + 600)
    assert later.retention.idle_sessions() == ["other-session", old.id]  # oldest first, across slots


def test_nothing_is_left_under_an_old_name_and_a_second_run_is_a_no_op(redis_client: redis.Redis) -> None:
    write_old_layout(redis_client, time.time())
    migrate(redis_client)
    after = {key: redis_client.type(key) for key in redis_client.scan_iter()}

    again = migrate(redis_client)

    assert (again.renamed, again.indexed, again.taken, again.unknown) == (0, 0, [], [])
    assert {key: redis_client.type(key) for key in redis_client.scan_iter()} == after
    old = [key for key in after if key.startswith(("toolout:session:", "toolout:output:", "toolout:idempotency:"))]
    assert old == [] and "toolout:sessions:last_use" not in after and "toolout:outputs:retired" not in after


def test_a_dry_run_counts_and_changes_nothing(redis_client: redis.Redis) -> None:
    write_old_layout(redis_client, time.time())
    before = {key: redis_client.type(key) for key in redis_client.scan_iter()}

    dry = migrate(redis_client, dry_run=True)

    assert (dry.renamed, dry.indexed) == (RENAMED, 3)
    assert {key: redis_client.type(key) for key in redis_client.scan_iter()} == before


def test_a_taken_new_name_and_an_unknown_shape_are_reported_and_left(redis_client: redis.Redis) -> None:
    redis_client.set("toolout:output:h1", "old")
    redis_client.set(keys.output("h1"), "new")
    redis_client.set("toolout:session:s1:mystery", "x")

    done = migrate(redis_client)

    assert done.taken == ["toolout:output:h1"] and done.unknown == ["toolout:session:s1:mystery"]
    assert redis_client.get(keys.output("h1")) == "new" and redis_client.get("toolout:output:h1") == "old"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("toolout:session:s1", keys.session("s1")),
        ("toolout:session:s1:variables", keys.session_aliases("s1", Space.VARIABLE)),
        ("toolout:session:s1:files", keys.session_aliases("s1", Space.FILE)),
        ("toolout:session:s1:counters", keys.session_counters("s1")),
        ("toolout:session:s1:outputs", keys.session_outputs("s1")),
        ("toolout:output:h1", keys.output("h1")),
        ("toolout:output:h1:plans", keys.output_plans("h1")),
        ("toolout:idempotency:team-1.eu:9f:lock", keys.idempotency_lock("team-1.eu", "9f")),
        ("toolout:session:s1:nope", None),
        ("toolout:idempotency:9f", None),
    ],
)
def test_old_names_map_to_the_new_layout(old: str, new: str | None) -> None:
    assert new_name(old) == new


@pytest.fixture()
def run_cli(redis_url: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("TOOLOUT_REDIS_URL", redis_url)
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, ["migrate-keys", *args])


def test_the_cli_migrates_and_says_what_it_moved(run_cli: Any, redis_client: redis.Redis) -> None:
    old = write_old_layout(redis_client, time.time())
    dry = run_cli("--dry-run")
    assert dry.exit_code == 0 and f"would move {RENAMED} key(s)" in dry.stdout, dry.output
    assert redis_client.exists(f"toolout:session:{old.id}")
    moved = run_cli()
    assert moved.exit_code == 0 and f"moved {RENAMED} key(s) to new names and 3 index" in moved.stdout, moved.output
    assert "moved 0 key(s) to new names and 0 index" in run_cli().stdout


def test_the_cli_refuses_a_cluster(run_cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLOUT_REDIS_CLUSTER", "true")
    monkeypatch.setenv("TOOLOUT_BROKER_URL", "amqp://guest@127.0.0.1//")
    refused = run_cli()
    assert refused.exit_code == 1 and "standalone" in refused.stderr
