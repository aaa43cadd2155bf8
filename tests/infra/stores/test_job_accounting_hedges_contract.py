"""Accounting: the hedge budget and hedge counts, on Redis, on a Redis Cluster and in memory alike."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from extraction.protocols import Usage
from infra.stores.jobs import JobStores
from tests.infra.stores.conftest import new_job


def test_hedges_are_reserved_up_to_the_budget_and_never_for_an_ended_job(jobs: JobStores) -> None:
    new_job(jobs)
    assert [jobs.accounting.reserve_hedge("j1", 2) for _ in range(3)] == [True, True, False]
    assert jobs.records.get("j1").hedges_sent == 2
    jobs.records.cancel("j1")
    assert not jobs.accounting.reserve_hedge("j1", 100) and not jobs.accounting.reserve_hedge("missing", 100)


def test_concurrent_hedge_reservations_never_overshoot(jobs: JobStores) -> None:
    new_job(jobs)
    with ThreadPoolExecutor(8) as pool:
        granted = sum(pool.map(lambda _: jobs.accounting.reserve_hedge("j1", 4), range(40)))
    assert granted == 4 == jobs.records.get("j1").hedges_sent


def test_hedge_counts_land_on_the_job_and_in_the_store_wide_totals(jobs: JobStores) -> None:
    new_job(jobs)
    new_job(jobs, "j2")
    jobs.accounting.count_hedges("j1", 1, True, Usage(calls=1, input_tokens=120))
    jobs.accounting.count_hedges("j2", 2, False, Usage(calls=2, input_tokens=100, output_tokens=30))
    one = jobs.records.get("j1")
    assert (one.hedges_won, one.hedge_input_tokens, one.hedge_output_tokens) == (1, 120, 0)
    assert jobs.accounting.hedge_totals() == {"sent": 3, "won": 1, "prompt": 220, "completion": 30}


def test_counting_hedges_on_an_unknown_job_changes_nothing(jobs: JobStores) -> None:
    jobs.accounting.count_hedges("missing", 1, True, Usage(calls=1, input_tokens=5))
    assert jobs.accounting.hedge_totals() == {"sent": 0, "won": 0, "prompt": 0, "completion": 0}
    with pytest.raises(Exception, match="missing"):
        jobs.records.get("missing")
