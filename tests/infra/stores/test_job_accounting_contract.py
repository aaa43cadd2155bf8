"""Accounting: the call budget, and the usage totals per tenant and model.

On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from extraction.protocols import Usage
from infra.stores.jobs import JobStores
from tests.infra.stores.conftest import new_job


# --- faults: call budget, overdue jobs, task ids, the watchdog's tick ---------------------------
def test_reservations_stop_at_the_limit_and_for_ended_jobs(jobs: JobStores) -> None:
    new_job(jobs)
    assert [jobs.accounting.reserve_llm_call("j1", 2) for _ in range(3)] == [True, True, False]
    assert jobs.records.get("j1").llm_calls_reserved == 2
    jobs.records.cancel("j1")
    assert not jobs.accounting.reserve_llm_call("j1", 100) and not jobs.accounting.reserve_llm_call("missing", 100)


def test_concurrent_reservations_never_overshoot(jobs: JobStores) -> None:
    new_job(jobs)
    with ThreadPoolExecutor(8) as pool:
        granted = sum(pool.map(lambda _: jobs.accounting.reserve_llm_call("j1", 10), range(40)))
    assert granted == 10 == jobs.records.get("j1").llm_calls_reserved


# --- usage totals per tenant and model --------------------------------------------------------------
def test_usage_is_totalled_per_tenant_and_model_once_per_part(jobs: JobStores) -> None:
    new_job(jobs, "a", tenant="acme", model="openai/gpt-4o-mini")
    new_job(jobs, "b", tenant="acme", model="openai/gpt-4o-mini")
    new_job(jobs, "c", tenant="globex", model="openai/gpt-4o-mini")
    new_job(jobs, "d", tenant="acme")
    spent = Usage(calls=1, input_tokens=100, output_tokens=10, cost_usd=0.5)
    for job_id in ("a", "a", "b", "c", "d"):  # "a" delivered twice: its part is counted once
        jobs.fanin.record_chunk(job_id, 0, "x", spent)
    jobs.fanin.record_reduce("a", 1, 0, "y", Usage(calls=1, input_tokens=20, output_tokens=2, cost_usd=0.25))
    jobs.accounting.add_usage("b", Usage(calls=2, input_tokens=7, output_tokens=3))
    totals = {(t.tenant, t.model): t.usage for t in jobs.accounting.usage_totals()}
    assert totals == {
        ("acme", "openai/gpt-4o-mini"): Usage(calls=5, input_tokens=227, output_tokens=25, cost_usd=1.25),
        ("globex", "openai/gpt-4o-mini"): spent,
        ("acme", ""): spent,
    }


def test_unpriced_usage_totals_keep_an_unknown_cost(jobs: JobStores) -> None:
    new_job(jobs, "a", model="openai/toolout-offline")
    jobs.accounting.add_usage("a", Usage(calls=1, input_tokens=5, output_tokens=1))
    [total] = jobs.accounting.usage_totals()
    assert total.usage == Usage(calls=1, input_tokens=5, output_tokens=1, cost_usd=None)
