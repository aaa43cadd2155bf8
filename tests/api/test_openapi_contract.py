"""What schemathesis (tests/api/test_fuzz.py) found, pinned as plain regressions: the OpenAPI document
names every status a route answers with, in the error shape the API really sends, and a 405 lists
every method of the path."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from tests.fixtures.api_server import api_settings, assert_error

pytestmark = pytest.mark.twin("the HTTP contract (methods, body decoding) before anything is stored")

UNKNOWN = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app(api_settings("redis://127.0.0.1:6379/15", "memory://")).openapi()


def operations(openapi: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, op) for path, item in openapi["paths"].items() for method, op in item.items()]


def test_every_documented_error_has_the_error_shape_schema(openapi: dict[str, Any]) -> None:
    """FastAPI's default 422 (`HTTPValidationError`) is not what the handler sends; ours is `ErrorBody`."""
    assert "HTTPValidationError" not in openapi["components"]["schemas"]
    for method, path, op in operations(openapi):
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")) and "content" in response and "application/json" in response["content"]:
                assert response["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorBody"
                }, (method, path, status)
    body = openapi["components"]["schemas"]["ErrorBody"]
    assert body["required"] == ["error"]
    assert set(openapi["components"]["schemas"]["ErrorDetail"]["required"]) == {"code", "message", "details"}


def test_every_route_with_an_id_in_its_path_documents_404_and_422(openapi: dict[str, Any]) -> None:
    for method, path, op in operations(openapi):
        if "{" in path:
            assert {"404", "422"} <= set(op["responses"]), (method, path, sorted(op["responses"]))


def test_a_json_body_that_is_not_utf8_is_a_documented_400(client: TestClient, openapi: dict[str, Any]) -> None:
    response = client.post("/v1/extractions", content=b"\xff\xfe{", headers={"Content-Type": "application/json"})
    assert_error(response, 400, "bad_request")
    assert "400" in openapi["paths"]["/v1/extractions"]["post"]["responses"]


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("OPTIONS", f"/v1/sessions/{UNKNOWN}", "DELETE, GET"),
        ("PUT", f"/v1/outputs/{UNKNOWN}", "DELETE, GET"),
        ("PATCH", "/v1/sessions", "POST"),
        ("DELETE", "/v1/extractions", "POST"),
    ],
)
def test_a_405_lists_every_method_of_the_path(client: TestClient, method: str, path: str, allowed: str) -> None:
    """Starlette names only the first matching route's methods; GET and DELETE of one path are two routes."""
    response = client.request(method, path)
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == allowed
