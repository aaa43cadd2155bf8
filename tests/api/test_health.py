"""Probes, metrics and the OpenAPI docs."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from infra.llm.probe import ModelProbe
from tests.fixtures.api_server import ApiServer, api_settings, assert_error, serve_api
from toolout.devstack import processes


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
        "model": True,
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


READY_WITHIN = 30.0


@contextmanager
def silent_listener(port: int) -> Iterator[None]:
    """A socket that accepts connections and never answers: a model server that hangs."""
    server = socket.create_server(("127.0.0.1", port), reuse_port=False)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        for conn in [*accepted, server]:
            conn.close()


def poll_readyz(client: httpx.Client, status: int) -> tuple[httpx.Response, float]:
    """Ask /readyz every half second until it answers `status`; returns the answer and how long it took."""
    started = time.monotonic()
    while True:
        response = client.get("/readyz")
        took = time.monotonic() - started
        if response.status_code == status or took > READY_WITHIN:
            return response, took
        time.sleep(0.5)


def test_readyz_sees_the_model_process_stop_hang_and_come_back(
    redis_url: str, local_blob_url: str, tmp_path: Path
) -> None:
    port = processes.free_port()
    model = processes.offline_model(port, {}, tmp_path).start()
    settings = api_settings(redis_url, local_blob_url, model_api_base=f"http://127.0.0.1:{port}/v1")
    try:
        model.wait_ready(60)
        with serve_api(settings, model_probe=ModelProbe.from_settings(settings)) as api, api.client() as client:
            response, _ = poll_readyz(client, 200)
            assert response.status_code == 200 and response.json()["checks"]["model"]["ok"], response.text

            model.stop()
            response, took = poll_readyz(client, 503)
            error = assert_error(response, 503, "backend_unavailable")
            assert took < READY_WITHIN and "openai/toolout-offline" in error["message"], error
            assert not error["details"]["checks"]["model"]["ok"] and error["details"]["checks"]["redis"]["ok"]

            with silent_listener(port):  # the port answers TCP, the server never answers HTTP
                time.sleep(settings.model_probe_cache_seconds)
                response, took = poll_readyz(client, 503)
                error = assert_error(response, 503)
                assert "no answer within" in error["details"]["checks"]["model"]["detail"], error
                assert took < READY_WITHIN and response.elapsed.total_seconds() < 3.5

            model.start().wait_ready(60)
            response, took = poll_readyz(client, 200)
            assert response.status_code == 200 and took < READY_WITHIN, response.text
    finally:
        model.stop()


NAMED_MODEL = {"model": "anthropic/claude-3-5-haiku-latest", "model_api_base": None}


@pytest.mark.parametrize("api_server", [{**NAMED_MODEL, "model_api_key": "sk-ant-test"}], indirect=True)
def test_a_model_without_api_base_is_ready_and_says_it_was_not_probed(api_server: ApiServer) -> None:
    with (
        serve_api(api_server.settings, model_probe=ModelProbe.from_settings(api_server.settings)) as api,
        api.client() as client,
    ):
        check = client.get("/readyz").json()["checks"]["model"]
    assert check["ok"] and "not probed" in check["detail"]


@pytest.mark.parametrize("api_server", [{**NAMED_MODEL, "model_api_key": None}], indirect=True)
def test_a_named_model_with_no_key_anywhere_is_not_ready_and_says_which_variable(api_server: ApiServer, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with (
        serve_api(api_server.settings, model_probe=ModelProbe.from_settings(api_server.settings)) as api,
        api.client() as client,
    ):
        error = assert_error(client.get("/readyz"), 503, "backend_unavailable")
    check = error["details"]["checks"]["model"]
    assert not check["ok"] and "no API key (set ANTHROPIC_API_KEY" in check["detail"], check


def test_healthz_stays_up_while_the_model_is_down(api_server: ApiServer) -> None:
    settings = api_server.settings.model_copy(update={"model_api_base": f"http://127.0.0.1:{processes.free_port()}/v1"})
    with serve_api(settings, model_probe=ModelProbe.from_settings(settings)) as api, api.client() as client:
        assert client.get("/healthz").status_code == 200
        error = assert_error(client.get("/readyz"), 503)
    assert "ConnectError" in error["details"]["checks"]["model"]["detail"]
