"""Uploads that go wrong on the wire, over real HTTP (raw sockets where the client must stall or lie) on the local
and the S3 blob store: a stalled body, a crowd past the in-flight bound, a client that hangs up, a Content-Length
that lies, a compressed body. Each gets a clear error or completes; afterwards the spool directory is empty and
the store holds nothing but what completed."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.ingest import SPOOL_PREFIX, spool_dir
from infra.blobstore import LocalBlobStore, S3BlobStore
from tests.fixtures.api_server import ApiServer, assert_error

pytestmark = pytest.mark.integration

READ_TIMEOUT = 0.5


@pytest.fixture()
def server(start_server: Callable[..., ApiServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ApiServer:
    """The API with a short read timeout; an S3 store's spool goes under this test's tmp (the server is in-thread)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "os-tmp"))
    (tmp_path / "os-tmp").mkdir()
    return start_server(upload_read_timeout_seconds=READ_TIMEOUT, max_uploads_in_flight=2)


def spool_files(server: ApiServer) -> list[str]:
    return sorted(path.name for path in spool_dir(server.settings).glob(f"{SPOOL_PREFIX}*"))


def stored_blobs(server: ApiServer) -> list[str]:
    """Every object the blob store holds, listed by the store's own means (a directory walk or a bucket listing)."""
    blobs = server.services.blobs
    if isinstance(blobs, S3BlobStore):
        pages = blobs.client.get_paginator("list_objects_v2").paginate(Bucket=blobs.bucket, Prefix=blobs.prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))
    assert isinstance(blobs, LocalBlobStore)
    return sorted(str(path) for path in blobs.root.rglob("*") if path.is_file()) if blobs.root.exists() else []


def new_session(server: ApiServer) -> str:
    return str(httpx.post(f"{server.url}/v1/sessions", timeout=10).raise_for_status().json()["id"])


def session_outputs(server: ApiServer, session: str) -> list[str]:
    return list(httpx.get(f"{server.url}/v1/sessions/{session}", timeout=10).raise_for_status().json()["outputs"])


def assert_nothing_left(server: ApiServer, session: str) -> None:
    """No spool file, no output in the session, no object in the store (the session itself stores no blob)."""
    deadline = time.monotonic() + 5
    while spool_files(server) and time.monotonic() < deadline:  # the handler's finally runs just after the answer
        time.sleep(0.05)
    assert spool_files(server) == []
    assert session_outputs(server, session) == []
    assert stored_blobs(server) == []


class RawUpload:
    """An upload written by hand on a socket: headers, then whatever body parts the test decides to send."""

    def __init__(self, server: ApiServer, session: str, *, content_length: int | None, extra: str = "") -> None:
        host, port = server.url.removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        length = f"Content-Length: {content_length}\r\n" if content_length is not None else ""
        head = (
            f"POST /v1/sessions/{session}/outputs HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain\r\n"
            f"{length}{extra}\r\n"
        )
        self.sock.sendall(head.encode())

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def answer(self) -> tuple[int, dict[str, Any]]:
        """The status line and the JSON body of the answer (read until the server closes or the body is whole)."""
        received = b""
        while b"\r\n\r\n" not in received or not _whole(received):
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        body = body[: _length(head)]
        return int(head.split()[1]), json.loads(body) if b"application/json" in head.lower() else {"text": body}

    def close(self) -> None:
        self.sock.close()


def _length(head: bytes) -> int:
    for line in head.decode("latin-1").split("\r\n"):
        if line.lower().startswith("content-length:"):
            return int(line.split(":", 1)[1])
    return 1 << 30  # no length: the body runs to the close


def _whole(received: bytes) -> bool:
    """The first answer is complete (a lie past it, answered as a second request, is not read)."""
    head, _, body = received.partition(b"\r\n\r\n")
    return len(body) >= _length(head)


@pytest.fixture()
def raw(server: ApiServer) -> Iterator[Callable[..., RawUpload]]:
    opened: list[RawUpload] = []

    def start(session: str, **kwargs: Any) -> RawUpload:
        opened.append(RawUpload(server, session, **kwargs))
        return opened[-1]

    yield start
    for upload in opened:
        upload.close()


def test_a_body_that_stalls_past_the_read_timeout_is_cut_and_its_spool_file_goes(
    server: ApiServer, raw: Callable[..., RawUpload]
) -> None:
    session = new_session(server)
    upload = raw(session, content_length=20_000)
    upload.send(b"line one\n" * 100)
    started = time.monotonic()
    status, body = upload.answer()  # nothing more is sent: the server must not wait forever
    assert status == 408 and body["error"]["code"] == "upload_timeout", body
    assert body["error"]["details"] == {"read_timeout": READ_TIMEOUT}
    assert READ_TIMEOUT <= time.monotonic() - started < READ_TIMEOUT + 5
    assert_nothing_left(server, session)


