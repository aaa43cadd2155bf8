"""Degrade, don't sink, on the real stack: API, a Celery worker and the offline model as processes.

The offline model is restarted before each test with a fault aimed at one part of the document
(`offline_model/config.py`: `fault`, `fault_on`, `fault_chunks`, `fault_marker`), so what
fails is known in advance and the same on every attempt.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
import redis

from infra.redis import keys
from infra.stores.jobs import MAX_REDUCE_LEVELS
from tests.fixtures.faults import FaultStack

pytestmark = pytest.mark.integration

FACT = "2026-11-01T11:11:11Z ERROR payments[9] settlement file rejected by bank: checksum mismatch in batch 4471"
REQUEST = "the settlement file rejected by the bank (checksum mismatch)"
MARKER = "ZX-POISON-41"
MARKER_LINE = f"2026-11-01T10:30:00Z INFO inventory[3] synced batch {MARKER} of catalog, timestamp kept"
"""Matches an inventory request better than any filler line, so its chunk's answer is this line alone."""
INVENTORY = "every synced batch of the inventory catalog, with its timestamp"
"""Every filler line matches: each map answer is as long as the model may write (what reduce plans assume)."""
TWENTY_CHUNKS = 1150
"""Filler lines that make exactly 20 chunks at the stack's 3000-token context, whatever the job's nonce, counting
the line numbers chunks are shown with (20 chunks from about 1130 to 1180 lines; twice 1150 makes 40)."""


def log_document(lines: int, *, fact_at: float = 0.85, marker_at: float | None = None) -> tuple[bytes, int]:
    """Filler log lines with the planted fact; optionally a marker line. Returns the bytes and the marker's offset."""
    filler = [
        f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z INFO inventory[3] synced batch {i} of catalog"
        for i in range(lines)
    ]
    filler.insert(int(lines * fact_at), FACT)
    if marker_at is not None:
        filler.insert(int(lines * marker_at), MARKER_LINE)
    text = "\n".join(filler) + "\n"
    return text.encode(), text.find(MARKER)


def run_job(stack: FaultStack, document: bytes, extract: str, **knobs: object) -> dict[str, Any]:
    stack.restart_model(**knobs)
    with stack.client() as client:
        session = client.create_session()
        handle = client.store(session, document, tool_name="logs.fetch", tool_args='{"service": "payments"}')["handle"]
        # cache=False: the same document and request recur under other faults; each must run
        job = client.wait(client.submit(handle, extract, "full-chunked", cache=False)["id"], timeout=120)
    job["handle"] = handle
    return job


def failed_chunks_metric(stack: FaultStack) -> dict[str, float]:
    text = httpx.get(f"{stack.api_url}/metrics", timeout=10).text
    found = re.findall(r'^toolout_chunks_failed_total\{stage="(\w+)"\} (\S+)$', text, re.M)
    return {stage: float(value) for stage, value in found}


def warning_line(job: dict[str, Any]) -> str:
    return job["result"].split("\n\n")[1]


def test_one_chunk_of_twenty_without_a_wrapper_twice_is_named_and_the_fact_elsewhere_is_found(
    model_faults_stack: FaultStack,
) -> None:
    """Both filters at once: chunk 7 AND the marker, so the test fails if the marker is not in chunk 7."""
    stack = model_faults_stack
    document, marker = log_document(TWENTY_CHUNKS, marker_at=6.5 / 20)
    before = failed_chunks_metric(stack)
    job = run_job(stack, document, REQUEST, fault="no_wrapper", fault_chunks=7, fault_marker=MARKER)
    after = failed_chunks_metric(stack)
    [failed] = job["failed_ranges"]
    print(f"\none chunk of {job['chunks_total']}: {warning_line(job)} ({job['usage']['calls']} calls)")
    assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked" and job["fallback_reason"] is None
    assert (job["chunks_total"], job["chunks_failed"], job["chunks_done"]) == (20, 1, 19)
    assert (failed["level"], failed["index"], failed["chunks"]) == (0, 6, [6])
    assert failed["start"] <= marker < failed["end"] and failed["end"] - failed["start"] < len(document) // 10
    assert job["result"].startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {job['handle']}, STRATEGY:full-chunked:\n\n"
        f"WARNING: 1 of 20 chunks could not be read (bytes {failed['start']:,}-{failed['end'] - 1:,}: no valid "
        "final report after 2 attempt(s)); the answer below does not cover it.\n\n"
    )
    assert FACT in job["result"]
    assert after["map"] - before.get("map", 0) == 1 and after["reduce"] == before.get("reduce", 0)
    settled = settled_parts(stack, job["id"])
    # the reduce tree is planned for full-length answers (400 tokens: five per reduce call at this window)
    assert job["usage"]["calls"] == 19 + 2 + settled["reduces"], "19 maps, the failed chunk twice, the reduces"
    assert (settled["maps"], settled["failures"]) == (19, {"0:6": "1"}), "chunk 7 settled once, as a failure"


