"""The service slice end to end: real HTTP API, real Celery worker process, real Redis, the offline
model over HTTP through litellm, on both blob stores (local directory and S3: SeaweedFS)."""

from __future__ import annotations

import httpx
import pytest

from extraction.texts.results import unknown_handle_text
from tests.fixtures.redis_cluster import LocalCluster
from tests.fixtures.stack import Stack
from toolout.client import ToolOutAPIError
from toolout.devstack import datasets

pytestmark = pytest.mark.integration


@pytest.fixture(params=["local", "s3", "cluster"])
def stack(request: pytest.FixtureRequest) -> Stack:
    """The slice on each blob store, and with its state on a 3-primary Redis Cluster (issue 22)."""
    return request.getfixturevalue(f"{request.param}_stack")


FILLER = "".join(
    f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z INFO inventory[3] synced batch {i} of catalog\n"
    for i in range(60_000)
)
FACT = "2026-11-01T11:11:11Z ERROR payments[9] settlement file rejected by bank: checksum mismatch in batch 4471"


def planted_log() -> bytes:
    third = len(FILLER) * 2 // 3
    cut = FILLER.index("\n", third) + 1
    return (FILLER[:cut] + FACT + "\n" + FILLER[cut:]).encode()


def assert_error_shape(response: httpx.Response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"} and error["message"]
    if code:
        assert error["code"] == code
    return error


def test_upload_extract_poll_finds_the_planted_fact_with_progress(stack: Stack) -> None:
    with stack.client() as client:
        session = client.create_session()
        meta = client.store(session, planted_log(), tool_name="logs.fetch", tool_args='{"service": "payments"}')
        assert meta["oversized"] and meta["message"].startswith(f"Tool output is too large ({meta['bytes']} bytes, ")
        submitted = httpx.post(
            f"{stack.api_url}/v1/extractions",
            json={
                "handle": meta["handle"],
                "extract": "settlement file rejected by the bank: checksum mismatch",
                "mode": "full-chunked",
            },
        )
        assert submitted.status_code == 202
        assert (
            submitted.headers["Location"] == f"/v1/extractions/{submitted.json()['id']}"
            and submitted.headers["Retry-After"]
        )
        seen: list[tuple[int, int]] = []
        job = client.wait(
            submitted.json()["id"],
            timeout=180,
            on_progress=lambda j: seen.append((j["chunks_done"], j["chunks_total"])),
        )
    assert job["status"] == "succeeded", job
    assert job["result"].startswith(
        f"ABSTRACT FROM TOOL OUTPUT logs.fetch WITH HANDLE {meta['handle']}, STRATEGY:full-chunked:\n\n"
    )
    assert FACT in job["result"]
    assert job["chunks_total"] > 1 and job["chunks_done"] == job["chunks_total"]
    assert any(0 < done < total for done, total in seen), f"no intermediate progress observed in {seen}"
    # one chunk holds the fact, the others answer NO RELEVANT DATA FOUND (no room in a reduce): no reduce call
    reduces = sum(answers > 1 for level in job["reduce_tree"] for answers in level)
    assert job["usage"]["calls"] == job["chunks_total"] + reduces and job["usage"]["input_tokens"] > meta["tokens"]


def test_deleting_a_session_removes_its_blobs_and_jobs(stack: Stack) -> None:
    blobs = stack.blobs()
    with stack.client() as client:
        session = client.create_session()
        handle = client.store(session, planted_log()[:200_000])["handle"]
        job = client.submit(handle, "checksum mismatch", "truncate")
        client.wait(job["id"], timeout=60)
        assert blobs.exists(f"sessions/{session}/{handle}")
        client.delete_session(session)
        assert not blobs.exists(f"sessions/{session}/{handle}")
        assert not blobs.exists(f"sessions/{session}/{handle}.tokidx")
        with pytest.raises(ToolOutAPIError) as gone:
            client.job(job["id"])
        assert gone.value.status == 404
        with pytest.raises(ToolOutAPIError):
            client.output(handle)


def test_bad_input_gets_the_documented_4xx_shape(stack: Stack) -> None:
    url = stack.api_url
    with stack.client() as client:
        session = client.create_session()
        handle = client.store(session, b"x" * 50_000)["handle"]
    unknown = "7f1d9c7e-3c2a-4d7e-9f00-000000000000"
    error = assert_error_shape(httpx.post(f"{url}/v1/extractions", json={"handle": unknown, "extract": "x"}), 404)
    assert error["details"]["tool_result"] == unknown_handle_text(unknown)
    assert_error_shape(httpx.post(f"{url}/v1/extractions", json={"handle": handle, "extract": "   "}), 422)
    assert_error_shape(
        httpx.post(f"{url}/v1/extractions", json={"handle": handle, "extract": "x", "mode": "magic"}), 422
    )
    assert_error_shape(
        httpx.post(f"{url}/v1/extractions", content=b'{"handle": ', headers={"Content-Type": "application/json"}), 422
    )
    assert_error_shape(httpx.get(f"{url}/v1/extractions/not-a-job"), 422)
    assert_error_shape(httpx.get(f"{url}/v1/extractions/{unknown}"), 404)


def test_an_oversize_upload_is_refused_and_nothing_is_stored(stack: Stack) -> None:
    limit = stack.settings().max_upload_bytes
    blobs = stack.blobs()
    with stack.client() as client:
        session = client.create_session()
        blocks = (b"y" * (1 << 20) for _ in range(limit // (1 << 20) + 2))
        response = httpx.post(f"{stack.api_url}/v1/sessions/{session}/outputs", content=blocks, timeout=60)
        assert_error_shape(response, 413, "payload_too_large")
        assert httpx.get(f"{stack.api_url}/v1/sessions/{session}").status_code == 200
    assert blobs.delete_prefix(f"sessions/{session}/") == 0


def test_auto_queries_a_20_mb_json_array_with_sql(stack: Stack) -> None:
    """Issue 19's target: the demo's orders JSON goes to `query`, which finds the planted order for
    ≤ 20,000 input tokens (full-chunked reads ~7 M); the tables and the SQL run are on the job."""
    order = datasets.ORDER_NEEDLE
    with stack.client() as client:
        session = client.create_session()
        meta = client.store(
            session, datasets.json_orders(20 * 10**6), tool_name="orders_api.list", content_type="application/json"
        )
        job = client.wait(client.submit(meta["handle"], order.request, "auto")["id"], timeout=300)
        client.delete_session(session)
    assert meta["lines"] == 1 and job["status"] == "succeeded", job
    assert job["mode_used"] == "query" and job["routing_reason"].startswith("auto: structured data (json)")
    assert order.needle in job["result"] and "card declined" in job["result"]
    assert job["usage"]["input_tokens"] <= 20_000 and job["query_tables"][0].startswith("records (")
    assert len(job["queries"]) == 1 and "ILIKE '%ord-77731%'" in job["queries"][0]


def test_the_cluster_is_sound_after_the_slice(redis_cluster: LocalCluster) -> None:
    """What an operator runs after a deploy: every slot covered, every node agreeing on the slot map."""
    check = redis_cluster.cluster_check()
    assert check.returncode == 0 and "[OK] All 16384 slots covered." in check.stdout, check.stdout + check.stderr
    assert "[ERR]" not in check.stdout and "[WARNING]" not in check.stdout, check.stdout
