"""API keys over real HTTP: every /v1 route wants `Authorization: Bearer <key>`, the probes and docs do not.

Missing, malformed and unknown keys are all a 401 in the error shape with a Bearer challenge; a
key acts for its tenant; dev mode switches authentication off and says so loudly at start-up.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from extraction.errors import InvalidInput
from tests.fixtures.api_server import ApiServer, api_settings, assert_error
from tests.fixtures.tenants import KEY_A, KEY_B, TENANT_A, TENANT_B, bearer, keys_mode

KEYED = pytest.mark.parametrize("api_server", [keys_mode()], indirect=True)

OPEN_ROUTES = ["/healthz", "/readyz", "/metrics", "/docs", "/openapi.json"]


def v1_operations(openapi: dict[str, Any]) -> list[tuple[str, str]]:
    """Every /v1 operation with its path parameters filled by random UUIDs."""
    fill = lambda path: re.sub(r"\{[^}]+\}", lambda _: str(uuid.uuid4()), path)  # noqa: E731
    return [
        (method.upper(), fill(path))
        for path, item in openapi["paths"].items()
        if path.startswith("/v1/")
        for method in item
    ]


def challenge(response: httpx.Response) -> str:
    assert_error(response, 401, "unauthorized")
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer "), value
    return value


@KEYED
def test_every_v1_route_refuses_a_request_without_a_key(api_server: ApiServer) -> None:
    with api_server.client() as client:
        operations = v1_operations(client.get("/openapi.json").json())
        assert len(operations) >= 12
        for method, path in operations:
            response = client.request(
                method, path, json={"handle": str(uuid.uuid4()), "extract": "x"} if method == "POST" else None
            )
            assert 'error="' not in challenge(response), (method, path)


BAD_BODY = b'{"handle": "not json'
"""Unparseable as JSON, as form data and as anything else a route reads."""


def v1_templates(openapi: dict[str, Any]) -> list[tuple[str, str]]:
    """Every /v1 operation with every path parameter malformed (a 422 before any store is asked)."""
    fill = lambda path: re.sub(r"\{[^}]+\}", "not-a-uuid", path)  # noqa: E731
    return [
        (method.upper(), fill(path))
        for path, item in openapi["paths"].items()
        if path.startswith("/v1/")
        for method in item
    ]


@KEYED
@pytest.mark.parametrize("credentials", [{}, bearer("toolout_not-a-real-key"), {"Authorization": "Basic x"}])
@pytest.mark.parametrize("content_type", ["application/json", "multipart/form-data; boundary=x", "text/plain"])
def test_no_valid_key_is_a_401_before_any_422(api_server: ApiServer, credentials: dict, content_type: str) -> None:
    """The key is checked before the body, path and query are: a caller without one learns nothing else."""
    with api_server.client(headers=credentials) as client:
        operations = v1_operations(client.get("/openapi.json").json())
        templates = v1_templates(client.get("/openapi.json").json())
        assert len(templates) >= 12
        for method, path in [*operations, *templates]:
            response = client.request(
                method, f"{path}?limit=x&offset=-5&wait=x", content=BAD_BODY, headers={"Content-Type": content_type}
            )
            assert response.status_code == 401, (method, path, response.text)
            challenge(response)


@KEYED
def test_with_a_valid_key_a_bad_body_is_still_a_422(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer(KEY_A)) as client:
        response = client.post("/v1/sessions/not-a-uuid/outputs", content=BAD_BODY)
        assert_error(response, 422, "validation_error")
        response = client.post("/v1/extractions", content=BAD_BODY, headers={"Content-Type": "application/json"})
        assert_error(response, 422, "validation_error")


@pytest.mark.parametrize(
    "header",
    [
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "Bearer =abc",
        "Bearer two words",
        "Token abc",
        "Bearer " + "k" * 600,
        "Bearer k\u00e9y",
        "Bearerkey",
    ],
)
@KEYED
def test_a_malformed_authorization_header_is_a_401(api_server: ApiServer, header: str) -> None:
    with api_server.client() as client:
        response = client.post("/v1/sessions", headers={"Authorization": header.encode("utf-8")})
    assert 'error="invalid_request"' in challenge(response)


@KEYED
def test_an_unknown_key_is_a_401_that_names_no_tenant(api_server: ApiServer) -> None:
    with api_server.client(headers=bearer("toolout_not-a-real-key")) as client:
        response = client.get(f"/v1/sessions/{uuid.uuid4()}")
    assert 'error="invalid_token"' in challenge(response)
    assert TENANT_A not in response.text and TENANT_B not in response.text


@KEYED
def test_a_key_acts_for_its_tenant(api_server: ApiServer) -> None:
    for key, tenant in ((KEY_A, TENANT_A), (KEY_B, TENANT_B)):
        with api_server.client(headers=bearer(key)) as client:
            assert client.post("/v1/sessions").json()["tenant"] == tenant


@KEYED
def test_the_scheme_name_is_case_insensitive(api_server: ApiServer) -> None:
    with api_server.client(headers={"Authorization": f"bearer  {KEY_A}"}) as client:
        assert client.post("/v1/sessions").status_code == 201


@KEYED
@pytest.mark.parametrize("path", OPEN_ROUTES)
def test_probes_metrics_and_docs_stay_open(api_server: ApiServer, path: str) -> None:
    with api_server.client() as client:
        assert client.get(path).status_code == 200


@KEYED
def test_a_key_created_in_redis_works_until_revoked(api_server: ApiServer) -> None:
    store = api_server.services.api_keys
    key, info = store.create("globex")
    with api_server.client(headers=bearer(key)) as client:
        assert client.post("/v1/sessions").json()["tenant"] == "globex"
        store.revoke(info.key_hash[:12])
        challenge(client.post("/v1/sessions"))


@KEYED
def test_the_openapi_document_puts_every_v1_route_behind_the_bearer_scheme(api_server: ApiServer) -> None:
    with api_server.client() as client:
        openapi = client.get("/openapi.json").json()
    schemes = openapi["components"]["securitySchemes"]
    assert [scheme for scheme in schemes.values() if scheme == {**scheme, "type": "http", "scheme": "bearer"}]
    for path, item in openapi["paths"].items():
        for method, op in item.items():
            secured = bool(op.get("security"))
            assert secured == path.startswith("/v1/"), (method, path)
            assert ("401" in op["responses"]) == secured, (method, path)


# --- start-up ---------------------------------------------------------------------------------
def test_dev_mode_serves_everyone_as_the_dev_tenant(api_server: ApiServer) -> None:
    with api_server.client(headers={"Authorization": "Basic whatever"}) as client:
        assert client.post("/v1/sessions").json()["tenant"] == "dev"


def start(settings_overrides: dict[str, Any], redis_url: str) -> None:
    with TestClient(create_app(api_settings(redis_url, "memory://", **settings_overrides))):
        pass


@pytest.mark.usefixtures("redis_client")
def test_dev_mode_is_announced_as_a_warning(redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="toolout.api.auth"):
        start({"auth_mode": "dev"}, redis_url)
    [record] = [r for r in caplog.records if r.name == "toolout.api.auth"]
    assert record.levelno == logging.WARNING and "AUTHENTICATION IS OFF" in record.getMessage()


@pytest.mark.usefixtures("redis_client")
def test_keys_mode_without_any_key_warns_and_with_keys_only_informs(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="toolout.api.auth"):
        start({"auth_mode": "keys"}, redis_url)
        start(keys_mode(), redis_url)
    levels = [(r.levelno, "no API key" in r.getMessage()) for r in caplog.records if r.name == "toolout.api.auth"]
    assert levels == [(logging.WARNING, True), (logging.INFO, False)]


@pytest.mark.usefixtures("redis_client")
def test_a_raw_key_in_the_settings_stops_the_start(redis_url: str) -> None:
    with pytest.raises(InvalidInput, match="sha256"):
        start({"auth_mode": "keys", "api_keys": {KEY_A: TENANT_A}}, redis_url)
