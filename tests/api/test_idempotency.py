"""Idempotency-Key over real HTTP and real Redis, on job creation and on uploads.

Same key + same request → the first response again (status, body, Location), nothing new created;
same key + another request → 422; while the first is in flight → 409; after the TTL → a new one.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.errors import BackendUnavailable
from tests.fixtures.api_server import ApiServer, api_settings, assert_error, serve_api
from tests.fixtures.tenants import KEY_A, KEY_B, bearer, keys_mode
from workers.testing import RecordingDispatcher

OUTPUT = b"ERROR one\nok\nERROR two\n" * 800
"""Above TOOLOUT_INLINE_OUTPUT_MAX_BYTES (16 KiB), so it is stored as a blob the tests can count."""


def key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


def same_response(first: httpx.Response, again: httpx.Response) -> None:
    assert again.status_code == first.status_code
    assert again.content == first.content
    assert again.headers.get("location") == first.headers.get("location")
    assert again.headers["idempotent-replayed"] == "true" and "idempotent-replayed" not in first.headers


@pytest.fixture()
def client(api_server: ApiServer) -> httpx.Client:
    with api_server.client() as client:
        yield client


@pytest.fixture()
def handle(client: httpx.Client) -> str:
    session = client.post("/v1/sessions").json()["id"]
    return client.post(f"/v1/sessions/{session}/outputs", content=OUTPUT).json()["handle"]


def extraction(
    client: httpx.Client, handle: str, headers: dict[str, str], extract: str = "every ERROR line"
) -> httpx.Response:
    return client.post("/v1/extractions", json={"handle": handle, "extract": extract}, headers=headers)


# --- extractions ------------------------------------------------------------------------------
def test_a_retried_extraction_replays_the_first_answer_and_queues_one_job(
    api_server: ApiServer, client: httpx.Client, handle: str
) -> None:
    headers = key()
    first = extraction(client, handle, headers)
    assert first.status_code == 202 and first.headers["location"] == f"/v1/extractions/{first.json()['id']}"
    again = extraction(client, handle, headers)
    same_response(first, again)
    assert again.headers["retry-after"] == first.headers["retry-after"]
    assert api_server.dispatcher.submitted == [first.json()["id"]]


def test_the_body_is_compared_as_json_not_as_bytes(client: httpx.Client, handle: str) -> None:
    headers = {**key(), "Content-Type": "application/json"}
    first = client.post("/v1/extractions", content=f'{{"handle": "{handle}", "extract": "errors"}}', headers=headers)
    again = client.post(
        "/v1/extractions", content=f'{{ "extract":"errors",\n "handle":"{handle}", "mode": "auto" }}', headers=headers
    )
    same_response(first, again)


def test_the_same_key_with_another_body_is_a_422(client: httpx.Client, handle: str) -> None:
    headers = key()
    extraction(client, handle, headers)
    error = assert_error(extraction(client, handle, headers, extract="something else"), 422, "idempotency_key_reused")
    assert "different request" in error["message"]


def test_the_same_key_on_another_route_is_a_422(client: httpx.Client, handle: str) -> None:
    headers = key()
    assert extraction(client, handle, headers).status_code == 202
    session = client.get(f"/v1/outputs/{handle}").json()["session_id"]
    assert_error(
        client.post(f"/v1/sessions/{session}/outputs", content=OUTPUT, headers=headers), 422, "idempotency_key_reused"
    )


def test_without_a_key_every_request_creates_a_job(api_server: ApiServer, client: httpx.Client, handle: str) -> None:
    ids = {extraction(client, handle, {}).json()["id"] for _ in range(2)}
    assert len(ids) == 2 == len(api_server.dispatcher.submitted)


def test_errors_are_not_kept_so_a_retry_runs_again(api_server: ApiServer, client: httpx.Client, handle: str) -> None:
    headers = key()
    api_server.dispatcher.error = BackendUnavailable("broker down", backend="broker")
    assert_error(extraction(client, handle, headers), 503)
    api_server.dispatcher.error = None
    retried = extraction(client, handle, headers)
    assert retried.status_code == 202 and "idempotent-replayed" not in retried.headers
    unknown = key()
    assert_error(extraction(client, str(uuid.uuid4()), unknown), 404)
    assert extraction(client, handle, unknown).status_code == 202  # the 404 left the key unused


def test_an_expired_key_creates_a_new_job(client: httpx.Client, handle: str, redis_client) -> None:
    headers = key()
    first = extraction(client, handle, headers)
    kept = list(redis_client.scan_iter("toolout:{idem:*"))
    assert kept and all(0 < redis_client.ttl(name) <= 24 * 3600 for name in kept)
    redis_client.delete(*kept)  # what the TTL does when it runs out
    later = extraction(client, handle, headers)
    assert later.status_code == 202 and later.json()["id"] != first.json()["id"]


@pytest.mark.parametrize("api_server", [keys_mode()], indirect=True)
def test_keys_are_scoped_per_tenant(api_server: ApiServer) -> None:
    headers, created = key(), []
    for tenant_key in (KEY_A, KEY_B):
        with api_server.client(headers=bearer(tenant_key)) as client:
            session = client.post("/v1/sessions").json()["id"]
            handle = client.post(f"/v1/sessions/{session}/outputs", content=OUTPUT).json()["handle"]
            response = extraction(client, handle, headers)
            assert response.status_code == 202 and "idempotent-replayed" not in response.headers
            created.append(response.json()["id"])
    assert len(set(created)) == 2


class GatedDispatcher(RecordingDispatcher):
    """Holds the first submission until released, so a duplicate arrives while it is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def submit(self, job_id: str) -> None:
        self.entered.set()
        self.release.wait(10)
        super().submit(job_id)


