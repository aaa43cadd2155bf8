"""A job's trace, written by its own steps: each map's chunk and answer, the reduce, the sub-agent's tools."""

from __future__ import annotations

import json

from extraction.strategies.mapreduce import ModelLimits
from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStatus
from tests.workers.conftest import CHUNK_NOTES, needle_model
from tests.workers.job.test_pipeline import NEEDLE, document
from tests.workers.job.test_read_grep import LOG, grepping_model
from toolout.local import LocalToolOut

SHORT_ANSWERS = ModelLimits(context_tokens=4000, max_output_tokens=100)
SMALL = ModelLimits(context_tokens=4000, max_output_tokens=500)


def stored_bytes(events: list[dict]) -> int:
    return sum(len(json.dumps({k: v for k, v in e.items() if k != "seq"}, separators=(",", ":"))) for e in events)


def test_a_map_reduce_trace_holds_each_chunk_what_it_answered_and_the_reduce() -> None:
    with LocalToolOut(llm=needle_model(NEEDLE, misses=CHUNK_NOTES), limits=SHORT_ANSWERS) as local:
        data = document()
        job = local.extract(local.store(data).handle, "database pool errors", "full-chunked").job
        events = local.stores.jobs.traces.trace(job.id)
        outputs = local.stores.jobs.fanin.chunk_outputs(job.id)
    maps = sorted((e for e in events if e["kind"] == "map"), key=lambda e: e["chunk"])
    assert job.status is JobStatus.SUCCEEDED and [e["chunk"] for e in maps] == list(range(job.chunks_total))
    assert [e["answer"] for e in maps] == [outputs[i] for i in range(job.chunks_total)]
    assert maps[0]["start"] == 0 and maps[-1]["end"] == len(data)
    assert all(e["calls"] == 1 and e["input_tokens"] == 100 and e["seconds"] >= 0 and e["lines"] > 0 for e in maps)
    needle = [e for e in maps if NEEDLE in e["answer"]]
    assert needle and all(data[e["start"] : e["end"]].count(NEEDLE.encode()) for e in needle)
    (reduce,) = [e for e in events if e["kind"] == "reduce"]
    assert reduce["inputs"] == job.chunks_total and NEEDLE in reduce["answer"]


def test_a_read_grep_trace_holds_each_tool_call_with_its_result() -> None:
    with LocalToolOut(llm=grepping_model(), limits=SMALL) as local:
        job = local.extract(local.store(LOG).handle, "connection pool incidents", "read-grep").job
        events = local.stores.jobs.traces.trace(job.id)
    tools = [e for e in events if e["kind"] == "tool"]
    assert tools and job.agent_tool_calls == len(tools)
    assert any(e["name"] == "Grep" and "connection pool exhausted" in e["result"] for e in tools)


def test_a_170_chunk_job_keeps_its_trace_under_the_bound_and_says_it_was_cut() -> None:
    bound = 40_000
    data = (document() * 13)[: 170 * 9_000]
    with LocalToolOut(llm=needle_model(NEEDLE, misses=CHUNK_NOTES * 20), limits=SMALL, trace_max_bytes=bound) as local:
        job = local.extract(local.store(data).handle, "database pool errors", "full-chunked").job
        events = local.stores.jobs.traces.trace(job.id)
    assert job.chunks_total >= 170, job.chunks_total
    assert stored_bytes(events) <= bound and events[-1] == {
        "seq": len(events) - 1,
        "kind": "truncated",
        "max_bytes": bound,
    }
    assert sum(e["kind"] == "truncated" for e in events) == 1


def test_tracing_off_writes_nothing() -> None:
    with LocalToolOut(llm=needle_model(NEEDLE), limits=SHORT_ANSWERS, trace_max_bytes=0) as local:
        job = local.extract(local.store(document()).handle, "database pool errors", "full-chunked").job
        assert job.chunks_total > 1 and local.stores.jobs.traces.trace(job.id) == []


def test_a_trace_that_cannot_be_written_never_fails_the_job(monkeypatch) -> None:
    with LocalToolOut(llm=grepping_model(), limits=SMALL) as local:

        def outage(job_id: str, events: object) -> None:
            raise BackendUnavailable("redis is down")

        monkeypatch.setattr(local.stores.jobs.traces, "add_trace", outage)
        job = local.extract(local.store(LOG).handle, "connection pool incidents", "read-grep").job
    assert job.status is JobStatus.SUCCEEDED and job.agent_tool_calls > 0
    assert "connection pool exhausted" in (job.result or "")
