"""buffer_ops over real HTTP, real Redis and both blob stores: every example of seed 003 executed as written,
the tool-result error convention, and the REST equivalents (JSON)."""

from __future__ import annotations

import ast
import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from extraction.buffers.ops import BufferLimits
from tests.api.session_client import content, new_session, stored, upload
from tests.fixtures.api_server import ApiServer, assert_error
from tests.helpers import seed_text

RESULTS = "".join(f"result {i}: {'TODO fix ' if i % 50 == 7 else ''}item {i} ✓\n" for i in range(1, 401))


def seed_calls() -> list[dict[str, Any]]:
    """Every `buffer_ops(...)` call of seed 003, as the JSON arguments a model would send."""
    calls = re.findall(r"^buffer_ops\((.*)\)$", seed_text("003"), flags=re.MULTILINE)
    return [{kw.arg: ast.literal_eval(kw.value) for kw in ast.parse(f"f({c})").body[0].value.keywords} for c in calls]  # type: ignore[attr-defined]  # an ast.Expr of an ast.Call


@pytest.fixture()
def client(store_server: ApiServer) -> Iterator[httpx.Client]:
    with store_server.client() as c:
        yield c


@pytest.fixture()
def session(client: httpx.Client) -> str:
    """A session whose `search_results` buffer was routed there by a search tool, plus a small note."""
    session = new_session(client)
    stored(upload(client, session, RESULTS, tool="web_search_tavily", output="variable:search_results"))
    stored(upload(client, session, {"note": "hello"}, tool="notes", name="note"))
    return session


def call(client: httpx.Client, session: str, args: Any) -> httpx.Response:
    return client.post(f"/v1/sessions/{session}/buffer_ops", json=args)


def test_every_example_of_the_seed_runs(client: httpx.Client, session: str) -> None:
    calls = seed_calls()
    assert [c["operation"] for c in calls] == ["list", "info", "peek", "read", "search", "export"]
    answers = {}
    for args in calls:
        response = call(client, session, args)
        assert response.status_code == 200 and "x-tool-error" not in response.headers, (args, response.text)
        assert response.headers["content-type"].startswith("text/plain")
        answers[args["operation"]] = response.text
    assert (
        answers["list"] == f"2 buffers:\n- search_results: {len(RESULTS):,} chars, 400 lines\n- note: 17 chars, 1 line"
    )
    assert "source: web_search_tavily" in answers["info"] and "buffer: search_results" in answers["info"]
    assert answers["peek"].startswith(f"[search_results: chars 0-999 of {len(RESULTS):,}]\nresult 1: item 1 ✓")
    assert answers["read"].startswith("[search_results: lines 1-200 of 400]\n     1\tresult 1: item 1 ✓")
    assert "[200 more lines: read again with start_line=201]" in answers["read"]
    assert "     7:\tresult 7: TODO fix item 7 ✓" in answers["search"]
    assert answers["search"].endswith("8 matching lines for 'TODO' in \"search_results\".")
    assert answers["export"] == (
        f"[buffer exported] search_results -> file:reports/search_results.md ({len(RESULTS):,} chars, append)"
    )
    files = client.get(f"/v1/sessions/{session}/files").json()["items"]
    assert [f["path"] for f in files] == ["reports/search_results.md"]
    assert content(client, files[0]["handle"]) == RESULTS.encode()


def test_misuse_is_a_tool_result_with_the_error_header(client: httpx.Client, session: str) -> None:
    cases = [
        ({"operation": "read", "target": "search_results"}, "read needs a range"),
        ({"operation": "read", "target": "search_results", "start_line": 1, "end_line": 5000}, "read at most 2,000"),
        ({"operation": "info", "target": "nope"}, 'unknown buffer "nope"; available buffers: note, search_results'),
        ({"operation": "search", "target": "(?<=x)", "regex": True}, "Error:"),
        ({"operation": "fly"}, "operation must be one of"),
        ({"operation": "list", "target": "x"}, "list does not take target"),
        ({"operation": "export", "target": "note", "destination": "../up.md"}, "'..' segments are not allowed"),
    ]
    for args, words in cases:
        response = call(client, session, args)
        assert response.status_code == 200 and response.headers["x-tool-error"] == "true", (args, response.text)
        assert response.text.startswith("Error: ") and words in response.text, response.text


