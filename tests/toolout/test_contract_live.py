"""The SDK's variables calls against the real API over HTTP (in-memory stores: `live_api`).

The same checks as `tests/toolout/sdk/test_contract_calls.py` makes on the contract fake, here on the
server itself: they keep the SDK and the fake honest. Skipped, naming the missing routes, on an API
without the variables server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tests.toolout.variables_server import require_variable_routes
from toolout.client import AsyncToolOutClient, ToolOutAPIError, ToolOutClient, ToolText

pytestmark = pytest.mark.twin(
    "the SDK against the server's routes (variables, routing); stores are covered by the API's store_server tests"
)


@pytest.fixture()
def client(live_api) -> Iterator[ToolOutClient]:
    require_variable_routes(live_api.url)
    with ToolOutClient(live_api.url) as sdk:
        yield sdk


@pytest.fixture()
def session(client: ToolOutClient) -> str:
    session = client.create_session()
    body = json.dumps({"items": [{"id": 7}, {"id": 8}]}).encode()
    client.store(session, body, tool_name="orders", content_type="application/json")
    client.store(session, "line one\nline two\n", tool_name="search", output="variable:hits")
    return session


def test_uploads_name_and_route(client: ToolOutClient, session: str) -> None:
    named = client.store(session, "x", tool_name="web.search", name="picked")
    default = client.store(session, "y", tool_name="web.search")
    routed = client.store(session, "more\n", tool_name="search", output="variable:hits", write_mode="append")
    filed = client.store(session, "report", tool_name="write", output="file:reports/{today}.md")
    dropped = client.store(session, "noise", tool_name="noise", output="discard")
    assert (named["name"], default["name"]) == ("picked", "web_search_1")
    assert routed["routed"] and routed["manifest"] == "[tool output routed] search -> variable:hits (total 5 chars)"
    assert filed["path"].startswith("reports/") and filed["name"] is None
    assert (dropped["destination"], dropped["handle"]) == ("discard", None)
    assert [f["path"] for f in client.files(session)] == [filed["path"]]


def test_variables_views_and_unknown_names(client: ToolOutClient, session: str) -> None:
    names = [v["name"] for v in client.variables(session)]
    assert names == ["orders_1", "hits"]
    view = client.variable(session, "orders_1")
    assert (view["tool"], view["content_type"], view["preview"]) == (
        "orders",
        "application/json",
        '{"items":[{"id":7},{"id":8}]}',
    )
    with pytest.raises(ToolOutAPIError) as missing:
        client.variable(session, "nope")
    assert (missing.value.status, missing.value.code) == (404, "unknown_variable")
    assert sorted(missing.value.details["available"]) == sorted(names)


def test_resolve_is_typed_and_its_errors_say_what_exists(client: ToolOutClient, session: str) -> None:
    resolved = client.resolve(session, {"first": "$orders_1.items[1]", "cmd": "ls $HOME"})
    assert resolved["value"] == {"first": {"id": 8}, "cmd": "ls $HOME"}
    assert [(w["code"], w["reference"]) for w in resolved["warnings"]] == [("unknown_variable", "$HOME")]
    for reference, code in (
        ("$nope", "unknown_variable"),
        ("$orders_1.items[5]", "missing_field"),
        ("$hits.x", "not_json"),
    ):
        with pytest.raises(ToolOutAPIError) as refused:
            client.resolve(session, reference)
        assert (refused.value.status, refused.value.code) == (422, code)


def test_instructions_list_the_variables(client: ToolOutClient, session: str) -> None:
    text = client.instructions(session)
    assert text.startswith("\n## Tool Output Variables\n\nTool outputs are automatically saved as variables.")
    assert text.endswith('- `$orders_1` (orders): {"items":[{"id":7},{"id":8}]}\n- `$hits` (search): line one line two')


def test_buffer_ops_and_its_rest_equivalents(client: ToolOutClient, session: str) -> None:
    peeked = client.buffer_ops(session, '{"operation": "peek", "target": "hits", "max_chars": 4}')
    misuse = client.buffer_ops(session, {"operation": "read", "target": "hits"})
    assert isinstance(peeked, ToolText) and not peeked.is_error and "line" in peeked.text
    assert misuse.is_error and misuse.text.startswith("Error: read needs a range")
    with pytest.raises(ToolOutAPIError) as malformed:
        client.buffer_ops(session, "[1]")
    assert malformed.value.status == 422
    assert client.peek_variable(session, "hits", offset=5, max_chars=3)["text"] == "one"
    assert client.read_variable(session, "hits", start_line=2, end_line=2)["text"] == "     2\tline two"
    assert "line two" in client.search_variables(session, "TWO", scope="hits", ignore_case=True)["rendered"]
    assert client.export_variable(session, "hits", "out/h.txt", write_mode="replace")["path"] == "out/h.txt"


def test_routing_parse_and_the_resolve_stream(client: ToolOutClient, session: str) -> None:
    spec = client.parse_routing("@tools a(output=variable:x, write-mode=replace)")
    assert (
        spec["tools"]["a"]
        == client.parse_routing(tools={"a": {"output": "variable:x", "write_mode": "replace"}})["tools"]["a"]
    )
    assert "".join(client.resolve_stream(session, ["id=$orders_1.it", "ems[0].id!"])) == "id=7!"


def test_the_async_client_on_the_same_routes(live_api, client: ToolOutClient, session: str) -> None:
    async def main() -> tuple:
        async with AsyncToolOutClient(live_api.url) as aclient:
            return (
                await aclient.resolve(session, "$orders_1.items[0]"),
                await aclient.instructions(session, style="minimal"),
                "".join([t async for t in aclient.resolve_stream(session, ["$orders_1.items[1].id"])]),
            )

    resolved, minimal, streamed = asyncio.run(main())
    assert resolved["value"] == {"id": 7} and "`$hits` (search)" in minimal and streamed == "8"
