"""`toolout migrate-keys`: move the keys of sessions and outputs written before the Redis Cluster layout.

Sessions live long (a variable is kept as long as its session is used), so upgrading must not lose them: every
key of the old layout (`toolout:session:<id>…`, `toolout:output:<handle>…`, `toolout:idempotency:…`) is renamed
to the name `infra.redis.keys` gives it now (RENAME keeps the TTL), and the two global sorted sets the sweeper read
(`toolout:sessions:last_use`, `toolout:outputs:retired`) are spread over their per-slot copies
(`infra.redis.slot_index`), each entry moved beside the keys it indexes.

Keys go before index entries, so a sweeper running meanwhile never finds a session in the new index whose keys
still carry old names (it would drop the new names and leave the old ones behind). A rename never overwrites:
a new name that exists already is reported and its old key left as it is. Everything moved is gone from the old
names, so a second run finds nothing to do. It runs on the standalone Redis the old release used: RENAME cannot
move a key between cluster slots (to move to a cluster afterwards, see docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, cast

import redis

from infra.redis import keys
from infra.redis.client import redis_errors, text
from infra.redis.slots import key_slot
from infra.stores.records.model import Space

LEGACY_SESSION = f"{keys.PREFIX}:session:"
"""`toolout:session:<id>` (hash) and `toolout:session:<id>:<outputs|jobs|variables|files|counters>`."""

LEGACY_OUTPUT = f"{keys.PREFIX}:output:"
"""`toolout:output:<handle>` (the record) and `toolout:output:<handle>:plans`."""

LEGACY_IDEMPOTENCY = f"{keys.PREFIX}:idempotency:"
"""`toolout:idempotency:<tenant>:<digest>` and `…:lock` (tenants hold no `:`)."""

LEGACY_INDEXES = {
    f"{keys.PREFIX}:sessions:last_use": keys.SESSIONS_BY_LAST_USE,
    f"{keys.PREFIX}:outputs:retired": keys.RETIRED_OUTPUTS,
}
"""Old global sorted set → the per-slot index its entries move to (each beside its member's keys)."""

BATCH = 500


def _aliases(space: Space) -> Callable[[str], str]:
    return lambda session_id: keys.session_aliases(session_id, space)


_SESSION_KEYS: dict[str, Callable[[str], str]] = {
    "": keys.session,
    "outputs": keys.session_outputs,
    "jobs": keys.session_jobs,
    "counters": keys.session_counters,
    **{f"{space}s": _aliases(space) for space in Space},
}
_OUTPUT_KEYS: dict[str, Callable[[str], str]] = {"": keys.output, "plans": keys.output_plans}


@dataclass
class Migration:
    """What a run did (or, dry, would do)."""

    renamed: int = 0
    indexed: int = 0
    taken: list[str] = field(default_factory=list)
    """Old keys left in place: their new name exists already."""
    unknown: list[str] = field(default_factory=list)
    """Keys under an old prefix of no shape we know: left in place."""

    def summary(self, dry_run: bool) -> str:
        verb = "would move" if dry_run else "moved"
        lines = [f"{verb} {self.renamed} key(s) to new names and {self.indexed} index entr(ies) to per-slot copies"]
        lines += [f"left {key}: its new name exists" for key in self.taken]
        lines += [f"left {key}: not a key of the old layout" for key in self.unknown]
        return "\n".join(lines)


def new_name(old: str) -> str | None:
    """The name `infra.redis.keys` gives an old-layout key now; None for a key of no known shape."""
    for prefix, shapes in ((LEGACY_SESSION, _SESSION_KEYS), (LEGACY_OUTPUT, _OUTPUT_KEYS)):
        if old.startswith(prefix):
            owner, _, what = old.removeprefix(prefix).partition(":")
            name = shapes.get(what)
            return name(owner) if name is not None and owner else None
    if old.startswith(LEGACY_IDEMPOTENCY):
        rest = old.removeprefix(LEGACY_IDEMPOTENCY)
        lock = rest.endswith(":lock")
        tenant, _, digest = rest.removesuffix(":lock").rpartition(":")
        if not (tenant and digest):
            return None
        return keys.idempotency_lock(tenant, digest) if lock else keys.idempotency(tenant, digest)
    return None


def migrate(client: redis.Redis, *, dry_run: bool = False) -> Migration:
    """Rename every old-layout key, then move the old indexes' entries (see the module's docstring)."""
    done = Migration()
    with redis_errors():
        for batch in _legacy_keys(client):
            _rename(client, batch, done, dry_run)
        for legacy, index in LEGACY_INDEXES.items():
            done.indexed += _spread(client, legacy, index, dry_run)
    return done


def _legacy_keys(client: redis.Redis) -> Iterator[list[str]]:
    """Every old-layout key, in batches of `BATCH` (what one pipeline renames)."""
    for prefix in (LEGACY_SESSION, LEGACY_OUTPUT, LEGACY_IDEMPOTENCY):
        found = (text(key) for key in client.scan_iter(match=f"{prefix}*", count=BATCH))
        while batch := list(islice(found, BATCH)):
            yield batch


def _rename(client: redis.Redis, batch: list[str], done: Migration, dry_run: bool) -> None:
    """RENAMENX each key of `batch` in one pipeline (EXISTS of the new name when dry)."""
    named = [(old, new_name(old)) for old in batch]
    done.unknown += [old for old, new in named if new is None]
    moves = [(old, new) for old, new in named if new is not None and new != old]
    pipe = client.pipeline(transaction=False)
    for old, new in moves:
        if dry_run:
            pipe.exists(new)
        else:
            pipe.renamenx(old, new)
    for (old, _), result in zip(moves, pipe.execute(raise_on_error=False), strict=True):
        if _gone(result):
            continue
        if bool(result) == dry_run:  # dry: the new name exists; else: RENAMENX refused
            done.taken.append(old)
        else:
            done.renamed += 1


def _gone(result: object) -> bool:
    """The pipeline's answer for a key that expired or was deleted since SCAN found it; other errors raise."""
    if isinstance(result, redis.ResponseError) and "no such key" in str(result).lower():
        return True
    if isinstance(result, Exception):
        raise result
    return False


def _spread(client: redis.Redis, legacy: str, index: str, dry_run: bool) -> int:
    """Move the entries of the global sorted set `legacy` into the per-slot copies of `index`, a batch per
    pipeline: the batch's slots registered first (`SlotIndex`'s registry, so readers find the copies), then each
    entry added to its copy (an entry already there keeps the later score), then taken off `legacy`."""
    if dry_run:
        return int(client.zcard(legacy))
    moved = 0
    while batch := cast(list[tuple[Any, float]], client.zrange(legacy, 0, BATCH - 1, withscores=True)):
        members = [(text(member), score) for member, score in batch]
        pipe = client.pipeline(transaction=False)
        pipe.sadd(keys.slots_in_use(index), *{key_slot("{" + member + "}") for member, _ in members})
        for member, score in members:
            pipe.zadd(keys.per_slot(index, member), {member: score}, gt=True)
        pipe.zrem(legacy, *(member for member, _ in members))
        pipe.execute()
        moved += len(batch)
    return moved
