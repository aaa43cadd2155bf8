"""Uploads over real HTTP on both blob stores: streamed, measured, stored, ranged, limited, deleted."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from api.ingest import SPOOL_PREFIX, spool_dir
from extraction.documents.lines import LineIndex
from extraction.documents.stats import TokenIndex, measure
from tests.fixtures.api_server import ApiServer, assert_error

MiB = 1 << 20
SEED_TOO_LARGE = (
    "Tool output is too large ({bytes} bytes, {lines} lines, {tokens} tokens).\n"
    'Call tool_output(handle = "{handle}", extract = "what to extract").\n'
    "Provide precise and detailed instructions in `extract` about what you are looking for."
)


def log_lines(total_bytes: int) -> bytes:
    """Realistic multi-line text (a log) of about `total_bytes`, ending without a newline."""
    line, out, i = b"", bytearray(), 0
    while len(out) < total_bytes:
        took = i * 37 % 1000
        line = f"2026-01-14T10:{i % 60:02d}:00Z worker-{i % 7} INFO request {i} took {took} ms "
        out += f"{line}status=200 path=/api/items/{i}\n".encode()
        i += 1
    return bytes(out[:-1])


def chunked(data: bytes, sizes: tuple[int, ...] = (1, 4093, 65536, 7, 300_000)) -> Iterator[bytes]:
    """The body as a generator of uneven chunks, so httpx sends it with chunked transfer encoding."""
    pos, i = 0, 0
    while pos < len(data):
        size = sizes[i % len(sizes)]
        yield data[pos : pos + size]
        pos, i = pos + size, i + 1


def new_session(client: httpx.Client) -> str:
    response = client.post("/v1/sessions")
    assert response.status_code == 201, response.text
    return response.json()["id"]


def spool_files(server: ApiServer) -> set[Path]:
    return set(spool_dir(server.settings).glob(f"{SPOOL_PREFIX}*"))


def nothing_stored_under(server: ApiServer, session: str) -> bool:
    """True when the session has no record and no blob (the blob check deletes nothing that exists)."""
    with server.client() as client:
        outputs = client.get(f"/v1/sessions/{session}").json()["outputs"]
    return outputs == [] and server.services.blobs.delete_prefix(f"sessions/{session}/") == 0


def test_a_streamed_multi_megabyte_upload_is_measured_and_stored(store_server: ApiServer) -> None:
    spooled_before = spool_files(store_server)  # the S3 store spools in the OS temp dir, shared with other processes
    data = log_lines(6 * MiB)
    headers = {
        "X-Tool-Name": "fetch_logs",
        "X-Tool-Args": '{"service": "api", "since": "1h"}',
        "Content-Type": "text/plain",
    }
    with store_server.client() as client:
        session = new_session(client)
        response = client.post(f"/v1/sessions/{session}/outputs", content=chunked(data), headers=headers)
        assert response.status_code == 201, response.text
        body = response.json()
        expected = measure([data], store_server.settings.tokenizer_encoding).stats
        assert body["bytes"] == len(data) == expected.bytes
        assert body["lines"] == data.count(b"\n") + 1 == expected.lines
        assert body["sha256"] == hashlib.sha256(data).hexdigest()
        assert body["tokens"] == expected.tokens > 0
        assert body["avg_line_bytes"] == pytest.approx(len(data) / body["lines"])
        assert (body["invalid_utf8"], body["oversized"], body["stored"]) == (False, True, True)
        handle = body["handle"]
        assert body["message"] == SEED_TOO_LARGE.format(
            bytes=len(data), lines=body["lines"], tokens=body["tokens"], handle=handle
        )

        meta = client.get(f"/v1/outputs/{handle}").json()
        assert (meta["tool_name"], meta["tool_args"], meta["session_id"]) == (
            "fetch_logs",
            headers["X-Tool-Args"],
            session,
        )
        assert meta["sha256"] == body["sha256"]
        content = client.get(f"/v1/outputs/{handle}/content")
        assert content.status_code == 200 and content.headers["accept-ranges"] == "bytes"
        assert hashlib.sha256(content.content).hexdigest() == body["sha256"]
        assert client.get(f"/v1/sessions/{session}").json()["outputs"] == [handle]

    blobs = store_server.services.blobs
    key = f"sessions/{session}/{handle}"
    assert blobs.size(key) == len(data)
    assert TokenIndex.model_validate_json(blobs.get_bytes(f"{key}.tokidx")).total_tokens == body["tokens"]
    assert LineIndex.model_validate_json(blobs.get_bytes(f"{key}.lines")).lines == body["lines"]
    assert spool_files(store_server) <= spooled_before


def test_query_parameters_carry_the_tool_metadata(store_server: ApiServer) -> None:
    with store_server.client() as client:
        session = new_session(client)
        params = {"tool_name": "search", "tool_args": '{"q": "café"}'}
        handle = client.post(f"/v1/sessions/{session}/outputs", content=b"\xff\xfebinary-ish\n", params=params).json()[
            "handle"
        ]
        meta = client.get(f"/v1/outputs/{handle}").json()
    assert (meta["tool_name"], meta["tool_args"], meta["invalid_utf8"]) == ("search", '{"q": "café"}', True)


def test_store_if_oversized_returns_small_outputs_inline_and_stores_nothing(store_server: ApiServer) -> None:
    text = "small result\nsecond line — with UTF-8\n"
    before = spool_files(store_server)
    with store_server.client() as client:
        session = new_session(client)
        response = client.post(
            f"/v1/sessions/{session}/outputs", content=text.encode(), params={"store": "if_oversized"}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["stored"], body["oversized"], body["content"], body["lines"]) == (False, False, text, 2)
        assert "handle" not in body
        big = client.post(f"/v1/sessions/{session}/outputs", content=b"x" * 20_000, params={"store": "if_oversized"})
        assert big.status_code == 201 and big.json()["oversized"] is True and big.json()["message"]
        client.delete(f"/v1/outputs/{big.json()['handle']}")
    assert nothing_stored_under(store_server, session)
    assert spool_files(store_server) == before


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "streamed"])
def test_an_upload_over_the_limit_is_413_and_stores_nothing(
    start_server: Callable[..., ApiServer], declare_length: bool
) -> None:
    server = start_server(max_upload_bytes=MiB)
    data = log_lines(MiB + 1)
    before = spool_files(server)
    with server.client() as client:
        session = new_session(client)
        body = data if declare_length else chunked(data, (64 << 10,))
        response = client.post(f"/v1/sessions/{session}/outputs", content=body)
        error = assert_error(response, 413, "payload_too_large")
        assert error["details"]["limit"] == MiB
        assert ("content_length" in error["details"]) is declare_length
        exact = client.post(f"/v1/sessions/{session}/outputs", content=chunked(data[:MiB]))
        assert exact.status_code == 201, exact.text
        client.delete(f"/v1/outputs/{exact.json()['handle']}")
    assert nothing_stored_under(server, session)
    assert spool_files(server) == before


def test_ranges_serve_partial_content(store_server: ApiServer) -> None:
    data = bytes(range(256)) * 40  # 10 240 bytes, every offset distinguishable
    with store_server.client() as client:
        handle = client.post(
            f"/v1/sessions/{new_session(client)}/outputs",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        ).json()["handle"]
        url = f"/v1/outputs/{handle}/content"
        for header, start, end in [
            ("bytes=0-99", 0, 100),
            ("bytes=5000-5999", 5000, 6000),
            ("bytes=10000-", 10000, 10240),
            ("bytes=-40", 10200, 10240),
            ("bytes=10200-99999", 10200, 10240),
        ]:
            response = client.get(url, headers={"Range": header})
            assert response.status_code == 206, (header, response.text)
            assert response.content == data[start:end], header
            assert response.headers["content-range"] == f"bytes {start}-{end - 1}/{len(data)}"
            assert int(response.headers["content-length"]) == end - start
        response = client.get(url, headers={"Range": "bytes=10240-"})
        assert_error(response, 416, "range_not_satisfiable")
        assert response.headers["content-range"] == f"bytes */{len(data)}"
        whole = client.get(url, headers={"Range": "bytes=9-2"})
        assert (whole.status_code, whole.content, whole.headers["content-type"]) == (
            200,
            data,
            "application/octet-stream",
        )


def test_deleting_an_output_removes_blobs_and_record(store_server: ApiServer) -> None:
    with store_server.client() as client:
        session = new_session(client)
        handle = client.post(f"/v1/sessions/{session}/outputs", content=b"a\nb\n").json()["handle"]
        assert client.delete(f"/v1/outputs/{handle}").status_code == 204
        assert_error(client.get(f"/v1/outputs/{handle}"), 404)
        assert_error(client.get(f"/v1/outputs/{handle}/content"), 404)
        assert_error(client.delete(f"/v1/outputs/{handle}"), 404)
    key = f"sessions/{session}/{handle}"
    assert not any(store_server.services.blobs.exists(k) for k in (key, f"{key}.tokidx", f"{key}.lines"))
    assert nothing_stored_under(store_server, session)


def test_uploading_to_an_unknown_session_is_404(api_server: ApiServer) -> None:
    with api_server.client() as client:
        response = client.post("/v1/sessions/00000000-0000-4000-8000-000000000000/outputs", content=b"data")
    assert_error(response, 404, "not_found")
