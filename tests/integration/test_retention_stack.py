"""A session deleted while its jobs run, and a session whose TTL runs out while its jobs run, leave nothing behind: on a
stack of processes (the API, a Celery worker, a private Redis, the offline model) over file:// and over SeaweedFS
S3, every Redis key (SCAN) and every blob (the store's own listing) is looked at before and after, and none may name
the session, its outputs or its jobs, for jobs of all four strategies, with Idempotency-Keys and a loaded table form.
The Redis keys must also be back to the ones the stack had before (store-wide counters aside).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from infra.settings import Settings
from tests.fixtures.faults import FaultStack, start_fault_stack
from tests.fixtures.leftovers import blob_leftovers, redis_leftovers
from tests.fixtures.servers import unavailable
from tests.integration.test_faults import REQUEST, log_document, wait_terminal
from tests.workers.job.test_query import ORDERS
from toolout.client import ToolOutClient
from toolout.devstack.stack_watch import key_names, wait_for_baseline

pytestmark = pytest.mark.integration

STRATEGIES = ("full-chunked", "read-grep", "query", "truncate")
WORKERS = ("faults-worker-1",)
SWEEP_SECONDS = 0.5
SETTLE_SECONDS = Settings.model_fields["watchdog_interval_seconds"].default
"""How long the canceled tasks still running may take to stop and let go (the watchdog's interval)."""


@pytest.fixture(scope="module", params=["local", "s3"])
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultStack]:
    root = tmp_path_factory.mktemp(f"retention-{request.param}")
    env = {"TOOLOUT_SWEEP_INTERVAL_SECONDS": str(SWEEP_SECONDS)}
    if request.param == "s3":
        options, bucket = request.getfixturevalue("s3_options"), request.getfixturevalue("s3_bucket")
        env |= {
            "TOOLOUT_BLOB_STORE": f"s3://{bucket}/retention-{uuid.uuid4().hex[:8]}",
            "TOOLOUT_S3_ENDPOINT_URL": options["endpoint_url"],
            "TOOLOUT_S3_ACCESS_KEY_ID": options["access_key_id"],
            "TOOLOUT_S3_SECRET_ACCESS_KEY": options["secret_access_key"],
        }
    try:
        started = start_fault_stack(root, env, WORKERS)
    except RuntimeError as exc:
        unavailable(f"the retention stack did not start: {exc}")
    try:
        warm_up(started)
        yield started
    finally:
        started.stop()


def warm_up(stack: FaultStack) -> None:
    """One of each job to its end in a session with a TTL, then deleted: the store-wide keys (usage totals, the
    registries of the per-slot indexes, TTLs' among them) exist before a baseline is taken."""
    with stack.client() as client:
        session = client.create_session(ttl="1h")
        ids = [job["id"] for job in start_jobs(client, session)]
        wait_terminal(client, ids, timeout=180)
        client.delete_session(session)


def start_jobs(client: ToolOutClient, session: str) -> list[dict[str, Any]]:
    """A log and a JSON uploaded with Idempotency-Keys (the JSON's tables are preloaded), and a job of every
    strategy on them, keyed too."""
    log = client.store(session, log_document(), tool_name="logs.fetch", idempotency_key=str(uuid.uuid4()))
    orders = client.store(
        session, ORDERS, tool_name="orders.list", content_type="application/json", idempotency_key=str(uuid.uuid4())
    )
    return [
        client.submit(
            orders["handle"] if mode == "query" else log["handle"],
            REQUEST,
            mode,
            cache=False,
            idempotency_key=str(uuid.uuid4()),
        )
        for mode in STRATEGIES
    ]


def ids_of(session: str, jobs: list[dict[str, Any]]) -> list[str]:
    return [session, *{job["handle"] for job in jobs}, *(job["id"] for job in jobs)]


def store_name(stack: FaultStack) -> str:
    return stack.env["TOOLOUT_BLOB_STORE"].split(":", 1)[0]


def live(client: ToolOutClient, jobs: list[dict[str, Any]]) -> int:
    return sum(client.job(job["id"])["status"] in ("queued", "running") for job in jobs)


