"""Path-traversal payloads in every id, name and path field of every route, over a real socket.

The fields come from the OpenAPI document, so a route or header added later is covered without
editing this file: every path parameter, a `handle`/`*_id` in a JSON body, and wherever they occur
the headers and query parameters X-Tool-Name / tool_name, X-Tool-Args / tool_args, Range and
Idempotency-Key. Requests are written byte by byte on a socket, because an HTTP client would
normalise `../` away or refuse a NUL before the server ever saw it.

What each field must do with a payload:

* ids (path parameters — a variable `name` too —, `handle` in a body) and tool args: refused, 4xx in the
  error shape;
* a variable name (`name` / `X-Variable-Name`) or a write mode: refused (422) unless valid;
* a file path (`output=file:…` / `X-Output`, an export's `destination`): refused (4xx), or, when it is a
  valid relative path, stored under that path in the session's file space (a name in Redis; the blob
  key stays a UUID);
* a tool name: refused (422) with a control character or past 256 characters, otherwise it is a
  label, stored and echoed verbatim (it never becomes part of a path; blob keys are UUIDs);
* Range: ignored unless it is one well-formed byte range (RFC 9110 allows it, `api/ranges.py`
  chooses it), so the whole output comes back;
* Idempotency-Key: refused (422) unless 1-255 visible ASCII characters; a valid one is opaque (the
  store keeps its sha256): the request succeeds, or, when another route's case already used the same
  key, is the documented 422 `idempotency_key_reused`.

And whatever happened: never a 5xx, the blob root holds only `sessions/<uuid>/<uuid>[.tokidx|.lines]`,
and nothing outside it changed: not the sentinels where `../../etc/passwd` from the root or from a
session directory would land, not the spool directory (no upload left behind).

A NUL in a header value never reaches the app: uvicorn's HTTP parser (h11) answers 400 itself.
CR/LF cannot be put inside a header value at all (it would end the header), so those payloads are
only sent in paths, query strings and bodies.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import redis

from api.app import create_app
from tests.fixtures.api_server import ApiServer, api_settings, serve_api
from tests.fixtures.traversal import TRAVERSAL_PAYLOADS

API_KEY = "toolout-traversal-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
OVERRIDES: dict[str, Any] = {
    "auth_mode": "keys",
    "api_keys": {hashlib.sha256(API_KEY.encode()).hexdigest(): "traversal"},
    "max_upload_bytes": 1 << 20,
    "max_concurrent_jobs_per_tenant": 100_000,
}
CONTENT = b"line one: ERROR disk full\nline two: ok\n"
SENTINEL = b"root:x:0:0:root:/root:/bin/sh\n"
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
BLOB_KEY = re.compile(rf"sessions(/{UUID}(/{UUID}(\.tokidx|\.lines)?)?)?")
MAX_TOOL_NAME_CHARS = 256
IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")

ID_NAMES = {"session_id", "handle", "job_id"}
NAMED_FIELDS = {
    "name": "variable_name",
    "x-variable-name": "variable_name",
    "output": "file_path",
    "x-output": "file_path",
    "write_mode": "write_mode",
    "x-write-mode": "write_mode",
    "x-tool-name": "tool_name",
    "tool_name": "tool_name",
    "x-tool-args": "tool_args",
    "tool_args": "tool_args",
    "range": "range",
    "idempotency-key": "idempotency_key",
}
REQUIRED_QUERY = {"pattern": "ERROR"}
PATH_BODY_FIELDS = {"destination"}
JSON_BODIES: dict[str, dict[str, Any]] = {
    "/v1/sessions/{session_id}/resolve": {"value": "$unknown_1"},
    "/v1/sessions/{session_id}/variables/{name}/export": {"destination": "out.md"},
    "/v1/sessions/{session_id}/buffer_ops": {"operation": "list"},
    "/v1/routing/parse": {"text": "@tools a(output=variable:x)"},
}
"""A valid JSON body for the routes that need one, so a payload in a path or header is what decides."""


# --- which fields exist -----------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    method: str
    path: str
    location: str  # path | query | header | body
    name: str
    kind: str  # id | tool_name | tool_args | range | idempotency_key | variable_name | file_path | write_mode
    raw_body: bool  # the operation's body is the raw tool output (upload) rather than JSON

    @property
    def label(self) -> str:
        return f"{self.method} {self.path} {self.location}:{self.name}"


def fields_of(openapi: dict[str, Any]) -> list[Field]:
    found = []
    for path, item in openapi["paths"].items():
        for method, op in item.items():
            content = (op.get("requestBody") or {}).get("content", {})
            raw = "text/plain" in content or "application/octet-stream" in content
            for param in op.get("parameters", []):
                name, where = param["name"], param["in"]
                if where == "path":
                    found.append(Field(method.upper(), path, "path", name, "id", raw))
                elif name.lower() in NAMED_FIELDS and where in ("query", "header"):
                    found.append(Field(method.upper(), path, where, name, NAMED_FIELDS[name.lower()], raw))
            body = content.get("application/json", {}).get("schema", {})
            ref = body.get("$ref", "").rsplit("/", 1)[-1]
            properties = openapi["components"]["schemas"].get(ref, {}).get("properties", {}) if ref else {}
            found.extend(
                Field(method.upper(), path, "body", name, "id", raw)
                for name in properties
                if name in ID_NAMES or name.endswith("_id")
            )
            found.extend(
                Field(method.upper(), path, "body", name, "file_path", raw)
                for name in properties
                if name in PATH_BODY_FIELDS
            )
    return found


OPENAPI = create_app(api_settings("redis://127.0.0.1:6379/15", "memory://", **OVERRIDES)).openapi()
FIELDS = fields_of(OPENAPI)


def cases() -> Iterator[Any]:
    for field in FIELDS:
        for payload_id, payload in TRAVERSAL_PAYLOADS.items():
            if field.location == "header" and ("\r" in payload or "\n" in payload):
                continue  # cannot be a header value: it would end the header
            yield pytest.param(field, payload, id=f"{field.label}-{payload_id}")


# --- the running API --------------------------------------------------------------------------
@dataclass
class Target:
    server: ApiServer
    root: Path
    blob_root: Path
    session_id: str
    handle: str
    job_id: str
    name: str

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.url.removeprefix("http://").split(":")
        return host, int(port)


@pytest.fixture(scope="module")
def target(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """One API for the module; blob root at <tmp>/var/blobs, with sentinels where an escape would write."""
    redis.Redis.from_url(redis_url).flushdb()
    root = tmp_path_factory.mktemp("traversal")
    blob_root = root / "var" / "blobs"
    for sentinel in (root / "etc" / "passwd", root / "var" / "etc" / "passwd", root / "var" / "sentinel"):
        sentinel.parent.mkdir(parents=True, exist_ok=True)
        sentinel.write_bytes(SENTINEL)
    with serve_api(api_settings(redis_url, f"file://{blob_root}", **OVERRIDES)) as server:
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=10) as client:
            session_id = client.post("/v1/sessions").raise_for_status().json()["id"]
            stored = client.post(f"/v1/sessions/{session_id}/outputs", content=CONTENT).raise_for_status().json()
            handle = stored["handle"]
            job_id = (
                client.post("/v1/extractions", json={"handle": handle, "extract": "the ERROR line"})
                .raise_for_status()
                .json()["id"]
            )
        yield Target(server, root, blob_root, session_id, handle, job_id, stored["name"])
    redis.Redis.from_url(redis_url).flushdb()


def outside_the_blob_root(target: Target) -> dict[str, tuple[int, int, str]]:
    """Every file and directory under the temp root except the blob root: size, mtime, content hash."""
    seen: dict[str, tuple[int, int, str]] = {}
    for folder, dirs, files in os.walk(target.root):
        if Path(folder) == target.blob_root.parent:
            dirs[:] = [d for d in dirs if Path(folder, d) != target.blob_root]
        for name in dirs:
            seen[os.path.relpath(os.path.join(folder, name), target.root) + "/"] = (0, 0, "")
        for name in files:
            path = Path(folder, name)
            info = path.stat()
            seen[str(path.relative_to(target.root))] = (
                info.st_size,
                info.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return seen


def unexpected_blobs(target: Target) -> list[str]:
    entries = [Path(folder, name) for folder, dirs, files in os.walk(target.blob_root) for name in [*dirs, *files]]
    return [
        str(p.relative_to(target.blob_root))
        for p in entries
        if not BLOB_KEY.fullmatch(p.relative_to(target.blob_root).as_posix())
    ]


# --- one raw request --------------------------------------------------------------------------
@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send(
    target: Target, method: str, request_target: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
) -> Answer:
    """Exactly these bytes on the wire (no normalisation, no client-side validation)."""
    host, port = target.address
    head = [
        f"{method} {request_target} HTTP/1.1".encode(),
        f"Host: {host}:{port}".encode(),
        b"Connection: close",
        f"Content-Length: {len(body)}".encode(),
        *(name + b": " + value for name, value in headers),
    ]
    with socket.create_connection((host, port), timeout=15) as sock:
        sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)
        response = http.client.HTTPResponse(sock, method=method)
        response.begin()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())


def in_path(value: str) -> str:
    """What a request line can carry: visible ASCII as is (`../`, `%2f`, `\\` included), the rest percent-encoded."""
    return "".join(ch if 0x21 <= ord(ch) <= 0x7E else quote(ch, safe="") for ch in value)


def request_for(field: Field, payload: str, target: Target) -> tuple[str, str, list[tuple[bytes, bytes]], bytes]:
    ids = {"session_id": target.session_id, "handle": target.handle, "job_id": target.job_id, "name": target.name}
    path = field.path
    for name in re.findall(r"{(\w+)}", path):
        value = in_path(payload) if (field.location, field.name) == ("path", name) else ids[name]
        path = path.replace(f"{{{name}}}", value)
    query = dict(REQUIRED_QUERY) if field.path.endswith("/grep") else {}
    headers = [(b"Authorization", AUTH["Authorization"].encode())]
    value = f"file:{payload}" if field.kind == "file_path" and field.location != "body" else payload
    if field.location == "query":
        query[field.name] = value
    if field.location == "header":
        headers.append((field.name.encode(), value.encode("utf-8")))
    body = b""
    if field.raw_body:
        body = b"an upload probe\nsecond line\n"
    elif field.method in ("POST", "PUT", "PATCH") and (field.path == "/v1/extractions" or field.path in JSON_BODIES):
        document = dict(JSON_BODIES.get(field.path, {"handle": target.handle, "extract": "the ERROR line"}))
        if field.location == "body":
            document[field.name] = payload
        body = json.dumps(document).encode()
        headers.append((b"Content-Type", b"application/json"))
    if query:
        path += "?" + "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in query.items())
    return field.method, path, headers, body


# --- the expectations -------------------------------------------------------------------------
def assert_error_shape(answer: Answer) -> None:
    assert answer.headers.get("content-type", "").startswith("application/json"), (
        answer.status,
        answer.headers,
        answer.body[:300],
    )
    body = answer.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body


def assert_refused(answer: Answer) -> None:
    assert 400 <= answer.status < 500, (answer.status, answer.body[:300])
    assert_error_shape(answer)


def tool_name_is_refused(payload: str) -> bool:
    name = payload.strip()
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name) or len(name) > MAX_TOOL_NAME_CHARS


def check(field: Field, payload: str, answer: Answer, target: Target) -> None:
    if field.location == "header" and "\x00" in payload:
        assert answer.status == 400, answer  # h11 refuses the request before the app sees it
        return
    if field.kind in ("id", "tool_args"):
        assert_refused(answer)
    elif field.kind == "tool_name":
        if tool_name_is_refused(payload):
            assert answer.status == 422, (answer.status, answer.body[:300])
            assert_error_shape(answer)
        else:
            assert answer.status == 201, (answer.status, answer.body[:300])
            meta = httpx.get(
                f"{target.server.url}/v1/outputs/{answer.json()['handle']}", headers=AUTH, timeout=10
            ).json()
            assert meta["tool_name"] == payload.strip()
    elif field.kind == "range":
        assert (answer.status, answer.body) == (200, CONTENT)
    elif field.kind in ("variable_name", "write_mode"):
        assert answer.status == 422, (answer.status, answer.body[:300])
        assert_error_shape(answer)
    elif field.kind == "file_path":
        if answer.status >= 300:
            assert_refused(answer)
        else:  # a valid relative path: it names a file of the session, nothing on disk
            assert answer.json()["path"] == payload.strip(), answer
    elif field.kind == "idempotency_key":
        if IDEMPOTENCY_KEY.fullmatch(payload):  # opaque: used once, or already used by the other route's case
            assert 200 <= answer.status < 300 or (
                answer.status == 422 and answer.json()["error"]["code"] == "idempotency_key_reused"
            ), answer
        else:
            assert answer.status == 422, (answer.status, answer.body[:300])
            assert_error_shape(answer)


@pytest.mark.parametrize(("field", "payload"), list(cases()))
def test_a_traversal_payload_is_refused_or_inert_and_touches_nothing(
    target: Target, field: Field, payload: str
) -> None:
    before = outside_the_blob_root(target)
    answer = send(target, *request_for(field, payload, target))
    assert answer.status < 500, (answer.status, answer.body[:300])
    check(field, payload, answer, target)
    assert outside_the_blob_root(target) == before
    assert unexpected_blobs(target) == []
    for sentinel in (
        target.root / "etc" / "passwd",
        target.root / "var" / "etc" / "passwd",
        target.root / "var" / "sentinel",
    ):
        assert sentinel.read_bytes() == SENTINEL


def test_every_kind_of_field_is_covered() -> None:
    """The discovery above found what the API has today (Idempotency-Key only once it exists)."""
    kinds = {(f.location, f.kind) for f in FIELDS}
    assert {
        ("path", "id"),
        ("body", "id"),
        ("header", "tool_name"),
        ("query", "tool_name"),
        ("header", "tool_args"),
        ("query", "tool_args"),
        ("header", "range"),
        ("query", "variable_name"),
        ("header", "variable_name"),
        ("query", "file_path"),
        ("header", "file_path"),
        ("body", "file_path"),
        ("query", "write_mode"),
    } <= kinds, kinds
    path_ops = {(f.method, f.path) for f in FIELDS if f.location == "path"}
    assert len(path_ops) >= 11, path_ops


def test_the_seeded_output_is_still_served_whole(target: Target) -> None:
    """After every payload above, the real output and its blobs are intact."""
    response = httpx.get(f"{target.server.url}/v1/outputs/{target.handle}/content", headers=AUTH, timeout=10)
    assert (response.status_code, response.content) == (200, CONTENT)
