"""Client mistakes get a 4xx in the one error shape, never a 500 (in-process: no socket needed)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from extraction.texts.results import unknown_handle_text
from infra.errors import BackendUnavailable
from infra.stores.jobs import JobStatus
from tests.fixtures.api_server import api_settings, assert_error, build_test_app
from workers.testing import RecordingDispatcher

pytestmark = pytest.mark.twin("client mistakes refused before any blob is written or read")

UNKNOWN = "00000000-0000-4000-8000-000000000000"


def new_output(client: TestClient, body: bytes = b"line one\nline two\n") -> tuple[str, str]:
    session = client.post("/v1/sessions").json()["id"]
    upload = client.post(f"/v1/sessions/{session}/outputs", content=body)
    assert upload.status_code == 201, upload.text
    return session, upload.json()["handle"]


def extract(client: TestClient, **body: Any):
    return client.post("/v1/extractions", json=body)


# --- routing-level errors ---------------------------------------------------------------------
def test_unknown_route_and_wrong_method_use_the_error_shape(client: TestClient) -> None:
    assert_error(client.get("/v1/nope"), 404, "not_found")
    response = client.put("/v1/sessions")
    assert_error(response, 405, "method_not_allowed")
    assert "POST" in response.headers["allow"]


def test_an_unexpected_exception_is_a_bare_500(inproc) -> None:
    def boom() -> None:
        raise RuntimeError("secret internals")

    inproc.app.add_api_route("/boom", boom)
    error = assert_error(inproc.client.get("/boom"), 500, "internal_error")
    assert "secret" not in error["message"]


# --- extraction request body ------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        {"handle": UNKNOWN, "extract": ""},
        {"handle": UNKNOWN, "extract": "   \n\t"},
        {"handle": UNKNOWN, "extract": "x", "mode": "fast"},
        {"handle": UNKNOWN, "extract": "x", "mode": None},
        {"handle": UNKNOWN, "extract": "x", "extra": 1},
        {"handle": UNKNOWN},
        {"extract": "x"},
        {"handle": "not-a-uuid", "extract": "x"},
        {"handle": UNKNOWN, "extract": 5},
        {"handle": 12, "extract": "x"},
        {"handle": UNKNOWN, "extract": "x" * 101},
    ],
)
def test_bad_extraction_bodies_are_422(client: TestClient, body: dict[str, Any]) -> None:
    error = assert_error(extract(client, **body), 422, "validation_error")
    assert error["details"]["errors"], error


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b'{"handle": ', "application/json"),
        (b"not json at all", "application/json"),
        (b"[1, 2]", "application/json"),
        (b"", "application/json"),
        (b'{"handle": "x"}', "text/plain"),
        (b"\xff\xfe", "application/json"),
    ],
)
def test_malformed_json_bodies_are_422(client: TestClient, content: bytes, content_type: str) -> None:
    assert_error(
        client.post("/v1/extractions", content=content, headers={"content-type": content_type}), 422, "validation_error"
    )


def test_too_long_extract_names_the_field(client: TestClient) -> None:
    error = assert_error(extract(client, handle=UNKNOWN, extract="y" * 101), 422)
    assert error["details"]["errors"][0]["loc"] == ["body", "extract"]


def test_unknown_handle_is_404_with_the_agent_facing_text(client: TestClient) -> None:
    error = assert_error(extract(client, handle=UNKNOWN, extract="the errors"), 404, "not_found")
    assert error["details"]["tool_result"] == unknown_handle_text(UNKNOWN)
    assert error["details"]["handle"] == UNKNOWN


def test_a_deleted_output_is_an_unknown_handle(client: TestClient) -> None:
    _, handle = new_output(client)
    assert client.delete(f"/v1/outputs/{handle}").status_code == 204
    error = assert_error(extract(client, handle=handle, extract="x"), 404)
    assert error["details"]["tool_result"] == unknown_handle_text(handle)


# --- ids in paths -----------------------------------------------------------------------------
ID_ROUTES = [
    ("GET", "/v1/sessions/{}"),
    ("DELETE", "/v1/sessions/{}"),
    ("GET", "/v1/sessions/{}/extractions"),
    ("POST", "/v1/sessions/{}/outputs"),
    ("GET", "/v1/outputs/{}"),
    ("GET", "/v1/outputs/{}/content"),
    ("DELETE", "/v1/outputs/{}"),
    ("GET", "/v1/extractions/{}"),
    ("POST", "/v1/extractions/{}/cancel"),
]


@pytest.mark.parametrize(("method", "path"), ID_ROUTES)
@pytest.mark.parametrize("bad_id", ["abc", "123", "00000000-0000-4000-8000-00000000000Z", "%20", "0" * 400])
def test_malformed_ids_are_422_everywhere(client: TestClient, method: str, path: str, bad_id: str) -> None:
    response = client.request(method, path.format(bad_id), content=b"x")
    error = assert_error(response, 422, "validation_error")
    assert error["details"]["errors"][0]["loc"][0] == "path"


def test_path_traversal_attempts_are_plain_404s(client: TestClient) -> None:
    for path in ["/v1/outputs/..%2F..%2Fetc%2Fpasswd/content", "/v1/outputs/../../etc/passwd", "/v1/sessions/%2e%2e"]:
        assert client.get(path).status_code in (404, 422)
        assert_error(client.get(path), client.get(path).status_code)


@pytest.mark.parametrize(("method", "path"), ID_ROUTES)
def test_well_formed_unknown_ids_are_404_everywhere(client: TestClient, method: str, path: str) -> None:
    assert_error(client.request(method, path.format(uuid.uuid4()), content=b"x"), 404)


# --- upload metadata and query parameters -------------------------------------------------------
def test_tool_args_that_are_not_json_are_422_naming_the_field(client: TestClient) -> None:
    session = client.post("/v1/sessions").json()["id"]
    url = f"/v1/sessions/{session}/outputs"
    error = assert_error(client.post(url, content=b"data", headers={"X-Tool-Args": "{not json"}), 422)
    assert error["details"]["errors"][0]["loc"] == ["header", "x-tool-args"]
    error = assert_error(client.post(url, content=b"data", params={"tool_args": "[1,"}), 422)
    assert error["details"]["errors"][0]["loc"] == ["query", "tool_args"]
    assert client.get(f"/v1/sessions/{session}").json()["outputs"] == []


def test_bad_store_policy_and_empty_body(client: TestClient) -> None:
    session = client.post("/v1/sessions").json()["id"]
    url = f"/v1/sessions/{session}/outputs"
    assert_error(client.post(url, content=b"data", params={"store": "sometimes"}), 422)
    assert_error(client.post(url, content=b""), 400, "invalid_input")
    assert client.get(f"/v1/sessions/{session}").json()["outputs"] == []


@pytest.mark.parametrize("wait", ["-1", "abc", "31", "nan", "inf"])
def test_bad_wait_values_are_422(client: TestClient, wait: str) -> None:
    assert_error(client.get(f"/v1/extractions/{UNKNOWN}", params={"wait": wait}), 422)


def test_garbage_range_headers_serve_the_whole_output(client: TestClient) -> None:
    _, handle = new_output(client, b"0123456789")
    for header in [b"bytes=9-3", b"bytes=abc", b"pages=1-2", b"bytes=0-1,4-5", "bytes=é-".encode(), b"\xff"]:
        response = client.get(f"/v1/outputs/{handle}/content", headers={"Range": header})
        assert (response.status_code, response.content) == (200, b"0123456789"), header
    assert_error(
        client.get(f"/v1/outputs/{handle}/content", headers={"Range": "bytes=10-"}), 416, "range_not_satisfiable"
    )


# --- backends ---------------------------------------------------------------------------------
def test_a_broker_outage_fails_the_job_and_answers_503(inproc) -> None:
    session, handle = new_output(inproc.client)
    inproc.dispatcher.error = BackendUnavailable("broker down", backend="broker")
    response = extract(inproc.client, handle=handle, extract="x")
    assert_error(response, 503, "backend_unavailable")
    assert response.headers["retry-after"]
    [job] = inproc.client.get(f"/v1/sessions/{session}/extractions").json()["items"]
    assert job["status"] == JobStatus.FAILED
    assert "broker down" in job["error"]


def test_redis_down_is_503_with_retry_after(redis_url: str) -> None:
    settings = api_settings("redis://127.0.0.1:1/0", "memory://")
    app = build_test_app(settings, RecordingDispatcher())
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.post("/v1/sessions")
        assert_error(response, 503, "backend_unavailable")
        assert response.headers["retry-after"]
        assert client.get("/healthz").status_code == 200
