"""The API side of webhooks: which callback URLs a job may carry, and the tenant's signing secret."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from infra.webhooks.delivery import tenant_secret
from tests.fixtures.api_server import api_settings, assert_error, build_test_app
from workers.testing import RecordingDispatcher


def app_client(**settings) -> TestClient:
    return TestClient(build_test_app(api_settings("memory://", "memory://", **settings), RecordingDispatcher()))


@pytest.fixture()
def client() -> Iterator[TestClient]:
    with app_client(webhook_secret="master") as client:
        yield client


def handle(client: TestClient) -> str:
    session = client.post("/v1/sessions").json()["id"]
    return client.post(f"/v1/sessions/{session}/outputs", content=b"ERROR one\n").json()["handle"]


def test_a_public_callback_url_is_kept_on_the_job(client: TestClient) -> None:
    job = client.post(
        "/v1/extractions", json={"handle": handle(client), "extract": "e", "callback_url": "https://93.184.216.34/h"}
    )
    assert job.status_code == 202 and job.json()["callback_url"] == "https://93.184.216.34/h"


@pytest.mark.parametrize("url", ["http://localhost/h", "http://10.0.0.8/h", "ftp://93.184.216.34/x", "not a url"])
def test_a_private_or_non_http_callback_url_is_a_422_and_creates_no_job(client: TestClient, url: str) -> None:
    target = handle(client)
    error = assert_error(
        client.post("/v1/extractions", json={"handle": target, "extract": "e", "callback_url": url}), 422
    )
    assert error["code"] == "invalid_callback_url"
    assert client.app.state.services.dispatcher.submitted == []


def test_without_a_secret_the_deployment_refuses_callbacks() -> None:
    with app_client() as client:
        body = {"handle": handle(client), "extract": "e", "callback_url": "https://93.184.216.34/h"}
        assert assert_error(client.post("/v1/extractions", json=body), 422)["code"] == "webhooks_not_configured"
        assert assert_error(client.get("/v1/webhooks/secret"), 422)["code"] == "webhooks_not_configured"


def test_the_secret_route_gives_the_tenants_own_secret(client: TestClient) -> None:
    answer = client.get("/v1/webhooks/secret").json()
    assert answer["secret"] == tenant_secret("master", "dev") and answer["header"] == "X-Toolout-Signature"
