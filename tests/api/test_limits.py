"""The per-tenant limit on live extraction jobs.

429 with Retry-After in the error shape, counted per tenant, freed as jobs end.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStatus
from tests.fixtures.api_server import ApiServer, assert_error
from tests.fixtures.tenants import KEY_A, KEY_B, bearer, keys_mode

LIMIT = 2
pytestmark = pytest.mark.parametrize("api_server", [keys_mode(max_concurrent_jobs_per_tenant=LIMIT)], indirect=True)


def stored_handle(client: httpx.Client) -> tuple[str, str]:
    session = client.post("/v1/sessions").json()["id"]
    return session, client.post(f"/v1/sessions/{session}/outputs", content=b"ERROR a\nok\n").json()["handle"]


def submit(client: httpx.Client, handle: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return client.post("/v1/extractions", json={"handle": handle, "extract": "errors"}, headers=headers)


def fill(client: httpx.Client) -> tuple[str, str, list[str]]:
    session, handle = stored_handle(client)
    return session, handle, [submit(client, handle).json()["id"] for _ in range(LIMIT)]


def test_one_job_over_the_limit_is_a_429_with_retry_after(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer(KEY_A)) as client:
        session, handle, _ = fill(client)
        response = submit(client, handle)
        error = assert_error(response, 429, "too_many_requests")
        assert int(response.headers["retry-after"]) > 0
        assert error["details"]["limit"] == LIMIT
        assert len(client.get(f"/v1/sessions/{session}/extractions").json()["items"]) == LIMIT
    assert len(api_server.dispatcher.submitted) == LIMIT


def test_the_limit_is_per_tenant(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer(KEY_A)) as a:
        fill(a)
    with api_server.client(headers=bearer(KEY_B)) as b:
        _, handle = stored_handle(b)
        assert submit(b, handle).status_code == 202


def test_a_job_that_ends_frees_its_slot(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer(KEY_A)) as client:
        _, handle, job_ids = fill(client)
        assert client.post(f"/v1/extractions/{job_ids[0]}/cancel").status_code == 200
        assert submit(client, handle).status_code == 202
        api_server.services.jobs.records.finish(job_ids[1], JobStatus.SUCCEEDED, result="done")  # as a worker would
        assert submit(client, handle).status_code == 202
        assert_error(submit(client, handle), 429)


def test_deleting_the_session_frees_its_jobs_slots(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer(KEY_A)) as client:
        session, _, _ = fill(client)
        assert client.delete(f"/v1/sessions/{session}").status_code == 204
        _, handle = stored_handle(client)
        assert submit(client, handle).status_code == 202


def test_a_job_that_could_not_be_queued_holds_no_slot(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer(KEY_A)) as client:
        _, handle = stored_handle(client)
        api_server.dispatcher.error = BackendUnavailable("broker down", backend="broker")
        for _ in range(LIMIT + 1):
            assert_error(submit(client, handle), 503)
        api_server.dispatcher.error = None
        assert submit(client, handle).status_code == 202


def test_a_429_is_not_kept_for_its_idempotency_key(api_server: ApiServer) -> None:
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    with api_server.client(headers=bearer(KEY_A)) as client:
        _, handle, job_ids = fill(client)
        assert_error(submit(client, handle, headers), 429)
        client.post(f"/v1/extractions/{job_ids[0]}/cancel")
        assert submit(client, handle, headers).status_code == 202
