"""What the proxy does to one upstream result (`toolout.mcp.results`) and to the tool list, on the fake service."""

from __future__ import annotations

import anyio
import pytest
from mcp import types

from extraction.directives.manifest import tool_manifest
from extraction.directives.specs import make_route
from extraction.documents.stats import measure
from extraction.texts.oversize import too_large_message
from tests.toolout.fake_service import FakeService, names
from toolout.mcp import output_uri
from toolout.mcp.results import Upload, result_text, shrink, unstamped
from toolout.toolkit.standard import STANDARD_NAMES

BIG = "\n".join(f"row {n}: nothing here" for n in range(3000))


def text_result(*texts: str, structured: dict | None = None, is_error: bool = False) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text) for text in texts]
    return types.CallToolResult(content=content, structured_content=structured, is_error=is_error)


def shrunk(service: FakeService, result: types.CallToolResult, **upload: object) -> types.CallToolResult:
    async def run() -> types.CallToolResult:
        client = service.async_client()
        session = await client.create_session()
        return await shrink(client, result, Upload(session, "fetch", {"q": "x"}, **upload))  # type: ignore[arg-type]

    return anyio.run(run)


def test_only_text_results_are_stored_and_errors_images_stay_as_they_are() -> None:
    assert result_text(text_result("a", "b")) == "a\nb"
    assert result_text(text_result(structured={"b": 1, "a": "é"})) == '{"a":"é","b":1}'
    assert result_text(text_result("boom", is_error=True)) is None
    image = types.ImageContent(type="image", data="AAAA", mime_type="image/png")
    assert result_text(types.CallToolResult(content=[types.TextContent(type="text", text="x"), image])) is None
    assert result_text(types.CallToolResult(content=[])) is None


def test_a_small_result_is_returned_as_the_same_object_and_nothing_is_kept() -> None:
    service = FakeService()
    small = text_result("short", structured={"content": "short"})
    assert shrunk(service, small) is small
    upload = service.requests[-1]
    assert upload.url.path.endswith("/outputs") and upload.url.params["store"] == "if_oversized"
    [session] = service.sessions
    assert names(service.store_of(session)) == []


def test_with_store_always_a_small_result_is_kept_as_a_variable_and_still_returned_unchanged() -> None:
    service = FakeService()
    small = text_result("short")
    assert shrunk(service, small, store="always") is small
    [session] = service.sessions
    assert names(service.store_of(session)) == ["fetch_1"]


def test_an_oversized_result_becomes_the_message_a_link_and_structured_content_that_still_fits() -> None:
    service = FakeService()
    result = shrunk(service, text_result(BIG, structured={"content": BIG, "path": "/x"}))
    [message, link] = result.content
    assert isinstance(message, types.TextContent) and isinstance(link, types.ResourceLink)
    handle = link.uri.removeprefix("toolout://outputs/")
    assert message.text == too_large_message(measure([BIG.encode()]).stats, handle) and link.uri == output_uri(handle)
    assert result.structured_content == {"content": message.text, "path": "/x"} and not result.is_error


def test_structured_content_that_does_not_repeat_the_text_is_dropped_when_oversized() -> None:
    rows = {"rows": [{"n": n} for n in range(2000)]}
    result = shrunk(FakeService(), text_result(structured=rows))
    assert result.structured_content is None
    assert isinstance(result.content[0], types.TextContent) and result.content[0].text.startswith("Tool output is too")


def test_a_routed_result_becomes_the_manifest() -> None:
    result = shrunk(FakeService(), text_result("two\nlines"), route=make_route("variable:hits"))
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == tool_manifest("fetch", "variable:hits", len("two\nlines"))


def test_a_discarded_result_becomes_the_manifest_and_is_stored_nowhere() -> None:
    service = FakeService()
    result = shrunk(service, text_result("gone"), route=make_route("discard"))
    assert [block.type for block in result.content] == ["text"]
    assert isinstance(result.content[0], types.TextContent) and result.content[0].text == tool_manifest(
        "fetch", "discard", len("gone")
    )
    [session] = service.sessions
    assert names(service.store_of(session)) == []


def test_the_upstreams_server_stamp_is_dropped_and_the_rest_of_meta_kept() -> None:
    stamped = text_result("x").model_copy(
        update={"meta": {types.SERVER_INFO_META_KEY: {"name": "up"}, "example.com/trace": "t1"}}
    )
    assert unstamped(stamped).meta == {"example.com/trace": "t1"}
    plain = text_result("x")
    assert unstamped(plain) is plain


class ListingUpstream:
    """Stands in for `toolout.mcp.upstream.Upstream` where only its tool list matters."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    async def list_tools(self) -> list[types.Tool]:
        return [types.Tool(name=name, input_schema={"type": "object"}) for name in self.names]


def test_an_upstream_tool_named_like_a_toolout_tool_is_hidden_and_routes_are_checked_against_the_upstream() -> None:
    from toolout.mcp.proxy import Proxy, ProxyConfig
    from toolout.mcp.upstream import UpstreamSpec
    from toolout.toolkit.errors import ToolDefinitionError

    config = ProxyConfig(UpstreamSpec(url="http://x/mcp"), "http://api", routes=("search(output=variable:hits)",))
    upstream = ListingUpstream(["search", "tool_output"])
    proxy = Proxy(config, upstream, FakeService().async_client())  # type: ignore[arg-type]
    anyio.run(proxy.start)
    listed = [tool.name for tool in anyio.run(proxy.list_tools)]
    assert listed == ["search", *STANDARD_NAMES]
    assert proxy.routes["search"] == make_route("variable:hits")
    wrong = Proxy(ProxyConfig(UpstreamSpec(url="http://x/mcp"), "http://api", routes=("serch(output=discard)",)),
                  upstream, FakeService().async_client())  # type: ignore[arg-type]  # fmt: skip
    with pytest.raises(ToolDefinitionError, match=r"unknown tool\(s\) \['serch'\]"):
        anyio.run(wrong.start)
