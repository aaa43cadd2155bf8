"""The gate before every model call: the per-job call budget and cancellation between calls, against real Redis."""

from __future__ import annotations

import json
import re
import threading

import pytest

from extraction.protocols import LLMReply, ToolCall, Usage
from extraction.testing import ScriptedLLM
from infra.errors import LLMBudgetExhausted
from infra.stores.jobs import JobStatus
from tests.workers.conftest import needle_model, store_output, submit
from tests.workers.job.test_pipeline import NEEDLE, document, drive
from tests.workers.job.test_read_grep import LOG
from workers.job import context, pipeline
from workers.job.agent import run_read_grep
from workers.job.runtime import GatedLLM, JobEnded

pytestmark = pytest.mark.twin("model-call budgets and cancels between calls; blob reads are incidental")


def test_a_spent_budget_ends_the_job_with_the_truncate_fallback_and_a_warning(make_runtime, caplog) -> None:
    rt = make_runtime(needle_model(NEEDLE), context_tokens=4000, max_llm_calls_per_job=3)
    output = store_output(rt, document())
    job = submit(rt, output, "database pool errors", mode="full-chunked")
    drive(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert done.chunks_total > 3 and len(rt.llm.calls) == 3 and done.llm_calls_reserved == 3
    assert done.status is JobStatus.SUCCEEDED and done.mode_used == "truncate"
    assert done.result.startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {output.handle}, STRATEGY:truncate:\n\nWARNING: "
        "tool_output fallback to truncate (chunk 4 of "
    )
    assert "LLM call budget is spent (3 calls, max_llm_calls_per_job)" in done.fallback_reason
    assert any(r.levelname == "WARNING" and "falling back to truncate" in r.getMessage() for r in caplog.records)


def test_the_budget_also_bounds_the_read_grep_agent(make_runtime) -> None:
    reading = ScriptedLLM(
        lambda m, t: LLMReply(
            tool_calls=[
                ToolCall(
                    id="r",
                    name="Read",
                    arguments=json.dumps(
                        {
                            "handle": re.search(r"Handle/filename: (\S+)", m[0]["content"]).group(1),
                            "offset": 1,
                            "limit": 5,
                        }
                    ),
                )
            ],
            usage=Usage(calls=1),
        )
    )
    rt = make_runtime(reading, max_llm_calls_per_job=2, agent_max_turns=10)
    job = submit(rt, store_output(rt, LOG.encode()), "anything", mode="read-grep")
    context.start(rt, job.id)
    run_read_grep(rt, job.id)
    done = rt.jobs.records.get(job.id)
    assert len(rt.llm.calls) == 2 and done.agent_turns == 2 and done.mode_used == "truncate"
    assert done.fallback_reason.startswith(
        "read-grep failed: model call failed: the job's LLM call budget is spent (2 calls"
    )


def test_concurrent_reservations_never_overshoot_the_budget(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    job = submit(rt, store_output(rt, document()), "errors")
    granted: list[bool] = []
    threads = [
        threading.Thread(
            target=lambda: granted.extend(rt.jobs.accounting.reserve_llm_call(job.id, 25) for _ in range(10))
        )
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert granted.count(True) == 25 and rt.jobs.records.get(job.id).llm_calls_reserved == 25


def test_a_cancel_between_two_attempts_of_one_map_stops_the_second_call(make_runtime) -> None:
    """The first answer has no wrapper (a retry would follow), but the job is canceled meanwhile."""

    def respond(messages, tools):
        rt.jobs.records.cancel(job.id)
        return LLMReply(content="no wrapper here", usage=Usage(calls=1))

    rt = make_runtime(ScriptedLLM(respond), context_tokens=4000)
    job = submit(rt, store_output(rt, document()), "errors", mode="full-chunked")
    first = context.start(rt, job.id).parts[0]
    pipeline.run_map(rt, job.id, first.index, first.start, first.end)
    done = rt.jobs.records.get(job.id)
    assert len(rt.llm.calls) == 1 and done.status is JobStatus.CANCELED and done.fallback_reason is None
    assert done.usage.calls == 1, "the call that was made is still charged"


def test_a_cancel_between_agent_turns_stops_the_agent(make_runtime) -> None:
    def respond(messages, tools):
        rt.jobs.records.cancel(job.id)
        handle = re.search(r"Handle/filename: (\S+)", messages[0]["content"]).group(1)
        return LLMReply(
            tool_calls=[ToolCall(id="g", name="Grep", arguments=json.dumps({"handle": handle, "pattern": "ERROR"}))]
        )

    rt = make_runtime(ScriptedLLM(respond))
    job = submit(rt, store_output(rt, LOG.encode()), "errors", mode="read-grep")
    context.start(rt, job.id)
    run_read_grep(rt, job.id)
    assert len(rt.llm.calls) == 1 and rt.jobs.records.get(job.id).status is JobStatus.CANCELED


def test_the_gate_says_why_it_refuses(make_runtime) -> None:
    rt = make_runtime(needle_model(NEEDLE))
    job = submit(rt, store_output(rt, document()), "errors")
    gated = GatedLLM(rt.llm, rt.jobs, job.id, max_calls=0, limits=rt.map_limits())
    with pytest.raises(LLMBudgetExhausted):
        gated.complete([{"role": "user", "content": "x"}])
    rt.jobs.records.cancel(job.id)
    with pytest.raises(JobEnded):
        GatedLLM(rt.llm, rt.jobs, job.id, max_calls=10, limits=rt.map_limits()).complete(
            [{"role": "user", "content": "x"}]
        )
    assert rt.llm.calls == []


def test_a_job_that_turned_hedging_off_gets_no_hedge_budget_and_one_that_did_not_gets_its_share(make_runtime) -> None:
    from workers.job.runtime import hedge_budget, job_llm

    rt = make_runtime(needle_model(NEEDLE), hedge_enabled=True)
    job = submit(rt, store_output(rt, document()), "database pool errors", mode="full-chunked")
    assert hedge_budget(rt, job.model_copy(update={"hedge": False})) == 0
    assert hedge_budget(rt, job.model_copy(update={"chunks_total": 32})) == 4  # 10 % of 33 calls, rounded up
    assert job_llm(rt, job, "map")._ticket(lambda: 0) is not None
    assert job_llm(rt, job.model_copy(update={"hedge": False}), "map")._ticket(lambda: 0) is None
