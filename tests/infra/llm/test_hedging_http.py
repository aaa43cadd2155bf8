"""Hedged calls against the real offline model over HTTP: the loser's request is cancelled (the server sees
its client go away) and both calls are counted; the job's hedge budget holds when every call is slow."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from extraction.strategies.mapreduce import ModelLimits
from infra.llm.hedging import HedgePolicy, Hedger, HedgeTicket
from infra.llm.ratelimit.pacing import CallScope, call_scope
from infra.stores.jobs import JobRecord, JobStores, memory_job_stores
from tests.fixtures.servers import wait_until
from tests.infra.llm.test_client import map_call
from workers.job.runtime import GatedLLM

EVERY_CALL_SLOW = "latency_ms=100;tail_fraction=1;tail_multiplier=30"
"""Every call takes 3 s; the hedge trigger below is 1 s, so every call hedges, the original answers first and
its hedge still has a second to go when it is cancelled (room for a loaded machine)."""


def tail_counts(offline_model) -> dict[str, int]:
    return httpx.get(f"{offline_model.root}/stats", timeout=5).json()["tails"]


def warmed(client):
    """The client after one call on the hedge path with no hedge allowed: litellm's first `acompletion` in a
    process spends seconds setting up, long enough for both copies of a first hedged call to answer."""
    with call_scope(CallScope(hedge=HedgeTicket("map", lambda: False))):
        client.complete([{"role": "user", "content": "warm-up"}], max_tokens=5)
    return client


def gated(offline_model, jobs: JobStores, budget: int, per_call: int = 1) -> GatedLLM:
    hedger = Hedger(HedgePolicy(initial_delay_seconds=1.0, min_samples=1000, per_call=per_call))
    client = warmed(offline_model.client(knobs=EVERY_CALL_SLOW, hedger=hedger))
    job = jobs.records.create(JobRecord(id=f"j-{uuid.uuid4()}", session_id="s", handle="h", extract="x", nonce="n"))
    return GatedLLM(client, jobs, job.id, max_calls=100, hedge_budget=budget, limits=ModelLimits(8000, 500))


def test_the_losing_copy_is_cancelled_over_http_and_both_calls_are_counted(offline_model) -> None:
    jobs = memory_job_stores(ttl_seconds=600, deadline_seconds=600)
    llm = gated(offline_model, jobs, budget=1)
    before = tail_counts(offline_model)
    reply = llm.complete(map_call(f"request {uuid.uuid4()}"), max_tokens=200)
    assert "<ai-agent-" in (reply.content or "")
    assert wait_until(lambda: tail_counts(offline_model)["cancelled"] == before["cancelled"] + 1, timeout=10)
    assert tail_counts(offline_model)["slow"] == before["slow"] + 2  # both copies reached the server
    job = jobs.records.get(llm.job_id)
    assert (job.hedges_sent, job.hedges_won) == (1, 0)  # the original answered first; the hedge lost
    assert job.hedge_input_tokens > 0 and job.hedge_output_tokens == 0  # the cancelled hedge's prompt, as sent
    counted = job.model_usage[offline_model.model]
    assert counted.calls == 2 == reply.usage.calls
    assert counted.input_tokens == reply.usage.input_tokens > job.hedge_input_tokens
    assert jobs.accounting.hedge_totals()["sent"] == 1


def test_the_hedge_budget_holds_when_every_call_is_slow(offline_model) -> None:
    jobs = memory_job_stores(ttl_seconds=600, deadline_seconds=600)
    llm = gated(offline_model, jobs, budget=2, per_call=2)
    with ThreadPoolExecutor(6) as pool:
        replies = list(pool.map(lambda _: llm.complete(map_call(f"request {uuid.uuid4()}"), max_tokens=200), range(6)))
    job = jobs.records.get(llm.job_id)
    assert job.hedges_sent == 2 and jobs.accounting.hedge_totals()["sent"] == 2
    counted = job.model_usage[offline_model.model].calls
    assert sum(r.usage.calls for r in replies) == 8 == counted  # six calls and two hedges, all counted


def test_a_hedged_call_that_fails_raises_the_providers_error_as_toolouts(offline_model) -> None:
    from infra.errors import LLMCallError

    hedger = Hedger(HedgePolicy(initial_delay_seconds=60))
    client = offline_model.client(knobs="error_rate=1;error_kinds=500", hedger=hedger)
    with call_scope(CallScope(hedge=HedgeTicket("map", lambda: False))), pytest.raises(LLMCallError) as failed:
        client.complete(map_call(f"request {uuid.uuid4()}"), max_tokens=50)
    assert failed.value.details["status_code"] == 500
