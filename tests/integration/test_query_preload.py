"""The query strategy's preload on the real service: API and Celery worker processes, real Redis, the
offline model over HTTP. Storing an oversized JSON output keeps its tables without any question (a log
gets none), and the first question then reuses them."""

from __future__ import annotations

import time

import pytest

from infra.blobstore import BlobStore
from infra.stores.records import blob_key
from tests.fixtures.stack import Stack
from toolout.devstack import datasets

pytestmark = pytest.mark.integration

LOG = b"".join(f"2026-11-01T10:00:{i % 60:02d}Z INFO inventory synced batch {i}\n".encode() for i in range(20_000))


def manifest(session: str, handle: str) -> str:
    return f"{blob_key(session, handle)}.duckdb/manifest.json"


def wait_kept(blobs: BlobStore, key: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not blobs.exists(key):
        assert time.monotonic() < deadline, f"no tables kept at {key} after {timeout}s"
        time.sleep(0.1)


def test_storing_a_structured_output_keeps_its_tables_and_the_first_question_reuses_them(local_stack: Stack) -> None:
    blobs, order = local_stack.blobs(), datasets.ORDER_NEEDLE
    orders = b"".join(datasets.json_orders(3 * 10**6))
    with local_stack.client() as client:
        session = client.create_session()
        log = client.store(session, LOG, tool_name="logs.fetch")
        meta = client.store(session, orders, tool_name="orders_api.list", content_type="application/json")
        wait_kept(blobs, manifest(session, meta["handle"]))  # no question was asked
        job = client.wait(client.submit(meta["handle"], order.request, "auto")["id"], timeout=120)
        twin = client.store(session, orders, tool_name="orders_api.list", content_type="application/json")
        wait_kept(blobs, manifest(session, twin["handle"]))  # the same content: its tables copied
        again = client.wait(client.submit(twin["handle"], order.request, "query")["id"], timeout=120)
        assert log["oversized"] and not blobs.exists(manifest(session, log["handle"]))
        client.delete_session(session)
    assert job["status"] == "succeeded" and job["mode_used"] == "query" and order.needle in job["result"], job
    assert job["query_load"] == "reused" and 0 < job["query_bytes_read"] < meta["bytes"]
    assert again["query_load"] == "reused" and order.needle in again["result"]
    assert not blobs.exists(manifest(session, meta["handle"])), "deleting the output deletes its tables"
    worker_log = "".join(p.read_text() for p in local_stack.log_dir.glob("*worker*"))
    assert f"output {twin['handle']}: preload copied" in worker_log
