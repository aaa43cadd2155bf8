"""The chunk plan cache: a kept plan is exactly the plan planning makes, keyed by all it depends on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from infra.blobstore.memory import MemoryBlobStore
from infra.planning import plans as job_planning
from infra.planning.plans import plan_fresh, plan_key, plan_output_chunks
from infra.stores.records import memory_record_stores
from tests.workers.conftest import store_output

LINES = "".join(
    f"2026-01-01T00:00:{i % 60:02d} worker-{i % 7} handled request {i} in {i % 97} ms é€\n" for i in range(3000)
)


@pytest.fixture()
def rt() -> SimpleNamespace:
    """What planning and `store_output` use of a runtime: the records and the blobs."""
    return SimpleNamespace(records=memory_record_stores(session_ttl_seconds=600), blobs=MemoryBlobStore())


@pytest.mark.parametrize(("budget", "overlap"), [(300, 0.1), (1000, 0.1), (1000, 0.0), (5000, 0.25)])
def test_a_kept_plan_is_the_plan_planning_makes(rt: SimpleNamespace, budget: int, overlap: float) -> None:
    output = store_output(rt, LINES.encode())
    fresh = plan_fresh(rt.blobs, output, budget, overlap)
    first = plan_output_chunks(rt.blobs, rt.records, output, budget, overlap)
    kept = rt.records.plans.chunk_plan(output, plan_key(output, budget, overlap))
    assert kept is not None and job_planning.decode_plan(kept) == fresh == first
    rt.blobs.delete(output.index_key)  # a second plan must come from the cache: the index is gone
    again = plan_output_chunks(rt.blobs, rt.records, output, budget, overlap)
    assert [c.model_dump_json() for c in again] == [c.model_dump_json() for c in fresh]


def test_each_budget_overlap_and_content_has_its_own_plan(rt: SimpleNamespace) -> None:
    output = store_output(rt, LINES.encode())
    other = store_output(rt, LINES.replace("request", "reply").encode())
    keys = {plan_key(output, 1000, 0.1), plan_key(output, 1001, 0.1), plan_key(output, 1000, 0.15)}
    assert len(keys | {plan_key(other, 1000, 0.1)}) == 4
    for budget in (1000, 1001):
        assert plan_output_chunks(rt.blobs, rt.records, output, budget, 0.1) == plan_fresh(
            rt.blobs, output, budget, 0.1
        )
    assert plan_output_chunks(rt.blobs, rt.records, other, 1000, 0.1) == plan_fresh(rt.blobs, other, 1000, 0.1)


def test_the_planners_code_is_part_of_the_key(rt: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deployment with another planner never reads the plans of the old one."""
    output = store_output(rt, LINES.encode())
    before = plan_key(output, 1000, 0.1)
    monkeypatch.setattr(job_planning, "planner_version", lambda: "another-planner")
    assert plan_key(output, 1000, 0.1) != before


def test_an_unreadable_kept_plan_is_planned_again(rt: SimpleNamespace, caplog: pytest.LogCaptureFixture) -> None:
    output = store_output(rt, LINES.encode())
    rt.records.plans.keep_chunk_plan(output, plan_key(output, 1000, 0.1), "{not json")
    assert plan_output_chunks(rt.blobs, rt.records, output, 1000, 0.1) == plan_fresh(rt.blobs, output, 1000, 0.1)
    assert "unreadable kept chunk plan" in caplog.text


def test_an_inline_output_is_planned_without_the_cache(rt: SimpleNamespace) -> None:
    """Its bytes are in its record: planning them costs less than a round trip, and it owns no extra storage."""
    stored = store_output(rt, LINES[:600].encode())
    inline = stored.model_copy(update={"inline": LINES[:600].encode(), "index_key": None, "lines_key": None})
    rt.records.outputs.put_output(inline)
    chunks = plan_output_chunks(rt.blobs, rt.records, inline, 300, 0.1)
    assert chunks == plan_fresh(rt.blobs, inline, 300, 0.1) and len(chunks) >= 1
    assert rt.records.plans.chunk_plan(inline, plan_key(inline, 300, 0.1)) is None
