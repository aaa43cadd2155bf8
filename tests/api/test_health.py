"""Probes, metrics and the OpenAPI docs."""

from __future__ import annotations

import re

from tests.fixtures.api_server import ApiServer, assert_error


def test_healthz_answers_without_backends(api_server: ApiServer) -> None:
    with api_server.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_is_200_when_redis_blobs_and_a_worker_answer(api_server: ApiServer) -> None:
    with api_server.client() as client:
        response = client.get("/readyz")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ready"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "redis": True,
        "blob_store": True,
        "workers": True,
    }


def test_readyz_is_503_when_no_worker_answers(api_server: ApiServer) -> None:
    api_server.dispatcher.replies = []
    with api_server.client() as client:
        response = client.get("/readyz")
    error = assert_error(response, 503, "backend_unavailable")
    checks = error["details"]["checks"]
    assert (checks["redis"]["ok"], checks["blob_store"]["ok"], checks["workers"]["ok"]) == (True, True, False)
    assert "no Celery worker" in checks["workers"]["detail"]
    assert response.headers["retry-after"]


def test_readyz_reports_a_failing_probe_instead_of_crashing(api_server: ApiServer) -> None:
    api_server.dispatcher.ping_error = ConnectionError("broker unreachable")
    with api_server.client() as client:
        error = assert_error(client.get("/readyz"), 503)
    assert "broker unreachable" in error["details"]["checks"]["workers"]["detail"]


def test_metrics_count_requests_by_route_template_uploads_and_jobs(api_server: ApiServer) -> None:
    with api_server.client() as client:
        session = client.post("/v1/sessions").json()["id"]
        handle = client.post(f"/v1/sessions/{session}/outputs", content=b"x" * 1234).json()["handle"]
        client.get(f"/v1/sessions/{session}")
        client.post("/v1/extractions", json={"handle": handle, "extract": "x"})
        client.get("/v1/no-such-route")
        text = client.get("/metrics").text
    assert 'toolout_http_requests_total{method="GET",route="/v1/sessions/{session_id}",status="200"} 1.0' in text
    assert 'route="<unmatched>",status="404"' in text
    assert session not in text
    assert re.search(r"^toolout_upload_bytes_total 1234\.0$", text, re.M)
    assert re.search(r"^toolout_jobs_submitted_total 1\.0$", text, re.M)
    assert "toolout_http_request_duration_seconds_bucket" in text


def test_openapi_docs_are_served(api_server: ApiServer) -> None:
    with api_server.client() as client:
        assert client.get("/docs").status_code == 200
        spec = client.get("/openapi.json").json()
    assert {
        "/v1/sessions",
        "/v1/sessions/{session_id}/outputs",
        "/v1/extractions",
        "/v1/extractions/{job_id}",
        "/readyz",
    } <= set(spec["paths"])
    upload = spec["paths"]["/v1/sessions/{session_id}/outputs"]["post"]
    assert "text/plain" in upload["requestBody"]["content"]
