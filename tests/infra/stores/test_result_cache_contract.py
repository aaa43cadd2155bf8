"""The `ResultCache` promises, on Redis and on the in-memory twin alike."""

from __future__ import annotations

from infra.stores.resultcache import MAX_SOURCES, ResultCache
from tests.infra.stores.conftest import Clock


def offer(cache: ResultCache, clock: Clock, key: str, *sources: tuple[str, str]) -> None:
    for job_id, handle in sources:
        cache.remember(key, job_id, handle)
        clock.advance(1)


def test_sources_come_back_newest_first(cache: ResultCache, clock: Clock) -> None:
    offer(cache, clock, "k1", ("j1", "h1"), ("j2", "h2"), ("j3", "h1"))
    assert cache.sources("k1") == ["j3", "j2", "j1"]
    assert cache.sources("k2") == []


def test_keys_do_not_share_sources(cache: ResultCache, clock: Clock) -> None:
    offer(cache, clock, "k1", ("j1", "h1"))
    offer(cache, clock, "k2", ("j2", "h1"))
    assert (cache.sources("k1"), cache.sources("k2")) == (["j1"], ["j2"])


def test_a_forgotten_source_is_gone_and_others_stay(cache: ResultCache, clock: Clock) -> None:
    offer(cache, clock, "k1", ("j1", "h1"), ("j2", "h1"))
    cache.forget("k1", "j2")
    cache.forget("k1", "never-there")
    assert cache.sources("k1") == ["j1"]


def test_deleting_outputs_removes_exactly_their_sources(cache: ResultCache, clock: Clock) -> None:
    offer(cache, clock, "k1", ("j1", "h1"), ("j2", "h2"), ("j3", "h3"))
    offer(cache, clock, "k2", ("j4", "h1"))
    assert cache.forget_outputs(["h1", "h3", "h-unknown"]) == 3
    assert (cache.sources("k1"), cache.sources("k2")) == (["j2"], [])
    assert cache.forget_outputs(["h1"]) == 0 and cache.forget_outputs([]) == 0


def test_a_key_keeps_its_newest_sources_only(cache: ResultCache, clock: Clock) -> None:
    offer(cache, clock, "k1", *((f"j{i}", "h1") for i in range(MAX_SOURCES + 3)))
    assert cache.sources("k1") == [f"j{i}" for i in range(MAX_SOURCES + 2, 2, -1)]


def test_a_key_expires_a_ttl_after_its_last_offer(cache: ResultCache, clock: Clock) -> None:
    offer(cache, clock, "k1", ("j1", "h1"))
    clock.advance(500)
    offer(cache, clock, "k1", ("j2", "h1"))  # the offer renews the key
    clock.advance(500)
    assert cache.sources("k1") == ["j2", "j1"]
    clock.advance(101)
    assert cache.sources("k1") == []
