"""Extraction jobs over real HTTP: 202 + Location, the job record, cancel rules, long polling."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from api.routers import extractions
from infra.redis.client import connect
from infra.stores.jobs import JobStatus, redis_job_stores
from tests.api.conftest import InProcess
from tests.fixtures.api_server import ApiServer, assert_error

pytestmark = pytest.mark.twin(
    "the long poll's wake-up on the in-memory job store; real stores run jobs in tests/integration"
)


@pytest.fixture()
def stored(api_server: ApiServer) -> tuple[str, str]:
    """A session with one stored output: (session id, handle)."""
    with api_server.client() as client:
        session = client.post("/v1/sessions").json()["id"]
        response = client.post(
            f"/v1/sessions/{session}/outputs",
            content=b"ERROR one\nok\nERROR two\n",
            headers={"X-Tool-Name": "read_logs"},
        )
    return session, response.json()["handle"]


def create_job(client: httpx.Client, handle: str, **extra: str) -> httpx.Response:
    return client.post("/v1/extractions", json={"handle": handle, "extract": "  every ERROR line  ", **extra})


def test_creating_an_extraction_queues_a_job(api_server: ApiServer, stored: tuple[str, str]) -> None:
    session, handle = stored
    with api_server.client() as client:
        response = create_job(client, handle, mode="read-grep")
        assert response.status_code == 202, response.text
        job = response.json()
        assert response.headers["location"] == f"/v1/extractions/{job['id']}" == job["links"]["self"]
        assert response.headers["retry-after"] == "1"
        assert (job["status"], job["handle"], job["session_id"], job["tool_name"]) == (
            "queued",
            handle,
            session,
            "read_logs",
        )
        assert (job["extract"], job["mode_requested"], job["tenant"]) == ("every ERROR line", "read-grep", "dev")
        assert "nonce" not in job
        assert api_server.dispatcher.submitted == [job["id"]]
        assert client.get(response.headers["location"]).json() == job
        assert [item["id"] for item in client.get(f"/v1/sessions/{session}/extractions").json()["items"]] == [job["id"]]
    record = api_server.services.jobs.records.get(job["id"])
    assert len(record.nonce) == 16 and record.deadline_at > record.created_at


def test_mode_defaults_to_auto(api_server: ApiServer, stored: tuple[str, str]) -> None:
    with api_server.client() as client:
        assert create_job(client, stored[1]).json()["mode_requested"] == "auto"


def test_mode_query_is_accepted_and_shown_with_its_tables_and_queries(
    api_server: ApiServer, stored: tuple[str, str]
) -> None:
    with api_server.client() as client:
        job = create_job(client, stored[1], mode="query").json()
    assert (job["mode_requested"], job["query_tables"], job["queries"]) == ("query", [], [])


def test_cancel_a_live_job_is_idempotent(api_server: ApiServer, stored: tuple[str, str]) -> None:
    with api_server.client() as client:
        job_id = create_job(client, stored[1]).json()["id"]
        first = client.post(f"/v1/extractions/{job_id}/cancel")
        assert first.status_code == 200 and first.json()["status"] == "canceled"
        again = client.post(f"/v1/extractions/{job_id}/cancel")
        assert again.status_code == 200 and again.json()["status"] == "canceled"
    assert api_server.services.jobs.records.finish(job_id, JobStatus.SUCCEEDED, result="late") is False


def test_cancel_a_finished_job_is_409(api_server: ApiServer, stored: tuple[str, str]) -> None:
    with api_server.client() as client:
        job_id = create_job(client, stored[1]).json()["id"]
        api_server.services.jobs.records.finish(job_id, JobStatus.SUCCEEDED, result="ABSTRACT ...")
        error = assert_error(client.post(f"/v1/extractions/{job_id}/cancel"), 409, "conflict")
        assert error["details"]["status"] == "succeeded"
        assert client.get(f"/v1/extractions/{job_id}").json()["status"] == "succeeded"


def test_long_poll_returns_as_soon_as_the_job_finishes(api_server: ApiServer, stored: tuple[str, str]) -> None:
    with api_server.client() as client:
        job_id = create_job(client, stored[1]).json()["id"]
        finisher = threading.Timer(
            0.5,
            api_server.services.jobs.records.finish,
            args=(job_id, JobStatus.SUCCEEDED),
            kwargs={"result": "the abstract"},
        )
        started = time.monotonic()
        finisher.start()
        response = client.get(f"/v1/extractions/{job_id}", params={"wait": 20})
        elapsed = time.monotonic() - started
    finisher.join()
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["result"]) == ("succeeded", "the abstract")
    assert "retry-after" not in response.headers
    assert 0.45 <= elapsed < 3, elapsed


def test_a_long_poll_is_woken_by_a_job_another_process_ends(
    api_server: ApiServer, stored: tuple[str, str], redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end is announced over Redis (`finish.lua` publishes it), not found by re-reading: with re-reads
    further apart than the wait, only the announcement can answer before the wait runs out."""
    monkeypatch.setattr(extractions, "REREAD_SECONDS", 60.0)
    worker_side = redis_job_stores(connect(redis_url), ttl_seconds=60, deadline_seconds=60)  # its own connection
    with api_server.client() as client:
        job_id = create_job(client, stored[1]).json()["id"]
        finisher = threading.Timer(
            0.3, worker_side.records.finish, args=(job_id, JobStatus.SUCCEEDED), kwargs={"result": "A"}
        )
        finisher.start()
        response = client.get(f"/v1/extractions/{job_id}", params={"wait": 20})
    finisher.join()
    assert (response.json()["status"], response.json()["result"]) == ("succeeded", "A")
    assert response.elapsed.total_seconds() < 10  # woken at ~0.3 s; unannounced, it would answer at 20 s