@pytest.mark.parametrize("body", [b"[1, 2]", b"not json", b'"list"', b""])
def test_a_body_that_is_not_a_json_object_is_a_422(client: httpx.Client, session: str, body: bytes) -> None:
    response = client.post(f"/v1/sessions/{session}/buffer_ops", content=body)
    assert_error(response, 422, "validation_error")


def test_export_with_today_and_write_modes(client: httpx.Client, session: str) -> None:
    day = dt.datetime.now(dt.UTC).date().isoformat()
    args = {"operation": "export", "target": "note", "destination": "notes/{today}.json"}
    assert call(client, session, args).text.endswith(f"file:notes/{day}.json (17 chars, append)")
    assert call(client, session, args).status_code == 200
    again = call(client, session, {**args, "write_mode": "new"}).text
    assert f"file:notes/{day}_2.json" in again
    by_path = {f["path"]: f for f in client.get(f"/v1/sessions/{session}/files").json()["items"]}
    assert content(client, by_path[f"notes/{day}.json"]["handle"]) == b'{"note": "hello"}\n{"note": "hello"}'


def test_rest_peek_read_search_and_export_answer_json(client: httpx.Client, session: str) -> None:
    base = f"/v1/sessions/{session}/variables/search_results"
    peek = client.get(f"{base}/peek", params={"offset": 10, "max_chars": 20}).json()
    assert (peek["offset"], peek["text"], peek["next_offset"]) == (10, RESULTS[10:30], 30)
    assert peek["total_chars"] == len(RESULTS) and peek["rendered"].startswith("[search_results: chars 10-29")
    lines = client.get(f"{base}/read", params={"start_line": 399, "end_line": 400}).json()
    assert (lines["first_line"], lines["last_line"], lines["total_lines"]) == (399, 400, 400)
    assert lines["text"] == "   399\tresult 399: item 399 ✓\n   400\tresult 400: item 400 ✓"
    chars = client.get(f"{base}/read", params={"offset": len(RESULTS) - 5, "length": 100}).json()
    assert chars["text"] == RESULTS[-5:] and chars["next_offset"] is None
    found = client.get(f"/v1/sessions/{session}/search", params={"target": "todo", "ignore_case": True}).json()
    assert found["matches"] == 8 and [b["name"] for b in found["buffers"]] == ["search_results", "note"]
    scoped = client.get(
        f"/v1/sessions/{session}/search",
        params={"target": "item 4\\d\\b", "regex": True, "scope": "search_results", "context": 1},
    )
    scoped_text = scoped.json()["buffers"][0]["text"]
    assert (
        scoped.json()["matches"] == 10 and "    39-\tresult 39" in scoped_text and "    50-\tresult 50" in scoped_text
    )
    exported = client.post(f"{base}/export", json={"destination": "out/r.md", "write_mode": "replace"}).json()
    assert (exported["path"], exported["chars"], exported["write_mode"]) == ("out/r.md", len(RESULTS), "replace")
    assert content(client, exported["handle"]) == RESULTS.encode()


def test_rest_mistakes_are_http_errors(client: httpx.Client, session: str) -> None:
    base = f"/v1/sessions/{session}/variables"
    missing = assert_error(client.get(f"{base}/nope/peek"), 404, "unknown_variable")
    assert missing["details"]["available"] == ["note", "search_results"]
    assert_error(client.get(f"{base}/search_results/read"), 422, "invalid_buffer_op")
    limit = BufferLimits().max_read_chars
    assert_error(
        client.get(f"{base}/search_results/read", params={"offset": 0, "length": limit + 1}), 422, "invalid_buffer_op"
    )
    assert_error(
        client.get(f"/v1/sessions/{session}/search", params={"target": "(?<=a)", "regex": True}), 400, "invalid_pattern"
    )
    assert_error(
        client.get(f"/v1/sessions/{session}/search", params={"target": "x", "scope": "nope"}), 404, "unknown_variable"
    )
    assert_error(client.post(f"{base}/note/export", json={"destination": "/abs"}), 422, "invalid_file_path")
    assert_error(client.get(f"{base}/bad-name/peek"), 422, "invalid_variable_name")


def test_character_windows_count_characters_in_blob_stored_multibyte_text(start_server) -> None:
    server = start_server(inline_output_max_bytes=0)
    text = "".join(f"{i:04d} ünïcödé ✓ line\n" for i in range(3000))
    with server.client() as client:
        session = new_session(client)
        stored(upload(client, session, text, name="u"))
        window = client.get(f"/v1/sessions/{session}/variables/u/read", params={"offset": 50_000, "length": 40})
        assert window.json()["text"] == text[50_000:50_040]
