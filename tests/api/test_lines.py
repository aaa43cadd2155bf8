"""Read and Grep over REST (`/v1/outputs/{handle}/lines` and `/grep`), on both blob stores.

The engine (`infra.outputs.stored`) has its own tests; these check what only the HTTP layer can get
wrong: line numbers that survive S3's ranged reads across read blocks, parameter validation and
the error shape, content negotiation, the ReDoS guarantee end to end, and hostile handles.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from api.deps import get_tenant
from infra.outputs.stored import StoredOutput
from tests.fixtures.api_server import ApiServer, assert_error
from toolout.client import ToolOutAPIError, ToolOutClient

pytestmark = pytest.mark.twin(
    "parameter validation and content negotiation, answered before any blob is read (reads run on store_server)"
)

MiB = 1 << 20
READ_KEYS = {"text", "first_line", "last_line", "total_lines", "truncated", "clipped_lines", "note", "view"}
GREP_KEYS = {"text", "matches", "lines_scanned", "truncated", "note", "stopped_after_seconds", "view"}
JSON_ACCEPT = {"Accept": "application/json"}
NOWHERE = str(uuid.uuid4())  # a well-formed handle nothing is stored under


# --- helpers ----------------------------------------------------------------------------------
def numbered_doc(total_bytes: int) -> tuple[bytes, list[str]]:
    """Lines that name their own number (`L000042|…`), of varying length, until `total_bytes`."""
    lines, size, n = [], 0, 0
    while size < total_bytes:
        n += 1
        line = f"L{n:06d}|worker-{n % 7} request {n} took {n * 37 % 1000} ms {'x' * (n % 50)}"
        lines.append(line)
        size += len(line) + 1
    return ("\n".join(lines) + "\n").encode(), lines


def line_at_byte(data: bytes, pos: int) -> int:
    """1-based number of the line holding byte `pos`."""
    return data.count(b"\n", 0, pos) + 1


def store(client: httpx.Client, data: bytes) -> str:
    session = client.post("/v1/sessions")
    assert session.status_code == 201, session.text
    response = client.post(
        f"/v1/sessions/{session.json()['id']}/outputs", content=data, headers={"X-Tool-Name": "logs"}
    )
    assert response.status_code == 201, response.text
    return response.json()["handle"]


def read(client: httpx.Client, handle: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/v1/outputs/{handle}/lines", params=params, headers=JSON_ACCEPT)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == READ_KEYS
    return body


def grep(client: httpx.Client, handle: str, pattern: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": pattern, **params}, headers=JSON_ACCEPT)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == GREP_KEYS
    return body


def row(n: int, text: str, mark: str = "") -> str:
    return f"{n:>6}{mark}\t{text}"


@pytest.fixture()
def small_block_server(start_server: Callable[..., ApiServer]) -> ApiServer:
    """The API with 1 MiB blob read blocks, so a 3 MiB output spans several S3 reads."""
    return start_server(blob_read_block_bytes=MiB)


# --- line numbers across read blocks ----------------------------------------------------------
def test_read_numbers_lines_at_the_start_middle_and_end_of_a_multi_block_output(small_block_server: ApiServer) -> None:
    data, lines = numbered_doc(3 * MiB)
    total = len(lines)
    with small_block_server.client() as client:
        handle = store(client, data)
        middle = line_at_byte(data, MiB)  # the line a read-block boundary cuts through
        for first, limit in [(1, 3), (middle - 1, 3), (line_at_byte(data, 2 * MiB), 2), (total - 1, 5)]:
            body = read(client, handle, offset=first, limit=limit)
            last = min(total, first + limit - 1)
            assert body["text"] == "\n".join(row(n, lines[n - 1]) for n in range(first, last + 1))
            assert (body["first_line"], body["last_line"], body["total_lines"]) == (first, last, total)
            assert body["truncated"] == (last < total)

        big = read(client, handle, offset=middle - 5000, limit=10_000)  # one window over two block boundaries
        shown = big["text"].split("\n")
        assert (
            len(shown) == 10_000
            and shown[0] == row(middle - 5000, lines[middle - 5001])
            and shown[-1] == row(middle + 4999, lines[middle + 4998])
        )
        assert (
            big["note"]
            == f"Showing lines {middle - 5000}-{middle + 4999} of {total}. Use offset={middle + 5000} to read more."
        )

        text = client.get(f"/v1/outputs/{handle}/lines", params={"offset": total})
        assert text.headers["content-type"] == "text/plain; charset=utf-8"
        assert text.text == row(total, lines[-1])

        past = read(client, handle, offset=total + 1)
        assert (past["text"], past["truncated"]) == ("", False)
        assert (
            past["note"] == f"Offset {total + 1} is past the end: the output has {total} lines (use offset 1-{total})."
        )
        past_text = client.get(f"/v1/outputs/{handle}/lines", params={"offset": total + 10})
        assert past_text.status_code == 200 and past_text.text.startswith(f"Offset {total + 10} is past the end")


def test_grep_numbers_matches_at_the_start_middle_and_end_of_a_multi_block_output(
    small_block_server: ApiServer,
) -> None:
    data, lines = numbered_doc(3 * MiB)
    total = len(lines)
    targets = [1, line_at_byte(data, MiB), line_at_byte(data, 2 * MiB), total]
    with small_block_server.client() as client:
        handle = store(client, data)
        for n in targets:
            body = grep(client, handle, f"L{n:06d}|", before=1, after=1)
            expected = [
                row(m, lines[m - 1], "-" if m != n else ":") for m in range(max(1, n - 1), min(total, n + 1) + 1)
            ]
            assert body["text"] == "\n".join(expected)
            assert (body["matches"], body["lines_scanned"], body["truncated"]) == (1, total, False)

        pattern = "^L(" + "|".join(f"{n:06d}" for n in targets) + r")\|"
        regex = grep(client, handle, pattern, regex="true")
        assert regex["text"] == "\n".join(row(n, lines[n - 1], ":") for n in targets)
        assert regex["note"] == f"{len(targets)} matching line(s) for '{pattern}' in {total:,} lines."


# --- grep features ----------------------------------------------------------------------------
FEATURES = "alpha ERROR one\nbeta info\ngamma error two\ndelta Error.three\nepsilon\n"


def test_grep_literal_ignore_case_and_regex(store_server: ApiServer) -> None:
    with store_server.client() as client:
        handle = store(client, FEATURES.encode())
        assert grep(client, handle, "ERROR")["text"] == row(1, "alpha ERROR one", ":")
        folded = grep(client, handle, "error", ignore_case="true")
        assert [line.split("\t")[0].strip() for line in folded["text"].split("\n")] == ["1:", "3:", "4:"]

        literal = grep(client, handle, "r.t")  # literal by default: the dot is a dot
        assert (literal["text"], literal["matches"]) == (row(4, "delta Error.three", ":"), 1)
        none = grep(client, handle, "a.b")
        assert (none["text"], none["matches"], none["note"]) == ("", 0, "No matches for 'a.b' in 5 lines.")
        regex = grep(client, handle, "r.t", regex="true")
        assert regex["text"] == "\n".join([row(3, "gamma error two", ":"), row(4, "delta Error.three", ":")])
        assert grep(client, handle, "Error.", regex="false")["matches"] == 1
        assert grep(client, handle, r"^(beta info|EPSILON)$", regex="true", ignore_case="true")["matches"] == 2


def test_grep_context_separates_groups_with_dashes(store_server: ApiServer) -> None:
    doc = "".join(f"{'HIT ' if n in (5, 6, 20) else ''}row {n}\n" for n in range(1, 31))
    with store_server.client() as client:
        handle = store(client, doc.encode())
        response = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "HIT", "before": 1, "after": 1})
    assert response.status_code == 200 and response.headers["content-type"] == "text/plain; charset=utf-8"
    expected = [
        row(4, "row 4", "-"), row(5, "HIT row 5", ":"), row(6, "HIT row 6", ":"), row(7, "row 7", "-"),
        "--",
        row(19, "row 19", "-"), row(20, "HIT row 20", ":"), row(21, "row 21", "-"),
    ]  # fmt: skip
    assert response.text == "\n".join(expected) + "\n\n3 matching line(s) for 'HIT' in 30 lines."


def test_max_matches_stops_early_with_a_note(store_server: ApiServer) -> None:
    doc = "".join(f"hit {n}\n" for n in range(1, 51))
    with store_server.client() as client:
        handle = store(client, doc.encode())
        body = grep(client, handle, "hit", max_matches=3, after=1)
        assert body["text"] == "\n".join(
            [row(1, "hit 1", ":"), row(2, "hit 2", ":"), row(3, "hit 3", ":"), row(4, "hit 4", "-")]
        )
        assert (body["matches"], body["truncated"]) == (3, True)
        assert body["note"].startswith("Stopped after 3 matching lines (max_matches); the last is line 3")
        assert grep(client, handle, "hit", max_matches=10_000)["matches"] == 50


def test_past_the_time_budget_grep_returns_the_matches_so_far_and_where_it_stopped(
    start_server: Callable[..., ApiServer],
) -> None:
    """A budget of a nanosecond is spent by the first clock reading, which comes after the first block."""
    server = start_server(blob_read_block_bytes=64 << 10, grep_time_budget_seconds=1e-9)
    lines = [f"hit {n:05d} ".ljust(63, ".") for n in range(1, 4001)]  # 64 bytes a line: 1024 lines a block
    with server.client() as client:
        handle = store(client, "".join(f"{line}\n" for line in lines).encode())
        body = grep(client, handle, "hit", max_matches=2000)
        text = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "hit", "max_matches": 2000}).text
    assert (body["matches"], body["lines_scanned"], body["truncated"]) == (1024, 1024, True)
    assert body["text"].splitlines()[-1] == row(1024, lines[1023], ":")
    assert body["stopped_after_seconds"] > 0
    assert body["note"].startswith(f"Stopped after {body['stopped_after_seconds']:.1f} seconds at line 1,025 ")
    assert body["note"].endswith("later lines were not searched. Narrow the pattern.")
    # the plain-text answer (what an agent reads) says it too (its own elapsed seconds)
    assert "seconds at line 1,025 " in text and text.endswith("later lines were not searched. Narrow the pattern.")


@pytest.mark.parametrize(
    ("accept", "json_wanted"),
    [
        (None, False),
        ("*/*", False),
        ("text/plain", False),
        ("text/*", False),
        ("application/json", True),
        ("application/*", True),
        ("application/json;q=0.5, text/plain", False),
        ("text/plain;q=0.2, application/json", True),
        ("text/html, application/json;q=0.9, */*;q=0.1", True),
    ],
)
def test_text_by_default_json_when_asked(client: TestClient, accept: str | None, json_wanted: bool) -> None:
    handle = store(client, b"one\ntwo\nthree\n")
    headers = {"Accept": accept} if accept is not None else {}
    for path, params in (("lines", {"limit": 2}), ("grep", {"pattern": "t"})):
        response = client.get(f"/v1/outputs/{handle}/{path}", params=params, headers=headers)
        assert response.status_code == 200, response.text
        assert response.headers["vary"] == "Accept"
        if json_wanted:
            assert response.headers["content-type"] == "application/json"
            assert set(response.json()) == (READ_KEYS if path == "lines" else GREP_KEYS)
        else:
            assert response.headers["content-type"] == "text/plain; charset=utf-8"
            assert response.text == TEXT_ANSWERS[path]


TEXT_ANSWERS = {
    "lines": "     1\tone\n     2\ttwo\n\nShowing lines 1-2 of 3. Use offset=3 to read more.",
    "grep": "     2:\ttwo\n     3:\tthree\n\n2 matching line(s) for 't' in 3 lines.",
}


@pytest.mark.parametrize("accept", ["image/png", "application/json;q=0, text/plain;q=0", "text/html"])
def test_an_accept_header_allowing_neither_flavor_is_406(client: TestClient, accept: str) -> None:
    handle = store(client, b"one\n")
    assert_error(client.get(f"/v1/outputs/{handle}/lines", headers={"Accept": accept}), 406, "not_acceptable")


# --- ReDoS and unsupported regex syntax -------------------------------------------------------
def test_a_catastrophic_backtracking_regex_answers_in_linear_time(store_server: ApiServer) -> None:
    with store_server.client() as client:
        handle = store(client, b"a" * MiB)
        started = time.monotonic()
        body = grep(client, handle, "(a+)+$", regex="true")
        elapsed = time.monotonic() - started
    assert elapsed < 10, f"(a+)+$ over 1 MiB took {elapsed:.1f}s"
    assert (body["matches"], body["lines_scanned"]) == (1, 1)
    assert body["text"].startswith(row(1, "a", ":")) and "line clipped" in body["text"]


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [(r"(a)\1", "backreferences"), ("(?=a)b", "lookahead"), ("(?<!a)b", "negative lookbehind"), ("a++", "possessive")],
)
def test_unsupported_regex_syntax_is_a_400_naming_re2_and_the_construct(
    store_server: ApiServer, pattern: str, construct: str
) -> None:
    with store_server.client() as client:
        handle = store(client, b"aa\n")
        response = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": pattern, "regex": "true"})
    error = assert_error(response, 400, "invalid_pattern")
    assert "RE2" in error["message"] and construct in error["message"]
    assert (error["details"]["pattern"], error["details"]["engine"]) == (pattern, "re2")


def test_the_same_pattern_without_regex_is_a_plain_search(client: TestClient) -> None:
    handle = store(client, b"x(a)\\1y\n")
    assert grep(client, handle, r"(a)\1")["text"] == row(1, r"x(a)\1y", ":")


# --- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "params", "loc"),
    [
        ("lines", {"offset": 0}, "query.offset"),
        ("lines", {"offset": -3}, "query.offset"),
        ("lines", {"offset": "ten"}, "query.offset"),
        ("lines", {"offset": "1.5"}, "query.offset"),
        ("lines", {"limit": 0}, "query.limit"),
        ("lines", {"limit": 10_001}, "query.limit"),
        ("lines", {"limit": 10**30}, "query.limit"),
        ("lines", {"lmit": 5}, "query.lmit"),
        ("lines", [("offset", "1"), ("offset", "2")], "query.offset"),
        ("grep", {}, "query.pattern"),
        ("grep", {"pattern": ""}, "query.pattern"),
        ("grep", {"pattern": "x" * 4097}, "query.pattern"),
        ("grep", {"pattern": "x", "regex": "maybe"}, "query.regex"),
        ("grep", {"pattern": "x", "ignore_case": "2"}, "query.ignore_case"),
        ("grep", {"pattern": "x", "before": -1}, "query.before"),
        ("grep", {"pattern": "x", "before": 101}, "query.before"),
        ("grep", {"pattern": "x", "after": 101}, "query.after"),
        ("grep", {"pattern": "x", "after": "some"}, "query.after"),
        ("grep", {"pattern": "x", "max_matches": 0}, "query.max_matches"),
        ("grep", {"pattern": "x", "max_matches": 10_001}, "query.max_matches"),
        ("grep", {"pattern": "x", "ignorecase": "true"}, "query.ignorecase"),
        ("grep", {"pattern": "x", "offset": 1}, "query.offset"),
    ],
)
def test_bad_parameters_are_422_before_the_handle_is_looked_up(
    client: TestClient, path: str, params: Any, loc: str
) -> None:
    """A well-formed handle that does not exist: a 422 (not 404) proves validation comes first."""
    error = assert_error(client.get(f"/v1/outputs/{NOWHERE}/{path}", params=params), 422, "validation_error")
    assert error["message"].startswith(f"{loc}:"), error


def test_a_pattern_with_a_line_break_is_a_400_explaining_grep_is_per_line(client: TestClient) -> None:
    handle = store(client, b"a\nb\n")
    error = assert_error(client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "a\nb"}), 400, "invalid_input")
    assert "line" in error["message"]


def test_limits_at_the_edges_are_accepted(client: TestClient) -> None:
    handle = store(client, b"".join(b"x%d\n" % n for n in range(1, 6)))
    assert read(client, handle, offset=1, limit=10_000)["last_line"] == 5
    assert grep(client, handle, "x", before=100, after=100, max_matches=1)["matches"] == 1
    assert grep(client, handle, "x", before=0, after=0, max_matches=10_000)["matches"] == 5


# --- handles and tenancy ----------------------------------------------------------------------
HOSTILE_HANDLES = [
    "not-a-uuid", "..", "../x", "..%2Fx", "%2e%2e%2fx", "..%2F..%2Fetc%2Fpasswd", "%00", "x%0Ay", "%252e%252e",
    f"sessions%2F{NOWHERE}", f"{NOWHERE}%2F..", f"{NOWHERE}.lines", f"{NOWHERE}.tokidx",
]  # fmt: skip


@pytest.mark.parametrize("path", ["lines", "grep?pattern=x"])
def test_malformed_and_traversal_handles_are_refused_in_the_error_shape(api_server: ApiServer, path: str) -> None:
    """Over a real socket, so uvicorn's own path decoding is what the router sees. Only a UUID is
    ever looked up, and a blob key is built from the stored record, never from the URL.
    """
    with api_server.client() as client:
        for handle in HOSTILE_HANDLES:
            response = client.get(f"{api_server.url}/v1/outputs/{handle}/{path}")
            assert response.status_code in (404, 422), (handle, response.status_code, response.text)
            assert_error(response, response.status_code)


def test_unknown_deleted_and_foreign_handles_are_404(store_server: ApiServer) -> None:
    with store_server.client() as client:
        assert_error(client.get(f"/v1/outputs/{NOWHERE}/lines"), 404, "not_found")
        assert_error(client.get(f"/v1/outputs/{NOWHERE}/grep", params={"pattern": "x"}), 404, "not_found")

        handle = store(client, b"secret\n")
        store_server.app.dependency_overrides[get_tenant] = lambda: "someone-else"
        try:
            assert_error(client.get(f"/v1/outputs/{handle}/lines"), 404, "not_found")
            assert_error(client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "secret"}), 404, "not_found")
        finally:
            del store_server.app.dependency_overrides[get_tenant]
        assert grep(client, handle, "secret")["matches"] == 1

        assert client.delete(f"/v1/outputs/{handle}").status_code == 204
        assert_error(client.get(f"/v1/outputs/{handle}/lines"), 404, "not_found")


# --- the SDK and the event loop ---------------------------------------------------------------
def test_the_sdk_read_and_grep_speak_these_routes(store_server: ApiServer) -> None:
    with ToolOutClient(store_server.url) as sdk:
        session = sdk.create_session()
        handle = sdk.store(session, b"first\nsecond ERROR\nthird\n")["handle"]
        assert (
            sdk.read(handle, offset=2, limit=1)
            == row(2, "second ERROR") + "\n\nShowing lines 2-2 of 3. Use offset=3 to read more."
        )
        assert sdk.grep(handle, "error", ignore_case=True, before=1, regex=None, after=None) == (
            f"{row(1, 'first', '-')}\n{row(2, 'second ERROR', ':')}\n\n1 matching line(s) for 'error' in 3 lines."
        )
        with pytest.raises(ToolOutAPIError) as refused:
            sdk.grep(handle, r"(a)\1", regex=True)
        assert (refused.value.status, refused.value.code) == (400, "invalid_pattern")


@pytest.mark.parametrize(("method", "path"), [("read", "lines"), ("grep", "grep?pattern=x")])
def test_a_slow_read_or_grep_does_not_block_other_requests(
    api_server: ApiServer, monkeypatch: pytest.MonkeyPatch, method: str, path: str
) -> None:
    """The routes are sync, so FastAPI runs them in its threadpool: while one is stuck on the blob
    store, the event loop still answers. An `async def` route would hold the loop and `/healthz` would wait.
    """
    entered, release = threading.Event(), threading.Event()
    real = getattr(StoredOutput, method)

    def stuck(self: StoredOutput, *args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StoredOutput, method, stuck)
    with api_server.client() as client, ThreadPoolExecutor(1) as pool:
        handle = store(client, b"x\n")
        pending = pool.submit(lambda: httpx.get(f"{api_server.url}/v1/outputs/{handle}/{path}", timeout=30))
        try:
            assert entered.wait(10), "the slow call never started"
            started = time.monotonic()
            assert client.get("/healthz").status_code == 200
            assert time.monotonic() - started < 2
        finally:
            release.set()
        assert pending.result(timeout=30).status_code == 200