def test_a_long_poll_on_the_in_memory_stores_is_woken_by_the_end(
    inproc: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server: the twin's finish listeners announce the end (what the embedded mode runs on)."""
    monkeypatch.setattr(extractions, "REREAD_SECONDS", 60.0)
    session = inproc.client.post("/v1/sessions").json()["id"]
    handle = inproc.client.post(f"/v1/sessions/{session}/outputs", content=b"ERROR one\n").json()["handle"]
    job_id = create_job(inproc.client, handle).json()["id"]  # type: ignore[arg-type]
    jobs = inproc.app.state.services.jobs
    finisher = threading.Timer(0.3, jobs.records.finish, args=(job_id, JobStatus.FAILED), kwargs={"error": "boom"})
    finisher.start()
    started = time.monotonic()
    response = inproc.client.get(f"/v1/extractions/{job_id}", params={"wait": 20})
    finisher.join()
    assert (response.json()["status"], response.json()["error"]) == ("failed", "boom")
    assert time.monotonic() - started < 10  # woken at ~0.3 s; unannounced, it would answer at 20 s


def test_long_poll_gives_up_after_wait_seconds(api_server: ApiServer, stored: tuple[str, str]) -> None:
    with api_server.client() as client:
        job_id = create_job(client, stored[1]).json()["id"]
        started = time.monotonic()
        response = client.get(f"/v1/extractions/{job_id}", params={"wait": 0.6})
        elapsed = time.monotonic() - started
        immediate = client.get(f"/v1/extractions/{job_id}")
    assert response.json()["status"] == "queued" and response.headers["retry-after"] == "1"
    assert 0.55 <= elapsed < 2, elapsed
    assert immediate.status_code == 200


def test_long_polls_do_not_block_each_other(api_server: ApiServer, stored: tuple[str, str]) -> None:
    """More waiting clients than the server has threads (40): they must all wait concurrently."""
    with api_server.client() as client:
        job_id = create_job(client, stored[1]).json()["id"]
    clients = [api_server.client() for _ in range(50)]
    results: list[float] = []

    def poll(own: httpx.Client) -> None:
        started = time.monotonic()
        own.get(f"/v1/extractions/{job_id}", params={"wait": 2})
        results.append(time.monotonic() - started)

    threads = [threading.Thread(target=poll, args=(own,)) for own in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for own in clients:
        own.close()
    assert len(results) == 50 and max(results) < 3.8, sorted(results)[-5:]
