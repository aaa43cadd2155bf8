"""The SDK's variables/routing/buffer_ops calls against a fake of the REST contract, on both clients.

Every scenario runs once on `ToolOutClient` and once on `AsyncToolOutClient` (same plans, two
transports): the wire format (paths, query parameters, bodies) and the parsed answers must match.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.toolout.fake_service import FakeService
from toolout.client import ToolOutAPIError, ToolText

Call = Callable[..., Awaitable[Any]]


def on_both_clients(scenario: Callable[[Call, FakeService], Awaitable[Any]]) -> list[Any]:
    """Run `scenario(call, fake)` with a sync and with an async client; return both results."""
    results = []
    for kind in ("sync", "async"):
        fake = FakeService()

        async def main(fake: FakeService = fake, kind: str = kind) -> Any:
            client = fake.sync_client() if kind == "sync" else fake.async_client()

            async def call(method: str, /, *args: Any, **kwargs: Any) -> Any:
                result = getattr(client, method)(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result

            return await scenario(call, fake)

        results.append(asyncio.run(main()))
    return results


def test_upload_sends_name_output_and_write_mode_as_query_parameters() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        inline = await call("store", session, b'{"a": 1}', tool_name="get", content_type="application/json", name="g")
        routed = await call("store", session, "hits", tool_name="search", output="variable:found", write_mode="replace")
        upload = [r for r in fake.requests if r.url.path.endswith("/outputs")][-1]
        return inline["name"], routed, dict(upload.url.params)

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    name, routed, params = sync
    assert name == "g"
    assert params == {"store": "always", "output": "variable:found", "write_mode": "replace"}
    assert routed["routed"] is True and routed["destination"] == "variable:found" and routed["name"] == "found"
    assert routed["manifest"] == "[tool output routed] search -> variable:found (total 4 chars)"


def test_default_names_come_from_the_service() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        first = await call("store", session, "x", tool_name="web.search")
        second = await call("store", session, "y", tool_name="web.search")
        return first["name"], second["name"], [v["name"] for v in await call("variables", session)]

    sync, async_ = on_both_clients(scenario)
    assert sync == async_ == ("web_search_1", "web_search_2", ["web_search_1", "web_search_2"])


def test_resolve_returns_typed_values_and_warnings() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        body = json.dumps({"items": [{"id": 7}]}).encode()
        await call("store", session, body, tool_name="orders", content_type="application/json", name="orders")
        resolved = await call("resolve", session, {"first": "$orders.items[0]", "cmd": "ls $HOME"})
        sent = json.loads([r for r in fake.requests if r.url.path.endswith("/resolve")][-1].content)
        return resolved, sent

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    resolved, sent = sync
    assert sent == {"value": {"first": "$orders.items[0]", "cmd": "ls $HOME"}}
    assert resolved["value"] == {"first": {"id": 7}, "cmd": "ls $HOME"}
    assert [w["code"] for w in resolved["warnings"]] == ["unknown_variable"]


def test_resolve_errors_are_typed_with_what_exists() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        await call("store", session, "text", tool_name="t", name="known")
        with pytest.raises(ToolOutAPIError) as caught:
            await call("resolve", session, "$unknown", max_value_chars=100)
        sent = json.loads([r for r in fake.requests if r.url.path.endswith("/resolve")][-1].content)
        return caught.value.status, caught.value.code, caught.value.details, sent

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    status, code, details, sent = sync
    assert (status, code) == (422, "unknown_variable")
    assert details["available"] == ["known"]
    assert sent == {"value": "$unknown", "max_value_chars": 100}


def test_variable_views_instructions_and_files() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        await call("store", session, "sunny, 21C", tool_name="weather", name="weather_nyc")
        await call("store", session, "report", tool_name="write", output="file:reports/{today}.md")
        view = await call("variable", session, "weather_nyc")
        text = await call("instructions", session, style="minimal")
        files = await call("files", session)
        with pytest.raises(ToolOutAPIError) as missing:
            await call("variable", session, "nope")
        return view, text, files, missing.value.code, str(fake.requests[-3].url.params)

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    view, text, files, missing, params = sync
    assert (view["name"], view["tool"], view["preview"]) == ("weather_nyc", "weather", "sunny, 21C")
    assert text.endswith("### Available Variables:\n- `$weather_nyc` (weather): sunny, 21C")
    assert params == "style=minimal"
    assert [(f["path"], f["chars"]) for f in files] == [("reports/2026-11-23.md", 6)]
    assert missing == "unknown_variable"


def test_buffer_ops_sends_the_arguments_verbatim_and_flags_misuse() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        await call("store", session, "line one\nline two\n", tool_name="search", output="variable:hits")
        raw = '{"operation": "peek", "target": "hits", "offset": 5, "max_chars": 3}'
        peeked = await call("buffer_ops", session, raw)
        sent = fake.requests[-1].content.decode()
        misuse = await call("buffer_ops", session, {"operation": "read", "target": "hits"})
        with pytest.raises(ToolOutAPIError) as malformed:
            await call("buffer_ops", session, "[1, 2]")
        return peeked, sent, misuse, malformed.value.status

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    peeked, sent, misuse, malformed = sync
    assert sent == '{"operation": "peek", "target": "hits", "offset": 5, "max_chars": 3}'
    assert isinstance(peeked, ToolText) and not peeked.is_error and "one" in peeked.text
    assert misuse.is_error and misuse.text.startswith("Error: ")
    assert malformed == 422


def test_rest_equivalents_of_buffer_ops() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        session = await call("create_session")
        await call("store", session, "alpha\nbeta\ngamma\n", tool_name="t", name="doc")
        peek = await call("peek_variable", session, "doc", offset=6, max_chars=4)
        read = await call("read_variable", session, "doc", start_line=2, end_line=3)
        found = await call("search_variables", session, "GAMMA", scope="doc", ignore_case=True)
        search_params = dict(fake.requests[-1].url.params)
        exported = await call("export_variable", session, "doc", "out/doc.txt", write_mode="replace")
        export_body = json.loads(fake.requests[-1].content)
        return peek["text"], read["text"], found["rendered"], search_params, exported["path"], export_body

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    peek, read, found, search_params, exported, export_body = sync
    assert peek == "beta"
    assert read.splitlines() == ["     2\tbeta", "     3\tgamma"]
    assert "gamma" in found
    assert search_params == {"target": "GAMMA", "scope": "doc", "ignore_case": "true"}
    assert exported == "out/doc.txt"
    assert export_body == {"destination": "out/doc.txt", "write_mode": "replace"}


def test_parse_routing_takes_directive_text_or_the_dict_form() -> None:
    async def scenario(call: Call, fake: FakeService) -> Any:
        from_text = await call("parse_routing", "@tools search(output=variable:hits, write-mode=replace), fetch")
        from_dict = await call("parse_routing", tools={"search": {"output": "variable:hits", "write_mode": "replace"}})
        return from_text, from_dict

    sync, async_ = on_both_clients(scenario)
    assert sync == async_
    from_text, from_dict = sync
    assert from_text["tools"]["search"] == from_dict["tools"]["search"]
    assert from_text["tools"]["fetch"] is None


def test_resolve_stream_posts_text_and_streams_back_the_resolved_text() -> None:
    fake = FakeService()
    client = fake.sync_client()
    session = client.create_session()
    client.store(session, b'{"t": 21}', tool_name="w", content_type="application/json", name="w")
    assert "".join(client.resolve_stream(session, ["It is $w", ".t degrees"])) == "It is 21 degrees"
    assert fake.requests[-1].headers["Content-Type"] == "text/plain; charset=utf-8"

    async def main() -> str:
        async def chunks():  # type: ignore[no-untyped-def]
            for chunk in ["It is $w", ".t", " degrees"]:
                yield chunk

        aclient = fake.async_client()
        return "".join([text async for text in aclient.resolve_stream(session, chunks())])

    assert asyncio.run(main()) == "It is 21 degrees"
