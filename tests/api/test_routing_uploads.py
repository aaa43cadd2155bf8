"""Output routing on upload (docs/spec/directives.md) over real HTTP, real Redis and both blob stores.

`output=variable:NAME|file:PATH|discard` with `write_mode=append|replace|new`: what is stored where, how
appended parts join, the manifest the model sees, what is refused, and that racing writers lose nothing.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.api.session_client import content, new_session, resolve, stored, upload, variables
from tests.fixtures.api_server import ApiServer, assert_error

ROUTED_KEYS = {"routed", "destination", "name", "path", "handle", "chars", "bytes", "manifest"}


@pytest.fixture()
def server(store_server: ApiServer) -> ApiServer:
    return store_server


@pytest.fixture()
def client(server: ApiServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def test_a_routed_upload_answers_the_manifest_and_appends_on_a_new_line(client: httpx.Client) -> None:
    session = new_session(client)
    first = stored(upload(client, session, "résumé one", tool="search", output="variable:search_results"))
    assert set(first) == ROUTED_KEYS and first["routed"] is True
    assert first["manifest"] == "[tool output routed] search -> variable:search_results (total 10 chars)"
    assert (first["destination"], first["name"], first["path"]) == ("variable:search_results", "search_results", None)
    assert (first["chars"], first["bytes"]) == (10, 12)
    second = stored(upload(client, session, "two\n", tool="search", output="variable:search_results"))
    assert second["handle"] != first["handle"]
    assert content(client, second["handle"]) == "résumé one\ntwo\n".encode()
    third = stored(upload(client, session, "three", tool="search", output="variable:search_results"))
    assert content(client, third["handle"]) == "résumé one\ntwo\nthree".encode()
    listed = variables(client, session)["search_results"]
    assert listed["handle"] == third["handle"] and listed["chars"] == len("résumé one\ntwo\nthree")
    assert listed["updated_at"] >= listed["created_at"]
    assert content(client, first["handle"]) == "résumé one".encode()  # the old version stays readable (retired)


def test_appending_json_to_json_makes_text(client: httpx.Client) -> None:
    session = new_session(client)
    first = stored(upload(client, session, {"a": 1}, output="variable:x"))
    assert resolve(client, session, "$x.a").json()["value"] == 1
    stored(upload(client, session, {"b": 2}, output="variable:x"))
    listed = variables(client, session)["x"]
    assert listed["content_type"] == "text/plain" and listed["created_at"] == pytest.approx(
        client.get(f"/v1/outputs/{first['handle']}").json()["created_at"]
    )
    assert resolve(client, session, "$x").json()["value"] == '{"a": 1}\n{"b": 2}'
    assert_error(resolve(client, session, "$x.a"), 422, "not_json")


def test_replace_and_new(client: httpx.Client) -> None:
    session = new_session(client)
    stored(upload(client, session, "old", output="variable:foo"))
    replaced = stored(upload(client, session, "new", output="variable:foo", write_mode="replace"))
    assert content(client, replaced["handle"]) == b"new"
    names = [
        stored(upload(client, session, f"v{i}", output="variable:foo", write_mode="new"))["name"] for i in range(2)
    ]
    assert names == ["foo_2", "foo_3"]
    fresh = stored(upload(client, session, "x", output="variable:fresh", write_mode="new"))
    assert fresh["destination"] == "variable:fresh"
    assert resolve(client, session, ["$foo", "$foo_2", "$foo_3"]).json()["value"] == ["new", "v0", "v1"]


def test_files_with_today_listed_and_read_like_any_output(client: httpx.Client) -> None:
    session = new_session(client)
    first = stored(upload(client, session, "ERROR one\nok\n", tool="code_execution", output="file:results/{today}"))
    path = f"results/{today()}"
    assert (first["destination"], first["path"], first["name"]) == (f"file:{path}", path, None)
    assert first["manifest"] == f"[tool output routed] code_execution -> file:{path} (total 13 chars)"
    second = stored(upload(client, session, "ERROR two", output="file:results/{today}"))
    other = stored(upload(client, session, "x", output="file:results/{today}", write_mode="new"))
    assert other["path"] == f"{path}_2"
    files = client.get(f"/v1/sessions/{session}/files").json()["items"]
    assert [(f["path"], f["handle"]) for f in files] == [(path, second["handle"]), (f"{path}_2", other["handle"])]
    assert set(files[0]) == {"path", "handle", "bytes", "chars", "content_type", "created_at", "updated_at"}
    handle = second["handle"]
    assert content(client, handle) == b"ERROR one\nok\nERROR two"
    assert client.get(f"/v1/outputs/{handle}/lines", params={"offset": 3}).text.startswith("     3\tERROR two")
    grep = client.get(f"/v1/outputs/{handle}/grep", params={"pattern": "ERROR"}, headers={"Accept": "application/json"})
    assert grep.json()["matches"] == 2
    assert variables(client, session) == {}  # files are not variables


def test_discard_stores_nothing(client: httpx.Client, server: ApiServer) -> None:
    session = new_session(client)
    answer = stored(upload(client, session, "secret output", tool="noisy", output="discard"))
    assert answer == {
        "routed": True,
        "destination": "discard",
        "name": None,
        "path": None,
        "handle": None,
        "chars": 13,
        "bytes": 13,
        "manifest": "[tool output routed] noisy -> discard (total 13 chars)",
    }
    assert client.get(f"/v1/sessions/{session}").json()["outputs"] == []
    assert variables(client, session) == {} and client.get(f"/v1/sessions/{session}/files").json()["items"] == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"output": "bogus"}, "invalid_destination"),
        ({"output": "variable:"}, "invalid_destination"),
        ({"output": "variable:1x"}, "invalid_destination"),
        ({"output": "file:/etc/passwd"}, "invalid_destination"),
        ({"output": "file:a/../../b"}, "invalid_destination"),
        ({"output": "file:a\x01b"}, "invalid_destination"),
        ({"output": "file:a/{tomorrow}"}, "invalid_destination"),
        ({"output": "variable:x", "write_mode": "sideways"}, "invalid_destination"),
        ({"write_mode": "append"}, "invalid_destination"),
        ({"output": "file:a.md", "name": "a"}, "invalid_destination"),
        ({"output": "variable:a", "name": "b"}, "invalid_destination"),
        ({"name": "not valid"}, "invalid_variable_name"),
    ],
)
def test_bad_routes_are_422s_and_store_nothing(client: httpx.Client, params: dict[str, str], code: str) -> None:
    session = new_session(client)
    error = assert_error(upload(client, session, "x", **params), 422, code)
    assert error["message"]
    assert client.get(f"/v1/sessions/{session}").json()["outputs"] == []


def test_headers_win_over_query_parameters(client: httpx.Client) -> None:
    session = new_session(client)
    headers = {"X-Output": "variable:from_header", "X-Write-Mode": "replace", "X-Variable-Name": "from_header"}
    answer = stored(upload(client, session, "x", headers=headers, output="variable:from_query", write_mode="new"))
    assert answer["name"] == "from_header" and set(variables(client, session)) == {"from_header"}


def test_a_routed_output_is_stored_whatever_the_store_policy(client: httpx.Client) -> None:
    session = new_session(client)
    assert stored(upload(client, session, "small", output="variable:v", store="if_oversized"))["handle"]
    inline = stored(upload(client, session, "small", store="if_oversized"))
    assert inline["stored"] is False and inline["name"] is None


def test_a_replayed_routed_upload_appends_once(client: httpx.Client) -> None:
    session = new_session(client)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = upload(client, session, "part", output="variable:log", headers=key)
    again = upload(client, session, "part", output="variable:log", headers=key)
    assert again.headers["idempotent-replayed"] == "true" and again.json() == first.json()
    assert resolve(client, session, "$log").json()["value"] == "part"


def test_racing_appends_lose_no_part_and_racing_new_writes_get_distinct_names(start_server) -> None:
    server = start_server(inline_output_max_bytes=0)  # every version a blob: the slow path races longest
    with server.client() as client:
        session = new_session(client)
        parts = [f"part {i:02d}" for i in range(8)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda p: stored(upload(client, session, p, output="variable:log")), parts))
            names = list(
                pool.map(
                    lambda i: stored(upload(client, session, "n", output="variable:n", write_mode="new"))["name"],
                    range(6),
                )
            )
        text = resolve(client, session, "$log").json()["value"]
        assert sorted(text.split("\n")) == parts
        assert sorted(names) == ["n", "n_2", "n_3", "n_4", "n_5", "n_6"]
        record = server.services.records.outputs.get_output(variables(client, session)["log"]["handle"])
        assert record.parts == 8 and record.inline is None


def test_appending_to_a_big_variable_streams_a_new_measured_version(start_server) -> None:
    server = start_server(inline_output_max_bytes=1024)
    old = "".join(f"line {i} INFO ok\n" for i in range(20_000)).encode()
    new = "".join(f"line {i} ERROR bad\n" for i in range(5)).encode()
    with server.client() as client:
        session = new_session(client)
        first = stored(upload(client, session, old, tool="logs", output="variable:log"))
        second = stored(upload(client, session, new, tool="logs", output="variable:log"))
        assert content(client, second["handle"]) == old + new
        meta = client.get(f"/v1/outputs/{second['handle']}").json()
        assert (meta["bytes"], meta["lines"]) == (len(old) + len(new), 20_005)
        assert meta["tokens"] > client.get(f"/v1/outputs/{first['handle']}").json()["tokens"]
        lines = client.get(f"/v1/outputs/{second['handle']}/lines", params={"offset": 20_001, "limit": 2})
        assert lines.text.startswith(" 20001\tline 0 ERROR bad")
        grep = client.get(
            f"/v1/outputs/{second['handle']}/grep", params={"pattern": "ERROR"}, headers={"Accept": "application/json"}
        )
        assert grep.json()["matches"] == 5
        record = server.services.records.outputs.get_output(second["handle"])
        assert record.inline is None and server.services.blobs.exists(record.lines_key or "")