@pytest.mark.usefixtures("redis_client")
def test_a_duplicate_while_the_first_is_in_flight_is_a_409(redis_url: str, local_blob_url: str) -> None:
    submitter, headers = GatedDispatcher(), key()
    with serve_api(api_settings(redis_url, local_blob_url), dispatcher=submitter) as server, server.client() as client:
        session = client.post("/v1/sessions").json()["id"]
        handle = client.post(f"/v1/sessions/{session}/outputs", content=OUTPUT).json()["handle"]
        results: list[httpx.Response] = []

        def send_first() -> None:
            with server.client() as other:
                results.append(extraction(other, handle, headers))

        first = threading.Thread(target=send_first)
        first.start()
        assert submitter.entered.wait(10)
        assert_error(extraction(client, handle, headers), 409, "idempotency_key_in_use")
        submitter.release.set()
        first.join(10)
        same_response(results[0], extraction(client, handle, headers))
        assert len(submitter.submitted) == 1


# --- uploads ----------------------------------------------------------------------------------
def blob_files(api_server: ApiServer) -> list[Path]:
    root = Path(api_server.settings.blob_store.removeprefix("file://"))
    return sorted(path for path in root.rglob("*") if path.is_file() and path.suffix not in {".tokidx", ".lines"})


def upload(
    client: httpx.Client, session: str, headers: dict[str, str], content: bytes = OUTPUT, **params: Any
) -> httpx.Response:
    return client.post(
        f"/v1/sessions/{session}/outputs", content=content, headers={"X-Tool-Name": "logs", **headers}, params=params
    )


def test_a_replayed_upload_stores_nothing_new(api_server: ApiServer, client: httpx.Client) -> None:
    session, headers = client.post("/v1/sessions").json()["id"], key()
    first = upload(client, session, headers)
    assert first.status_code == 201 and first.headers["location"] == f"/v1/outputs/{first.json()['handle']}"
    again = upload(client, session, headers)
    same_response(first, again)
    assert len(blob_files(api_server)) == 1
    assert client.get(f"/v1/sessions/{session}").json()["outputs"] == [first.json()["handle"]]
    assert client.get(f"/v1/sessions/{session}/variables").json()["items"][0]["handle"] == first.json()["handle"]


@pytest.mark.parametrize(
    "change",
    [
        {"content": OUTPUT + b"!"},
        {"headers": {"X-Tool-Name": "other-tool"}},
        {"headers": {"X-Tool-Args": '{"n": 1}'}},
        {"params": {"store": "if_oversized"}},
        {"params": {"name": "other"}},
        {"params": {"output": "variable:routed"}},
        {"headers": {"X-Output": "file:out.md", "X-Write-Mode": "replace"}},
    ],
    ids=["body", "tool name", "tool args", "store policy", "name", "output", "write mode"],
)
def test_an_upload_with_the_same_key_but_another_request_is_a_422(
    api_server: ApiServer, client: httpx.Client, change: dict[str, Any]
) -> None:
    session, headers = client.post("/v1/sessions").json()["id"], key()
    assert upload(client, session, headers).status_code == 201
    response = upload(
        client,
        session,
        {**headers, **change.get("headers", {})},
        change.get("content", OUTPUT),
        **change.get("params", {}),
    )
    assert_error(response, 422, "idempotency_key_reused")
    assert len(blob_files(api_server)) == 1


def test_an_inline_answer_is_replayed_too(client: httpx.Client) -> None:
    session, headers = client.post("/v1/sessions").json()["id"], key()
    first = upload(client, session, headers, b"small output", store="if_oversized")
    assert first.status_code == 200 and first.json()["stored"] is False
    same_response(first, upload(client, session, headers, b"small output", store="if_oversized"))


# --- the header itself ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    ["k" * 256, "has space", "tab\there", "", "caf\u00e9"],
    ids=["too long", "space", "tab", "empty", "non-ascii"],
)
def test_a_malformed_idempotency_key_is_a_422(client: httpx.Client, handle: str, value: str) -> None:
    response = client.post(
        "/v1/extractions", json={"handle": handle, "extract": "x"}, headers={"Idempotency-Key": value.encode("utf-8")}
    )
    error = assert_error(response, 422, "validation_error")
    assert error["details"]["errors"][0]["loc"][:2] == ["header", "Idempotency-Key"]


def test_a_key_of_255_visible_characters_is_fine(client: httpx.Client, handle: str) -> None:
    assert extraction(client, handle, {"Idempotency-Key": "~!" + "k" * 253}).status_code == 202


def test_the_sdk_sends_the_key_so_a_retried_submit_and_upload_create_nothing_new(api_server: ApiServer) -> None:
    from toolout.client import ToolOutClient

    with ToolOutClient(api_server.url) as sdk:
        session = sdk.create_session()
        first = sdk.store(session, OUTPUT, idempotency_key="upload-1")
        assert sdk.store(session, OUTPUT, idempotency_key="upload-1")["handle"] == first["handle"]
        job = sdk.submit(first["handle"], "every ERROR line", idempotency_key="submit-1")
        again = sdk.submit(first["handle"], "every ERROR line", idempotency_key="submit-1")
    assert again["id"] == job["id"] and api_server.dispatcher.submitted == [job["id"]]
    assert len(blob_files(api_server)) == 1
