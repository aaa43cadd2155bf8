"""Small HTTP helpers for the variables, routing and buffer_ops tests (a session, an upload)."""

from __future__ import annotations

import json
from typing import Any

import httpx

JSON_TYPE = {"Content-Type": "application/json"}


def new_session(client: httpx.Client) -> str:
    return str(client.post("/v1/sessions").raise_for_status().json()["id"])


def upload(
    client: httpx.Client,
    session: str,
    content: bytes | str | Any,
    *,
    tool: str = "tool",
    headers: dict[str, str] | None = None,
    **params: Any,
) -> httpx.Response:
    """POST one output; a dict or list is sent as JSON (`Content-Type: application/json`)."""
    sent_headers = {"X-Tool-Name": tool, **(headers or {})}
    if not isinstance(content, (bytes, str)):
        content = json.dumps(content)
        sent_headers = {**JSON_TYPE, **sent_headers}
    return client.post(f"/v1/sessions/{session}/outputs", content=content, headers=sent_headers, params=params)


def stored(response: httpx.Response) -> dict[str, Any]:
    """The body of a successful upload (fails the test with the body otherwise)."""
    assert response.status_code in (200, 201), response.text
    body: dict[str, Any] = response.json()
    return body


def resolve(client: httpx.Client, session: str, value: Any, **extra: Any) -> httpx.Response:
    return client.post(f"/v1/sessions/{session}/resolve", json={"value": value, **extra})


def variables(client: httpx.Client, session: str) -> dict[str, dict[str, Any]]:
    items = client.get(f"/v1/sessions/{session}/variables").raise_for_status().json()["items"]
    return {item["name"]: item for item in items}


def content(client: httpx.Client, handle: str) -> bytes:
    return client.get(f"/v1/outputs/{handle}/content").raise_for_status().content
