"""Sessions over real HTTP: create, read, delete (blobs, jobs and records go), idle sweeping."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from api.lifecycle import sweep_idle_sessions
from infra.redis import keys
from tests.fixtures.api_server import ApiServer, assert_error
from tests.fixtures.servers import wait_until

DATA = b"alpha\nbeta\ngamma\n" * 1200
"""Above TOOLOUT_INLINE_OUTPUT_MAX_BYTES, so each upload has blobs whose removal the tests check."""


def upload(client: httpx.Client, session: str, data: bytes = DATA) -> str:
    response = client.post(f"/v1/sessions/{session}/outputs", content=data)
    assert response.status_code == 201, response.text
    return response.json()["handle"]


def start_job(client: httpx.Client, handle: str) -> str:
    response = client.post("/v1/extractions", json={"handle": handle, "extract": "the errors"})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def blob_keys(session: str, handle: str) -> list[str]:
    key = f"sessions/{session}/{handle}"
    return [key, f"{key}.tokidx", f"{key}.lines"]


def session_state(
    server: ApiServer, redis_client: Any, session: str, handles: list[str], jobs: list[str]
) -> dict[str, bool]:
    """Which of the session's traces still exist: blobs, output records, job records, the session."""
    blobs = server.services.blobs
    return {
        "blobs": any(blobs.exists(key) for handle in handles for key in blob_keys(session, handle)),
        "outputs": any(redis_client.exists(keys.output(handle)) for handle in handles),
        "jobs": any(redis_client.exists(keys.job(job)) for job in jobs),
        "session": bool(
            redis_client.exists(keys.session(session))
            or redis_client.zscore(keys.sessions_by_last_use(session), session)
        ),
    }


GONE = {"blobs": False, "outputs": False, "jobs": False, "session": False}
PRESENT = {"blobs": True, "outputs": True, "jobs": True, "session": True}


def test_create_and_get_a_session(api_server: ApiServer) -> None:
    with api_server.client() as client:
        created = client.post("/v1/sessions")
        assert created.status_code == 201
        body = created.json()
        assert created.headers["location"] == f"/v1/sessions/{body['id']}" == body["links"]["self"]
        assert body["expires_at"] == body["last_used_at"] + api_server.settings.session_ttl_seconds
        read = client.get(f"/v1/sessions/{body['id']}").json()
        assert (read["id"], read["tenant"], read["outputs"]) == (body["id"], "dev", [])
        assert read["last_used_at"] >= body["last_used_at"]


def test_deleting_a_session_removes_its_blobs_jobs_and_records(store_server: ApiServer, redis_client: Any) -> None:
    with store_server.client() as client:
        session = client.post("/v1/sessions").json()["id"]
        other = client.post("/v1/sessions").json()["id"]
        handles = [upload(client, session), upload(client, session, b"x" * 50_000)]
        kept = upload(client, other)
        jobs = [start_job(client, handles[0]), start_job(client, handles[1])]
        assert session_state(store_server, redis_client, session, handles, jobs) == PRESENT

        assert client.delete(f"/v1/sessions/{session}").status_code == 204

        assert session_state(store_server, redis_client, session, handles, jobs) == GONE
        assert_error(client.get(f"/v1/sessions/{session}"), 404)
        assert_error(client.get(f"/v1/outputs/{handles[0]}"), 404)
        assert_error(client.get(f"/v1/extractions/{jobs[0]}"), 404)
        assert_error(client.get(f"/v1/sessions/{session}/extractions"), 404)
        assert_error(client.delete(f"/v1/sessions/{session}"), 404)
        assert client.get(f"/v1/outputs/{kept}/content").content == DATA


def test_ending_a_session_cancels_its_live_jobs_before_removing_them(api_server: ApiServer, redis_client: Any) -> None:
    """DELETE and the idle sweep alike: tasks still running see a cancel (and their queued work is revoked)
    before the job, its output and its blobs disappear under them."""
    seen: list[tuple[str, str]] = []
    records = api_server.services.jobs.records
    original = records.cancel
    records.cancel = lambda job_id: seen.append((job_id, records.get(job_id).status.value)) or original(job_id)  # type: ignore[method-assign]
    with api_server.client() as client:
        deleted, idle = client.post("/v1/sessions").json()["id"], client.post("/v1/sessions").json()["id"]
        jobs = [start_job(client, upload(client, deleted)), start_job(client, upload(client, idle))]
        finished = start_job(client, upload(client, deleted))
        assert client.post(f"/v1/extractions/{finished}/cancel").status_code == 200
        api_server.dispatcher.revoked.clear()
        seen.clear()
        assert client.delete(f"/v1/sessions/{deleted}").status_code == 204
    redis_client.zadd(
        keys.sessions_by_last_use(idle), {idle: time.time() - api_server.settings.session_ttl_seconds - 1}
    )
    assert sweep_idle_sessions(api_server.services) == 1

    assert seen == [(jobs[0], "queued"), (jobs[1], "queued")]  # the ended job is not canceled again
    assert api_server.dispatcher.revoked == jobs
    assert not any(redis_client.exists(keys.job(job)) for job in [*jobs, finished])


def test_the_session_lists_its_extractions_oldest_first(api_server: ApiServer) -> None:
    with api_server.client() as client:
        session = client.post("/v1/sessions").json()["id"]
        handle = upload(client, session)
        jobs = [start_job(client, handle) for _ in range(3)]
        items = client.get(f"/v1/sessions/{session}/extractions").json()["items"]
    assert [item["id"] for item in items] == jobs
    assert all(item["session_id"] == session and "nonce" not in item for item in items)


def test_the_sweeper_removes_only_idle_sessions(api_server: ApiServer, redis_client: Any) -> None:
    with api_server.client() as client:
        idle, active = client.post("/v1/sessions").json()["id"], client.post("/v1/sessions").json()["id"]
        idle_handle, active_handle = upload(client, idle), upload(client, active)
        idle_job, active_job = start_job(client, idle_handle), start_job(client, active_handle)
    redis_client.zadd(
        keys.sessions_by_last_use(idle), {idle: time.time() - api_server.settings.session_ttl_seconds - 1}
    )

    assert sweep_idle_sessions(api_server.services) == 1

    assert session_state(api_server, redis_client, idle, [idle_handle], [idle_job]) == GONE
    assert session_state(api_server, redis_client, active, [active_handle], [active_job]) == PRESENT
    assert sweep_idle_sessions(api_server.services) == 0


def test_the_background_sweeper_runs_on_its_own(start_server: Callable[..., ApiServer], redis_client: Any) -> None:
    # 3 s, not 1: on a loaded box the upload alone took over a second, and the session was gone before it
    server = start_server(app_options={"sweep_interval": 0.1}, session_ttl_seconds=3)
    with server.client() as client:
        session = client.post("/v1/sessions").json()["id"]
        handle = upload(client, session)
        assert wait_until(lambda: client.get(f"/v1/sessions/{session}").status_code == 404, timeout=0.5) is False
    # the sweep removes blobs first, then the records: wait for all of it, not the first sign
    assert wait_until(
        lambda: session_state(server, redis_client, session, [handle], []) == GONE, timeout=15, interval=0.2
    )
    assert not server.services.blobs.exists(blob_keys(session, handle)[0])