def test_a_slow_body_that_keeps_sending_within_the_timeout_is_stored(
    server: ApiServer, raw: Callable[..., RawUpload]
) -> None:
    """The timeout bounds a gap between parts, not the whole body (nginx's client_body_timeout)."""
    session = new_session(server)
    parts = [f"part {i}\n".encode() for i in range(6)]
    upload = raw(session, content_length=sum(map(len, parts)))
    for part in parts:
        upload.send(part)
        time.sleep(READ_TIMEOUT / 3)
    status, body = upload.answer()
    assert status == 201, body
    assert body["bytes"] == sum(map(len, parts)) and session_outputs(server, session) == [body["handle"]]
    assert spool_files(server) == []


def test_past_the_in_flight_bound_a_new_upload_gets_503_with_retry_after(
    server: ApiServer, raw: Callable[..., RawUpload]
) -> None:
    session = new_session(server)
    held = [raw(session, content_length=10) for _ in range(2)]
    for upload in held:
        upload.send(b"01234")  # half a body each: both are in flight
    time.sleep(0.1)
    refused = httpx.post(f"{server.url}/v1/sessions/{session}/outputs", content=b"fits", timeout=10)
    error = assert_error(refused, 503, "uploads_busy")
    assert refused.headers["retry-after"].isdigit() and error["details"] == {"max_uploads_in_flight": 2}
    for upload in held:
        upload.send(b"56789")
        assert upload.answer()[0] == 201
    accepted = httpx.post(f"{server.url}/v1/sessions/{session}/outputs", content=b"fits now", timeout=10)
    assert accepted.status_code == 201, accepted.text
    assert len(session_outputs(server, session)) == 3 and spool_files(server) == []


def test_a_client_that_hangs_up_mid_upload_leaves_nothing(server: ApiServer, raw: Callable[..., RawUpload]) -> None:
    session = new_session(server)
    upload = raw(session, content_length=5 << 20)
    upload.send(b"x" * (1 << 20))
    upload.close()
    time.sleep(0.3)
    assert_nothing_left(server, session)
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_a_content_length_larger_than_the_body_is_cut_at_the_read_timeout(
    server: ApiServer, raw: Callable[..., RawUpload]
) -> None:
    session = new_session(server)
    upload = raw(session, content_length=1000)
    upload.send(b"only 24 bytes are sent\n.")
    status, body = upload.answer()
    assert status == 408 and body["error"]["code"] == "upload_timeout", body
    assert_nothing_left(server, session)


def test_a_content_length_smaller_than_the_body_stores_the_declared_bytes_only(
    server: ApiServer, raw: Callable[..., RawUpload]
) -> None:
    """HTTP/1.1 frames the body by its length: what follows is not part of this upload."""
    session = new_session(server)
    upload = raw(session, content_length=10)
    upload.send(b"0123456789 and more that was not declared\r\n\r\n")
    status, body = upload.answer()
    assert status == 201 and body["bytes"] == 10, body
    content = httpx.get(f"{server.url}/v1/outputs/{body['handle']}/content", timeout=10)
    assert content.content == b"0123456789"
    assert spool_files(server) == []


@pytest.mark.parametrize("length", ["ten", "-5"])
def test_a_content_length_that_is_not_a_length_is_refused_before_a_byte_is_stored(
    server: ApiServer, raw: Callable[..., RawUpload], length: str
) -> None:
    session = new_session(server)
    upload = raw(session, content_length=None, extra=f"Content-Length: {length}\r\n")
    upload.send(b"0123456789")
    status, body = upload.answer()  # the HTTP layer (h11) refuses the framing before the app sees the request
    assert status == 400 and body == {"text": b"Invalid HTTP request received."}
    assert_nothing_left(server, session)


def test_a_gzip_bomb_is_refused_without_being_inflated(server: ApiServer) -> None:
    """A compressed body is refused whole: 10 MiB of zeros in 10 KiB of gzip never reaches the spool or the store."""
    session = new_session(server)
    bomb = gzip.compress(b"\0" * (10 << 20))
    response = httpx.post(
        f"{server.url}/v1/sessions/{session}/outputs",
        content=bomb,
        headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"},
        timeout=10,
    )
    error = assert_error(response, 415, "unsupported_media_type")
    assert error["details"] == {"content_encoding": "gzip"}
    assert_nothing_left(server, session)


def test_identity_encoding_is_an_ordinary_upload(server: ApiServer) -> None:
    session = new_session(server)
    response = httpx.post(
        f"{server.url}/v1/sessions/{session}/outputs",
        content=b"plain\n",
        headers={"Content-Encoding": "identity"},
        timeout=10,
    )
    assert response.status_code == 201, response.text


def test_the_bound_is_released_by_every_ending(tmp_path: Path) -> None:
    """Refused, failed and finished uploads each give their slot back (the counter the 503 reads)."""
    from api.upload_guards import UploadsBusy, UploadSlots

    slots = UploadSlots()

    async def use(fail: bool) -> None:
        with slots.held(1):
            await asyncio.sleep(0)
            if fail:
                raise ValueError("the upload failed")

    asyncio.run(use(False))
    with pytest.raises(ValueError):
        asyncio.run(use(True))
    with slots.held(1), pytest.raises(UploadsBusy):
        asyncio.run(use(False))
    assert slots.active == 0
