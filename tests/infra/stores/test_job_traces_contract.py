"""A job's trace: in order, within its bound, gone with its job.

On Redis, on a Redis Cluster and on the in-memory twin alike.
"""

from __future__ import annotations

from extraction.protocols import Usage
from infra.stores.jobs import JobStores
from infra.stores.jobs.traces import event_json
from tests.infra.stores.conftest import SMALL_TRACE_BOUND, new_job


# --- trace -------------------------------------------------------------------------------------
def test_a_trace_reads_back_in_order_from_any_point(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.traces.add_trace("j1", [event_json({"kind": "map", "chunk": i}) for i in range(3)])
    jobs.fanin.record_chunk_and_settle("j1", 3, "x", Usage(calls=1), trace=[event_json({"kind": "map", "chunk": 3})])
    assert [(e["seq"], e["chunk"]) for e in jobs.traces.trace("j1")] == [(i, i) for i in range(4)]
    assert [e["seq"] for e in jobs.traces.trace("j1", after=2)] == [2, 3] and jobs.traces.trace("j1", after=4) == []
    assert jobs.traces.trace("unknown") == []


def test_a_trace_under_its_bound_keeps_every_event(jobs: JobStores) -> None:
    new_job(jobs)
    event = event_json({"kind": "map", "answer": "x" * 900})
    for _ in range(40):
        jobs.traces.add_trace("j1", [event, event])
    assert [e["kind"] for e in jobs.traces.trace("j1")] == ["map"] * 80


def test_a_small_bound_cuts_the_trace_once_and_nothing_follows(small_trace_jobs: JobStores) -> None:
    jobs = small_trace_jobs
    new_job(jobs)
    event = event_json({"kind": "map", "answer": "y" * 300})
    for _ in range(10):
        jobs.traces.add_trace("j1", [event])
    kept = jobs.traces.trace("j1")
    assert [e["kind"] for e in kept] == ["map", "map", "map", "truncated"]
    assert kept[-1]["max_bytes"] == SMALL_TRACE_BOUND
    assert sum(len(event_json({k: v for k, v in e.items() if k != "seq"})) for e in kept) <= SMALL_TRACE_BOUND


def test_a_trace_goes_with_its_job_and_a_late_write_leaves_none(jobs: JobStores) -> None:
    new_job(jobs)
    jobs.traces.add_trace("j1", [event_json({"kind": "map"})])
    jobs.records.delete_session_jobs("s1")
    jobs.traces.add_trace("j1", [event_json({"kind": "map"})])  # a step still running after its session ended
    assert jobs.traces.trace("j1") == []
