"""Long polls wake when their job ends: `JobEnds` (the watches) and each store's feed of ended jobs."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import pytest

from infra.stores.bundle import Stores
from infra.stores.jobs import JobRecord, JobStatus
from infra.stores.jobs.ends import EndWatch, JobEnds
from infra.wiring.stores import memory_stores, redis_stores
from tests.fixtures.api_server import api_settings

LONG = 30.0
"""A timeout no passing test reaches: a watch that was not woken fails the test instead of passing late."""


def test_a_watch_is_woken_from_another_thread_when_its_job_ends() -> None:
    ends = JobEnds()

    async def main() -> bool:
        with ends.watch("j1") as watch:
            threading.Timer(0.05, ends.ended, args=("j1",)).start()
            return await watch.wait(LONG)

    assert asyncio.run(main()) is True
    assert ends.watching() == 0


def test_an_end_announced_before_the_wait_is_not_lost() -> None:
    """The route watches before it reads the job: an end between the read and the wait still wakes it."""
    ends = JobEnds()

    async def main() -> tuple[bool, bool]:
        with ends.watch("j1") as watch:
            ends.ended("j1")
            woken = await watch.wait(LONG)
            return woken, await watch.wait(0.01)  # cleared once seen: the next wait is a fresh one

    assert asyncio.run(main()) == (True, False)


def test_other_jobs_ends_wake_no_one_and_every_watcher_of_a_job_wakes() -> None:
    ends = JobEnds()

    async def main() -> list[bool]:
        with ends.watch("j1") as first, ends.watch("j1") as second, ends.watch("j2") as other:
            assert ends.watching() == 2
            ends.ended("j1")
            ends.ended("j3")
            return [await first.wait(LONG), await second.wait(LONG), await other.wait(0.05)]

    assert asyncio.run(main()) == [True, True, False]
    assert ends.watching() == 0


SERVER = [pytest.mark.redis, pytest.mark.integration]


@pytest.fixture(params=["memory", pytest.param("redis", marks=SERVER), pytest.param("cluster", marks=SERVER)])
def stores(request: pytest.FixtureRequest) -> Any:
    """On a cluster the feed subscribes on one node and hears ends published on any: PUBLISH is broadcast."""
    if request.param == "memory":
        built = memory_stores(api_settings("memory://", "memory://"), None)  # type: ignore[arg-type]
    elif request.param == "redis":
        settings = api_settings(request.getfixturevalue("redis_url"), "memory://")
        request.getfixturevalue("redis_client")  # flushed db
        built = redis_stores(settings, None)  # type: ignore[arg-type]
    else:
        cluster = request.getfixturevalue("redis_cluster")
        request.getfixturevalue("redis_cluster_client")  # flushed primaries
        settings = api_settings(cluster.url, "memory://", redis_cluster=True, broker_url="memory://")
        built = redis_stores(settings, None)  # type: ignore[arg-type]
    yield built
    built.close()


def _job(stores: Stores, job_id: str) -> None:
    stores.jobs.records.create(JobRecord(id=job_id, session_id="s", tenant="dev", handle="h", extract="e", nonce="n"))


def test_every_store_announces_each_end_once_to_its_followers_until_they_stop(stores: Stores) -> None:
    heard: queue.Queue[str] = queue.Queue()
    stop = stores.follow_ends(heard.put)
    _wait_until_subscribed(stop)
    for job_id in ("j1", "j2"):
        _job(stores, job_id)
    stores.jobs.records.finish("j1", JobStatus.SUCCEEDED, result="ok")
    stores.jobs.records.finish("j1", JobStatus.FAILED, error="late twin")  # not an end: the job had ended
    stores.jobs.records.cancel("j2")
    assert [heard.get(timeout=LONG), heard.get(timeout=LONG)] == ["j1", "j2"]
    stop()
    _job(stores, "j3")
    stores.jobs.records.finish("j3", JobStatus.SUCCEEDED, result="ok")
    with pytest.raises(queue.Empty):
        heard.get(timeout=0.3)


def _wait_until_subscribed(stop: Any) -> None:
    """The Redis feed hears only what is published after it subscribed; the memory one hears at once."""
    feed = getattr(stop, "__self__", None)
    subscribed = getattr(feed, "subscribed", None)
    if subscribed is not None:
        assert subscribed.wait(LONG), "the job-end feed did not subscribe"


def test_waking_a_watch_whose_request_already_ended_is_harmless() -> None:
    """The waker copies the watches, then wakes them: a request may end (its loop close) in between."""
    ends = JobEnds()

    async def main() -> EndWatch:
        with ends.watch("j1") as watch:
            return watch

    asyncio.run(main()).wake()  # its loop is closed now: nothing to set, nothing raised


@pytest.mark.redis
@pytest.mark.integration
def test_stores_on_two_databases_of_one_server_hear_only_their_own_ends(redis_url: str, redis_client: Any) -> None:
    """Pub/sub is server-wide: two deployments sharing a Redis on two databases must not wake each other's waiters."""
    other_url = redis_url.rsplit("/", 1)[0] + "/" + str((int(redis_url.rsplit("/", 1)[1]) + 1) % 16)
    ours, theirs = (redis_stores(api_settings(url, "memory://"), None) for url in (redis_url, other_url))  # type: ignore[arg-type]
    heard: dict[str, queue.Queue[str]] = {"ours": queue.Queue(), "theirs": queue.Queue()}
    stops = [ours.follow_ends(heard["ours"].put), theirs.follow_ends(heard["theirs"].put)]
    try:
        for stop in stops:
            _wait_until_subscribed(stop)
        _job(ours, "ends-ours")
        ours.jobs.records.finish("ends-ours", JobStatus.SUCCEEDED, result="ok")
        assert heard["ours"].get(timeout=LONG) == "ends-ours"
        with pytest.raises(queue.Empty):
            heard["theirs"].get(timeout=0.5)
    finally:
        for stop in stops:
            stop()
        ours.jobs.records.delete("ends-ours")
        ours.close()
        theirs.close()
