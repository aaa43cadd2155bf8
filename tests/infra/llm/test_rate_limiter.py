"""Provider limits paced before each model call: the GCRA limiter on Redis (one, or a cluster: one key per model,
so its script touches one slot) and in memory, and the pacer."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from infra.llm.ratelimit import MemoryRateLimiter, RateLimit, RateLimiter, RedisRateLimiter
from infra.llm.ratelimit.pacing import CallScope, Pacer, call_scope, request_tokens

SERVER = [pytest.mark.redis, pytest.mark.integration]
KINDS = ["memory", pytest.param("redis", marks=SERVER), pytest.param("cluster", marks=SERVER)]
REDIS_FIXTURES = {"redis": "redis_client", "cluster": "redis_cluster_client"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=KINDS)
def limiter(request: pytest.FixtureRequest) -> RateLimiter:
    if request.param in REDIS_FIXTURES:
        client = request.getfixturevalue(REDIS_FIXTURES[request.param])
        for key in ("toolout:ratelimit:m", "toolout:ratelimit:m2"):  # one DEL per key: they are on two slots
            client.delete(key)
        return RedisRateLimiter(client, burst_seconds=1.0)
    return MemoryRateLimiter(burst_seconds=1.0)


def test_calls_leave_at_the_rpm_pace_after_a_burst_of_one_second(limiter: RateLimiter) -> None:
    """60 rpm: a call a second; the burst lets the second call go at once, the rest queue one second apart."""
    waits = [limiter.reserve("m", RateLimit(rpm=60), 0) for _ in range(5)]
    assert waits[:2] == [pytest.approx(0, abs=0.15)] * 2
    assert waits[2:] == [pytest.approx(1, abs=0.15), pytest.approx(2, abs=0.15), pytest.approx(3, abs=0.15)]


def test_tokens_per_minute_pace_large_calls(limiter: RateLimiter) -> None:
    """600 tpm = 10 tokens a second: a 20-token call books two seconds of the model's tokens."""
    limit = RateLimit(tpm=600)
    waits = [limiter.reserve("m", limit, 20) for _ in range(3)]
    assert waits == [pytest.approx(0, abs=0.15), pytest.approx(1, abs=0.15), pytest.approx(3, abs=0.15)]


def test_models_are_paced_apart(limiter: RateLimiter) -> None:
    limit = RateLimit(rpm=60)
    for _ in range(3):
        limiter.reserve("m", limit, 0)
    assert limiter.reserve("m2", limit, 0) == pytest.approx(0, abs=0.15)


def test_concurrent_reservations_never_share_a_slot(limiter: RateLimiter) -> None:
    """32 threads at once, 600 rpm: the slots they get are 0.1 s apart, whoever asked first.

    A send time is the caller's clock before it asked plus the wait it got: off by how long asking took,
    which a loaded machine stretches, hence the margins."""

    def send_at(_: int) -> float:
        return time.monotonic() + limiter.reserve("m", RateLimit(rpm=600), 0)

    with ThreadPoolExecutor(32) as pool:
        sends = sorted(pool.map(send_at, range(32)))
    tens = [later - earlier for earlier, later in zip(sends[11:], sends[21:], strict=False)]
    assert all(span > 0.8 for span in tens), tens  # after the burst, ten slots take a second
    assert sends[-1] - sends[0] == pytest.approx(32 * 0.1 - 1.1, abs=0.3)


def test_the_memory_twin_refills_with_time() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(burst_seconds=0.0, clock=clock)
    assert limiter.reserve("m", RateLimit(rpm=60), 0) == 0
    assert limiter.reserve("m", RateLimit(rpm=60), 0) == pytest.approx(1.0)
    clock.now += 10
    assert limiter.reserve("m", RateLimit(rpm=60), 0) == 0


def test_a_call_larger_than_a_minute_of_tokens_books_one_minute() -> None:
    limiter = MemoryRateLimiter(burst_seconds=0.0, clock=FakeClock())
    assert limiter.reserve("m", RateLimit(tpm=100), 10_000) == 0
    assert limiter.reserve("m", RateLimit(tpm=100), 1) == pytest.approx(60.0)


def test_the_pacer_reports_a_waiting_call_and_what_it_waited() -> None:
    slept: list[float] = []
    pacer = Pacer(MemoryRateLimiter(burst_seconds=0.0), {"m": RateLimit(rpm=60)}, sleep=slept.append)
    heard: list[tuple[int, float]] = []
    scope = CallScope(on_wait=lambda delta, seconds: heard.append((delta, seconds)))
    with call_scope(scope):
        pacer.pace("m")
        pacer.pace("m")
        pacer.pace("unlimited")
    assert heard == [(1, 0.0), (-1, slept[0])] and slept[0] == pytest.approx(1.0, abs=0.15)
    assert scope.attempted == ["m", "m", "unlimited"]


def test_tokens_are_counted_only_for_a_model_with_a_tpm_limit() -> None:
    counted: list[int] = []

    def count() -> int:
        counted.append(1)
        return 10

    pacer = Pacer(MemoryRateLimiter(), {"r": RateLimit(rpm=1000), "t": RateLimit(tpm=1000)}, sleep=time.sleep)
    with call_scope(CallScope(count=count)):
        pacer.pace("r")
        assert counted == []
        pacer.pace("t")
        pacer.pace("t")
    assert counted == [1]


def test_request_tokens_count_the_prompt_and_the_answer_reserved() -> None:
    messages = [{"role": "system", "content": "hello world"}, {"role": "user", "content": "hi"}]
    assert request_tokens(messages, None, 100, "o200k_base") == 3 + (4 + 2) + (4 + 1) + 100
