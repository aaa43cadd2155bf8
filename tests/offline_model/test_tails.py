"""The offline model's latency tail: drawn per call (request and arrival), so a hedge draws afresh."""

from __future__ import annotations

import asyncio

import pytest

from offline_model.config import OfflineModelConfig
from offline_model.server import unit_interval
from offline_model.tails import TailPlan

TAIL = OfflineModelConfig(latency_ms=500, tail_fraction=0.5, tail_multiplier=10)


def test_each_arrival_of_the_same_request_draws_afresh_and_a_rerun_draws_the_same_sequence() -> None:
    first, second = TailPlan(), TailPlan()
    draws = [first.multiplier(TAIL, "digest", unit_interval) for _ in range(40)]
    assert set(draws) == {1.0, 10.0}  # the same request is slow on some arrivals, fast on others
    assert draws == [second.multiplier(TAIL, "digest", unit_interval) for _ in range(40)]
    assert first.counts.slow == draws.count(10.0)


def test_no_tail_configured_means_no_draw() -> None:
    plan = TailPlan()
    assert plan.multiplier(OfflineModelConfig(), "digest", unit_interval) == 1.0 and plan.counts.slow == 0


def test_the_oldest_requests_are_forgotten_past_the_tracking_limit() -> None:
    plan = TailPlan(max_tracked=2)
    for digest in ("a", "b", "c"):
        plan.multiplier(TAIL, digest, unit_interval)
    assert list(plan._arrivals) == ["b", "c"]


@pytest.mark.parametrize("knobs", [{"tail_fraction": "1.5"}, {"tail_multiplier": "0.5"}])
def test_a_tail_out_of_range_is_refused(knobs: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="tail_fraction must be within"):
        OfflineModelConfig().with_values(knobs)


def test_a_wait_runs_to_its_end_while_the_client_stays() -> None:
    async def present() -> bool:
        return False

    plan = TailPlan()
    assert asyncio.run(plan.wait(0.01, present)) and plan.counts.cancelled == 0
