"""R5 — tenant isolation over real HTTP, real Redis and a local blob store.

Tenant B holds a valid key but none of tenant A's objects: whatever B does with A's session,
handle or job (see, read, grep, extract from, cancel, list, delete, upload into) answers a 404 that
is byte for byte the answer for an id that never existed, once the id itself is masked; nothing
of A's changes, and A can still do all of it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.fixtures.api_server import ApiServer, assert_error
from tests.fixtures.tenants import KEY_A, KEY_B, bearer, keys_mode

pytestmark = pytest.mark.parametrize("api_server", [keys_mode()], indirect=True)

OUTPUT = b"boot ok\nERROR disk full on /var\nretrying\nERROR disk full again\n"


@dataclass
class Owned:
    """Tenant A's session, stored output and queued job."""

    session: str
    handle: str
    job: str


@dataclass
class Op:
    name: str
    method: str
    path: str
    kind: str  # which id the path (or body) names: session, handle or job
    params: dict[str, Any] | None = None
    content: bytes | None = None
    body: bool = False
    headers: dict[str, str] | None = None
    payload: Any = None

    def send(self, client: httpx.Client, target: str) -> httpx.Response:
        json = {"handle": target, "extract": "every ERROR line"} if self.body else self.payload
        return client.request(
            self.method,
            self.path.format(id=target),
            params=self.params,
            content=self.content,
            json=json,
            headers=self.headers,
        )


OPS = [
    Op("see session", "GET", "/v1/sessions/{id}", "session"),
    Op("list session jobs", "GET", "/v1/sessions/{id}/extractions", "session"),
    Op("upload into session", "POST", "/v1/sessions/{id}/outputs", "session", content=b"B's bytes"),
    Op("delete session", "DELETE", "/v1/sessions/{id}", "session"),
    Op("see output", "GET", "/v1/outputs/{id}", "handle"),
    Op("read content", "GET", "/v1/outputs/{id}/content", "handle"),
    Op("read a range", "GET", "/v1/outputs/{id}/content", "handle", headers={"Range": "bytes=0-9"}),
    Op("read lines", "GET", "/v1/outputs/{id}/lines", "handle", params={"offset": 1, "limit": 10}),
    Op("grep", "GET", "/v1/outputs/{id}/grep", "handle", params={"pattern": "ERROR"}),
    Op("delete output", "DELETE", "/v1/outputs/{id}", "handle"),
    Op("extract from handle", "POST", "/v1/extractions", "handle", body=True),
    Op("list variables", "GET", "/v1/sessions/{id}/variables", "session"),
    Op("see a variable", "GET", "/v1/sessions/{id}/variables/logs_1", "session"),
    Op("resolve a reference", "POST", "/v1/sessions/{id}/resolve", "session", payload={"value": "$logs_1"}),
    Op("resolve a stream", "POST", "/v1/sessions/{id}/resolve-stream", "session", content=b"see $logs_1"),
    Op("variable instructions", "GET", "/v1/sessions/{id}/instructions", "session"),
    Op("list files", "GET", "/v1/sessions/{id}/files", "session"),
    Op("buffer_ops", "POST", "/v1/sessions/{id}/buffer_ops", "session", payload={"operation": "list"}),
    Op("peek", "GET", "/v1/sessions/{id}/variables/logs_1/peek", "session"),
    Op("read", "GET", "/v1/sessions/{id}/variables/logs_1/read", "session", params={"start_line": 1, "end_line": 2}),
    Op("search", "GET", "/v1/sessions/{id}/search", "session", params={"target": "ERROR"}),
    Op(
        "export",
        "POST",
        "/v1/sessions/{id}/variables/logs_1/export",
        "session",
        payload={"destination": "out.md"},
    ),
    Op(
        "route into a variable",
        "POST",
        "/v1/sessions/{id}/outputs",
        "session",
        content=b"x",
        params={"output": "variable:logs_1"},
    ),
    Op("see job", "GET", "/v1/extractions/{id}", "job"),
    Op("long-poll job", "GET", "/v1/extractions/{id}", "job", params={"wait": 0.2}),
    Op("cancel job", "POST", "/v1/extractions/{id}/cancel", "job"),
    Op("read a job's trace", "GET", "/v1/extractions/{id}/trace", "job"),
    Op("follow a job's events", "GET", "/v1/extractions/{id}/events", "job"),
]


@pytest.fixture()
def owned(api_server: ApiServer) -> Owned:
    with api_server.client(headers=bearer(KEY_A)) as a:
        session = a.post("/v1/sessions").json()["id"]
        handle = a.post(f"/v1/sessions/{session}/outputs", content=OUTPUT, headers={"X-Tool-Name": "logs"}).json()[
            "handle"
        ]
        job = a.post("/v1/extractions", json={"handle": handle, "extract": "every ERROR line"}).json()["id"]
    return Owned(session, handle, job)


def masked(response: httpx.Response, target: str) -> tuple[int, str, str]:
    """What a client can observe, with the id it asked about masked out."""
    return response.status_code, response.headers.get("content-type", ""), response.text.replace(target, "<ID>")


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_another_tenants_object_is_indistinguishable_from_an_unknown_one(
    api_server: ApiServer, owned: Owned, op: Op
) -> None:
    target, unknown = getattr(owned, op.kind), str(uuid.uuid4())
    with api_server.client(headers=bearer(KEY_B)) as b:
        foreign, missing = op.send(b, target), op.send(b, unknown)
    assert_error(foreign, 404)
    assert masked(foreign, target) == masked(missing, unknown)
    assert sorted(foreign.headers) == sorted(missing.headers)


def test_tenant_b_changes_nothing_and_tenant_a_still_has_everything(api_server: ApiServer, owned: Owned) -> None:
    with api_server.client(headers=bearer(KEY_B)) as b:
        for op in OPS:
            op.send(b, getattr(owned, op.kind))
        own_session = b.post("/v1/sessions").json()["id"]
        assert b.get(f"/v1/sessions/{own_session}/extractions").json()["items"] == []
    assert api_server.dispatcher.submitted == [owned.job]  # B's extraction attempt queued nothing

    with api_server.client(headers=bearer(KEY_A)) as a:
        assert a.get(f"/v1/sessions/{owned.session}").json()["outputs"] == [owned.handle]
        assert [v["name"] for v in a.get(f"/v1/sessions/{owned.session}/variables").json()["items"]] == ["logs_1"]
        assert a.get(f"/v1/sessions/{owned.session}/files").json()["items"] == []
        assert a.get(f"/v1/outputs/{owned.handle}/content").content == OUTPUT
        assert "ERROR disk full on /var" in a.get(f"/v1/outputs/{owned.handle}/lines").text
        assert (
            a.get(
                f"/v1/outputs/{owned.handle}/grep", params={"pattern": "ERROR"}, headers={"Accept": "application/json"}
            ).json()["matches"]
            == 2
        )
        assert [job["id"] for job in a.get(f"/v1/sessions/{owned.session}/extractions").json()["items"]] == [owned.job]
        assert a.get(f"/v1/extractions/{owned.job}").json()["status"] == "queued"
        assert a.post("/v1/extractions", json={"handle": owned.handle, "extract": "again"}).status_code == 202
        assert a.post(f"/v1/extractions/{owned.job}/cancel").json()["status"] == "canceled"
        assert a.delete(f"/v1/outputs/{owned.handle}").status_code == 204
        assert a.delete(f"/v1/sessions/{owned.session}").status_code == 204