def wait_gone(stack: FaultStack, ids: list[str], timeout: float) -> tuple[dict[str, str], list[str], float]:
    """What still names `ids` after at most `timeout` seconds (Redis keys, blobs), and how long it took."""
    redis, blobs, started = stack.redis_server.client(), stack.blobs(), time.monotonic()
    while True:
        keys, left = redis_leftovers(redis, ids), blob_leftovers(blobs, ids)
        if (not keys and not left) or time.monotonic() - started > timeout:
            return keys, left, time.monotonic() - started
        time.sleep(0.25)


def test_a_session_deleted_mid_job_leaves_no_key_and_no_blob(stack: FaultStack) -> None:
    stack.restart_model(latency_ms=300)
    redis = stack.redis_server.client()
    baseline = key_names(redis)
    with stack.client() as client:
        session = client.create_session()
        jobs = start_jobs(client, session)
        time.sleep(0.5)
        in_flight = live(client, jobs)
        assert redis_leftovers(redis, ids_of(session, jobs)), "the run must have keys naming its ids"
        client.delete_session(session)

    keys, blobs, seconds = wait_gone(stack, ids_of(session, jobs), timeout=SETTLE_SECONDS)
    left, _ = wait_for_baseline(redis, baseline, timeout=SETTLE_SECONDS)
    print(f"\n{store_name(stack)}: deleted with {in_flight} of {len(jobs)} jobs live; clean in {seconds:.1f}s")
    assert in_flight >= 2, "the jobs must be in flight when their session goes"
    assert (keys, blobs, left) == ({}, [], set())


def test_a_session_whose_ttl_runs_out_mid_job_leaves_no_key_and_no_blob(stack: FaultStack) -> None:
    stack.restart_model(latency_ms=1500)  # the read-grep agent's turns outlast the TTL
    redis = stack.redis_server.client()
    baseline = key_names(redis)
    with stack.client() as client:
        session = client.create_session(ttl=6)
        deadline = client.session(session)["ttl_expires_at"]
        jobs = start_jobs(client, session)
        time.sleep(max(0.0, deadline - time.time() - 0.5))
        in_flight = live(client, jobs)

    keys, blobs, seconds = wait_gone(stack, ids_of(session, jobs), timeout=SETTLE_SECONDS + 10 * SWEEP_SECONDS)
    left, _ = wait_for_baseline(redis, baseline, timeout=SETTLE_SECONDS)
    print(f"\n{store_name(stack)}: expired with {in_flight} of {len(jobs)} jobs live; clean {seconds:.1f}s after")
    assert in_flight >= 1, "a job must still run when the TTL runs out"
    assert (keys, blobs, left) == ({}, [], set())


def test_an_output_deleted_mid_job_leaves_nothing_of_it_and_the_rest_of_its_session_runs_on(
    stack: FaultStack,
) -> None:
    stack.restart_model(latency_ms=300)
    with stack.client() as client:
        session = client.create_session()
        jobs = start_jobs(client, session)
        doomed = [job for job in jobs if job["mode_requested"] != "query"]
        time.sleep(0.5)
        in_flight = live(client, doomed)
        client.delete_output(doomed[0]["handle"])
        gone_ids = [doomed[0]["handle"], *(job["id"] for job in doomed)]

        keys, blobs, seconds = wait_gone(stack, gone_ids, timeout=SETTLE_SECONDS)
        kept = wait_terminal(client, [job["id"] for job in jobs if job not in doomed], timeout=180)
        assert [job["status"] for job in kept.values()] == ["succeeded"], kept
        assert client.output_usage(jobs[2]["handle"])["calls"] > 0
        client.delete_session(session)
    print(f"\n{store_name(stack)}: output deleted with {in_flight} of its jobs live; clean in {seconds:.1f}s")
    assert in_flight >= 1, "its jobs must be in flight when the output goes"
    assert (keys, blobs) == ({}, [])
    assert wait_gone(stack, ids_of(session, jobs), timeout=SETTLE_SECONDS)[:2] == ({}, [])