def test_thirty_percent_of_the_chunks_failing_takes_the_truncate_fallback(model_faults_stack: FaultStack) -> None:
    """A provider error after litellm's retry on 6 of 20 chunks: more than a quarter, so the job falls back."""
    document, _ = log_document(TWENTY_CHUNKS)
    job = run_job(model_faults_stack, document, REQUEST, fault=500, fault_chunks="1,4,7,10,13,16")
    print(f"\n30% failing: {job['fallback_reason']}")
    assert job["status"] == "succeeded" and job["mode_used"] == "truncate"
    assert job["chunks_total"] == 20 and job["chunks_failed"] == 6
    assert sorted(part["index"] for part in job["failed_ranges"]) == [0, 3, 6, 9, 12, 15]
    assert all(part["reason"].startswith("model call failed (InternalServerError)") for part in job["failed_ranges"])
    assert job["fallback_reason"].startswith(
        "6 of 20 chunks could not be read, more than max_failed_chunk_fraction=0.25 allows (first: chunk 1, bytes 0-"
    )
    assert job["result"].startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {job['handle']}, STRATEGY:truncate:\n\n"
        f"WARNING: tool_output fallback to truncate ({job['fallback_reason']}).\n\n"
    )
    assert document[:80].decode() in job["result"]


def test_an_empty_wrapper_on_every_map_is_no_relevant_data_found(model_faults_stack: FaultStack) -> None:
    document, _ = log_document(TWENTY_CHUNKS)
    job = run_job(model_faults_stack, document, REQUEST, fault="empty_wrapper")
    assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked" and job["report"]["found"] is False
    assert job["result"].startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {job['handle']}, STRATEGY:full-chunked:\n\n"
        f"NO RELEVANT DATA FOUND\n\nSearched for: {REQUEST}\n\nWhat the document contains instead: "
    )
    assert (job["chunks_done"], job["chunks_failed"], job["usage"]["calls"]) == (20, 0, 20), "no retry, no reduce"


def test_a_failing_reduce_group_is_retried_then_named_and_the_rest_is_answered(model_faults_stack: FaultStack) -> None:
    """Forty chunks need a recursive reduce (five full answers per reduce call at this window); the group holding
    the marker's answer never answers in a wrapper, the reduces above it (which no longer hold it) do."""
    stack = model_faults_stack
    document, marker = log_document(2 * TWENTY_CHUNKS, marker_at=0.3)
    before = failed_chunks_metric(stack)
    job = run_job(stack, document, INVENTORY, fault="no_wrapper", fault_on="reduce", fault_marker=MARKER)
    after = failed_chunks_metric(stack)
    [group] = job["failed_ranges"]
    print(f"\nreduce group: {warning_line(job)} (reduce level {job['reduce_level']}, {job['usage']['calls']} calls)")
    assert job["status"] == "succeeded" and job["mode_used"] == "full-chunked" and job["reduce_level"] >= 1
    assert group["level"] == 1 and group["start"] <= marker < group["end"]
    assert 1 < len(group["chunks"]) == job["chunks_failed"] <= job["chunks_total"] // 4
    assert job["chunks_done"] == job["chunks_total"]
    first, last = group["chunks"][0] + 1, group["chunks"][-1] + 1
    assert warning_line(job) == (
        f"WARNING: {len(group['chunks'])} of {job['chunks_total']} chunks could not be read (bytes "
        f"{group['start']:,}-{group['end'] - 1:,} (chunks {first}-{last}, reduce group {group['index'] + 1} of "
        "level 1): no valid final report after 2 attempt(s)); the answer below does not cover them."
    )
    answer = job["result"].split("\n\n", 2)[2]
    assert "synced batch 0 of catalog" in answer and MARKER not in answer
    assert after["reduce"] - before.get("reduce", 0) == len(group["chunks"])
    settled = settled_parts(stack, job["id"])
    assert settled["failures"] == {f"1:{group['index']}": "1"} and settled["maps"] == job["chunks_total"]
    assert str(group["index"]) not in settled["level 1"], "a failed group never also has an output"
    calls = job["chunks_total"] + settled["reduces"] + 2
    assert job["usage"]["calls"] == calls, (
        "maps, every stored reduce (groups at each level, final), the failed one twice"
    )


def settled_parts(stack: FaultStack, job_id: str) -> dict[str, Any]:
    """What Redis holds for the job: stored map outputs, recorded failures, level-1 reduce outputs, and how many
    reduce outputs it stored at all levels (one call each: the plans here have no one-output groups)."""
    r = redis.Redis.from_url(stack.redis_url, decode_responses=True)
    try:
        return {
            "maps": r.hlen(keys.job_chunks(job_id)),
            "failures": r.hgetall(keys.job_failures(job_id)),
            "level 1": set(r.hkeys(keys.job_reduce(job_id, 1))),
            "reduces": sum(r.hlen(keys.job_reduce(job_id, level)) for level in range(1, MAX_REDUCE_LEVELS + 1)),
        }
    finally:
        r.close()
