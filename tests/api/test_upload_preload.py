"""An oversized structured upload asks the dispatcher for a preload (`Dispatcher.preload`); nothing else does."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import InProcess

pytestmark = pytest.mark.twin(
    "which uploads queue a preload (the dispatcher's record); the preload itself runs in tests/integration"
)


def upload(inproc: InProcess, body: bytes, content_type: str = "text/plain", store: str = "always") -> dict:
    session = inproc.client.post("/v1/sessions").json()["id"]
    response = inproc.client.post(
        f"/v1/sessions/{session}/outputs?store={store}",
        content=body,
        headers={"X-Tool-Name": "orders.list", "Content-Type": content_type},
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def test_only_oversized_structured_uploads_are_preloaded(inproc: InProcess) -> None:
    orders = json.dumps([{"id": i, "status": "paid", "note": "x" * 40} for i in range(2000)]).encode()
    csv = b"id,status\n" + b"".join(f"{i},paid\n".encode() for i in range(5000))
    text = b"".join(f"INFO request {i} served\n".encode() for i in range(5000))
    stored = [upload(inproc, orders, "application/json"), upload(inproc, csv, "text/csv"), upload(inproc, text)]
    upload(inproc, b'[{"id": 1}]', "application/json")  # small: inline, loads in milliseconds
    assert all(meta["oversized"] for meta in stored)
    assert [handle for handle, _ in inproc.dispatcher.preloaded] == [stored[0]["handle"], stored[1]["handle"]]
