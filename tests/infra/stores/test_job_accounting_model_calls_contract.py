"""Model calls per model, fallbacks and waiting for provider limits: the same on Redis, a cluster and in memory."""

from __future__ import annotations

from extraction.protocols import Usage
from infra.stores.jobs import JobRecord, JobStores, ModelCall, ModelFallback


def new_job(jobs: JobStores, job_id: str = "j1", tenant: str = "dev") -> JobRecord:
    record = JobRecord(id=job_id, session_id="s1", tenant=tenant, handle="h1", extract="errors", nonce="n")
    return jobs.records.create(record.model_copy(update={"stage_models": {"map": "a", "reduce": "b", "agent": "a"}}))


def test_calls_are_counted_per_model_on_the_job_and_per_model_and_stage_in_the_totals(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.accounting.count_model_call("j1", "map", "a", Usage(calls=1, input_tokens=100, output_tokens=10, cost_usd=0.5))
    jobs.accounting.count_model_call("j1", "map", "a", Usage(calls=1, input_tokens=50, output_tokens=5, cost_usd=0.25))
    jobs.accounting.count_model_call("j1", "reduce", "b", Usage(calls=1, input_tokens=30, output_tokens=7))
    job = jobs.records.get("j1")
    assert job.stage_models == {"map": "a", "reduce": "b", "agent": "a"}
    assert job.model_usage == {
        "a": Usage(calls=2, input_tokens=150, output_tokens=15, cost_usd=0.75),
        "b": Usage(calls=1, input_tokens=30, output_tokens=7),
    }
    totals = {(t.tenant, t.model, t.stage): t.usage for t in jobs.accounting.model_usage_totals()}
    assert totals[("dev", "a", "map")].calls == 2 and totals[("dev", "b", "reduce")].input_tokens == 30
    assert totals[("dev", "b", "reduce")].cost_usd is None


def test_a_fallback_taken_is_kept_on_the_job_in_order(jobs: JobStores) -> None:
    new_job(jobs)
    first = ModelFallback(stage="map", model="a", answered_by="b", attempts=3, at=1.0)
    second = ModelFallback(stage="reduce", model="a", answered_by="c", attempts=2, at=2.0)
    jobs.accounting.count_model_call("j1", "map", "b", Usage(calls=1), first)
    jobs.accounting.count_model_call("j1", "reduce", "c", Usage(calls=1), second)
    assert jobs.records.get("j1").model_fallbacks == [first, second]


def test_waiting_calls_show_on_the_job_while_they_wait(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.accounting.note_waiting("j1", 1)
    jobs.accounting.note_waiting("j1", 1)
    assert jobs.records.get("j1").calls_waiting == 2
    jobs.accounting.note_waiting("j1", -1, 1.5)
    job = jobs.records.get("j1")
    assert job.calls_waiting == 1 and job.rate_limit_wait_seconds == 1.5


def test_calls_of_a_job_that_is_gone_create_nothing(jobs: JobStores) -> None:
    jobs.accounting.count_model_call("gone", "map", "a", Usage(calls=1))
    jobs.accounting.note_waiting("gone", 1)
    assert jobs.accounting.model_usage_totals() == []
    assert jobs.records.list_for_session("s1") == []


def test_a_maps_calls_are_counted_with_its_output_in_the_order_they_were_made(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 1, "stage 0")
    fallback = ModelFallback(stage="map", model="a", answered_by="b", attempts=2, at=1.0)
    calls = [
        ModelCall("map", "a", Usage(calls=1, input_tokens=10, output_tokens=1, cost_usd=0.5)),
        ModelCall("map", "b", Usage(calls=1, input_tokens=20, output_tokens=2), fallback),
    ]
    assert jobs.fanin.record_chunk_and_settle("j1", 0, "found", Usage(calls=1, input_tokens=20), calls) == "stage 0"
    job = jobs.records.get("j1")
    assert job.model_usage == {
        "a": Usage(calls=1, input_tokens=10, output_tokens=1, cost_usd=0.5),
        "b": Usage(calls=1, input_tokens=20, output_tokens=2),
    }
    assert job.model_fallbacks == [fallback]
    assert (job.usage.calls, job.chunks_done) == (1, 1), "the job's usage counts the part's output once"
    totals = {(t.tenant, t.model, t.stage): t.usage.calls for t in jobs.accounting.model_usage_totals()}
    assert totals == {("dev", "a", "map"): 1, ("dev", "b", "map"): 1}


def test_a_redelivered_maps_calls_are_counted_though_its_output_was_stored_before(jobs: JobStores) -> None:
    """Every call made is counted, as the provider bills it, even when a twin's output was kept."""
    new_job(jobs)
    jobs.fanin.expect_parts("j1", 0, 2, "stage 0")
    for _ in range(2):
        jobs.fanin.record_chunk_and_settle("j1", 0, "a", Usage(calls=1), [ModelCall("map", "a", Usage(calls=1))])
    job = jobs.records.get("j1")
    assert (job.model_usage["a"].calls, job.usage.calls, job.chunks_done) == (2, 1, 1)
