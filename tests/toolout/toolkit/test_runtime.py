"""Toolkit: $var resolution, saving outputs as variables, routing, the too-large message, standard tools."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from extraction.errors import InvalidInput
from extraction.schemas.strict_rules import strict_violations
from extraction.texts.tools import TOOL_OUTPUT_PARAMETERS
from tests.toolout.fake_service import FakeService
from tests.toolout.toolkit.conftest import Order, OrderTools, call, sync_kit
from toolout.toolkit import ImagePart, PartsResult, ToolDefinitionError, tool
from toolout.toolkit.errors import ToolkitError
from toolout.toolkit.runtime import Toolkit


def test_a_small_output_is_shown_unchanged_and_saved_as_a_variable(fake: FakeService) -> None:
    tools = OrderTools()
    kit = sync_kit(fake, tools.all)
    (report,) = kit.run_calls([call("get_orders", {"limit": 2})])
    assert json.loads(report.message.content) == {
        "items": [{"id": 1, "note": "", "status": "paid"}, {"id": 2, "note": "", "status": "paid"}]
    }
    assert (report.variable, report.routed, report.oversized) == ("get_orders_1", False, False)
    assert fake.variable_value(kit.session_id, "get_orders_1")["items"][1]["id"] == 2
    upload = next(r for r in fake.requests if r.url.path.endswith("/outputs"))
    assert upload.headers["Content-Type"] == "application/json"
    assert upload.headers["X-Tool-Args"] == '{"limit": 2}'  # what the model sent, verbatim


def test_a_reference_gives_the_next_tool_the_typed_object(fake: FakeService) -> None:
    tools = OrderTools()
    kit = sync_kit(fake, tools.all)
    kit.handle([call("get_orders", {})])
    (report,) = kit.run_calls([call("show_order", {"order": "$get_orders_1.items[1]"})])
    assert report.message.content == "order 2 is paid"
    assert tools.received == [Order(id=2, status="paid")]
    assert report.variable == "show_order_1"


def test_no_round_trip_when_the_arguments_have_no_reference(fake: FakeService) -> None:
    kit = sync_kit(fake, OrderTools().all)
    kit.handle([call("get_orders", {}), call("show_order", {"order": {"id": 5, "status": "new"}})])
    assert not [p for p in fake.paths() if p.endswith("/resolve")]


def test_an_unresolvable_reference_is_the_calls_error_and_the_tool_does_not_run(fake: FakeService) -> None:
    tools = OrderTools()
    kit = sync_kit(fake, tools.all)
    kit.handle([call("get_orders", {})])
    (missing,) = kit.handle([call("show_order", {"order": "$get_orders_1.items[9]"})])
    (unknown,) = kit.handle([call("show_order", {"order": "$orders"})])
    assert missing["content"].startswith('Error resolving variable references for tool "show_order": ')
    assert "index 9" in missing["content"] or "[9]" in missing["content"]
    assert "get_orders_1" in unknown["content"]  # the message lists what exists
    assert tools.received == []


def test_an_oversized_output_gives_the_exact_message_and_tool_output_extracts(fake: FakeService) -> None:
    fake.max_bytes = 500
    kit = sync_kit(fake, OrderTools(count=20, padding=40).all)
    (report,) = kit.run_calls([call("get_orders", {})])
    assert report.oversized and report.handle
    lines = report.message.content.split("\n")
    assert lines[0].startswith("Tool output is too large (") and lines[0].endswith(" tokens).")
    assert lines[1] == f'Call tool_output(handle = "{report.handle}", extract = "what to extract").'
    (answer,) = kit.handle([call("tool_output", {"handle": report.handle, "extract": "order ids"})])
    assert answer["content"].startswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {report.handle}")


def test_a_routed_output_gives_only_the_manifest_and_buffer_ops_reads_it_back(fake: FakeService) -> None:
    @tool
    def search(q: str) -> str:
        """Search the web."""
        return "\n".join(f"result {i} for {q}" for i in range(1, 51))

    kit = sync_kit(fake, [search], routes="@tools search(output=variable:search)")
    (report,) = kit.run_calls([call("search", {"q": "toolout"})])
    assert report.routed and report.variable == "search"
    chars = len("\n".join(f"result {i} for toolout" for i in range(1, 51)))
    assert report.message.content == f"[tool output routed] search -> variable:search (total {chars:,} chars)"
    (peek,) = kit.handle(
        [call("buffer_ops", {"operation": "read", "target": "search", "start_line": 2, "end_line": 3})]
    )
    assert "result 2 for toolout" in peek["content"] and "result 3 for toolout" in peek["content"]
    assert "result 4" not in peek["content"]


def test_routes_as_a_dict_with_write_modes_and_discard(fake: FakeService) -> None:
    @tool
    def note(text: str) -> str:
        """Take a note."""
        return text

    @tool
    def noise() -> str:
        """Make noise."""
        return "la la la"

    kit = sync_kit(
        fake, [note, noise], routes={"note": {"output": "variable:notes", "write_mode": "append"}, "noise": "discard"}
    )
    kit.handle([call("note", {"text": "first"}), call("note", {"text": "second"})])
    (dropped,) = kit.run_calls([call("noise")])
    assert fake.variable_value(kit.session_id, "notes") == "first\nsecond"
    assert dropped.routed and dropped.handle is None
    assert dropped.message.content == "[tool output routed] noise -> discard (total 8 chars)"
    upload = next(r for r in fake.requests if r.url.path.endswith("/outputs"))
    assert dict(upload.url.params) == {"store": "always", "output": "variable:notes", "write_mode": "append"}


def test_routes_must_name_the_toolkits_tools(fake: FakeService) -> None:
    with pytest.raises(ToolDefinitionError, match=r"unknown tool\(s\) \['serch'\]"):
        sync_kit(fake, OrderTools().all, routes="serch(output=variable:x)")
    with pytest.raises(InvalidInput, match="column"):
        sync_kit(fake, OrderTools().all, routes="@tools get_orders(output=varible:x)")


def test_naming_chooses_the_variable_name(fake: FakeService) -> None:
    def naming(tool_name: str, args: dict, output: object) -> str | None:
        return f"orders_top{args['limit']}" if tool_name == "get_orders" else None

    kit = sync_kit(fake, OrderTools().all, naming=naming)
    first, second = kit.run_calls(
        [call("get_orders", {"limit": 2}), call("show_order", {"order": "$orders_top2.items[0]"})]
    )
    assert (first.variable, second.variable) == ("orders_top2", "show_order_1")
    with pytest.raises(InvalidInput, match="invalid variable name"):
        sync_kit(fake, OrderTools().all, naming=lambda *_: "not a name").handle([call("get_orders")])


def test_errors_and_parts_are_shown_but_not_stored(fake: FakeService) -> None:
    @tool
    def broken() -> str:
        """Fail."""
        raise RuntimeError("disk full")

    @tool
    def picture() -> PartsResult:
        """Draw."""
        return PartsResult((ImagePart("https://example.org/a.png"),))

    kit = sync_kit(fake, [broken, picture])
    failed, drawn = kit.run_calls([call("broken"), call("picture")])
    assert failed.message.content == "Error executing tool: disk full" and failed.message.is_error
    assert drawn.message.content == [{"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}]
    assert not [p for p in fake.paths() if p.endswith("/outputs")]


def test_an_unknown_tool_lists_the_available_ones(fake: FakeService) -> None:
    (message,) = sync_kit(fake, OrderTools().all).handle([call("get_order")])
    assert message["content"] == (
        "Unknown tool: get_order. Available tools: get_orders, show_order, tool_output, tool_output_cache, "
        "tool_output_cache_grep, buffer_ops"
    )


def test_handle_accepts_sdk_objects_messages_and_responses_in_call_order(fake: FakeService) -> None:
    kit = sync_kit(fake, OrderTools().all)

    def obj(call_id: str, name: str, arguments: str) -> SimpleNamespace:
        return SimpleNamespace(id=call_id, type="function", function=SimpleNamespace(name=name, arguments=arguments))

    calls = [obj("a", "get_orders", '{"limit": 1}'), obj("b", "show_order", '{"order": {"id": 9, "status": "new"}}')]
    message = SimpleNamespace(role="assistant", content=None, tool_calls=calls)
    response = SimpleNamespace(choices=[SimpleNamespace(message=message)])
    for source in (calls, message, response, {"role": "assistant", "tool_calls": [call("get_orders", None, "a")]}):
        ids = [m["tool_call_id"] for m in kit.handle(source)]
        assert ids == ["a", "b"][: len(ids)] and ids[0] == "a"
    assert kit.handle({"role": "assistant", "content": "done"}) == []


def test_json_text_is_stored_as_json_so_fields_resolve(fake: FakeService) -> None:
    @tool
    def weather(city: str) -> str:
        """Weather as JSON text."""
        return json.dumps({"city": city, "temperature": 21})

    @tool
    def say(text: str) -> str:
        """Echo."""
        return text

    kit = sync_kit(fake, [weather, say])
    kit.handle([call("weather", {"city": "Paris"})])
    (said,) = kit.handle([call("say", {"text": "It is $weather_1.temperature degrees in $weather_1.city"})])
    assert said["content"] == "It is 21 degrees in Paris"


def test_the_standard_tools_read_and_grep_a_stored_output_by_reference(fake: FakeService) -> None:
    @tool
    def logs() -> str:
        """Fetch logs."""
        return "\n".join(["INFO start", "ERROR disk full", "INFO retry", "ERROR disk still full"])

    kit = sync_kit(fake, [logs])
    (report,) = kit.run_calls([call("logs")])
    ref = report.handle
    read, grep, bad, unknown = kit.handle(
        [
            call("tool_output_cache", {"ref_id": ref, "offset": 2, "limit": 2}, "r"),
            call("tool_output_cache_grep", {"ref_id": ref, "pattern": "ERROR"}, "g"),
            call("tool_output_cache", {"ref_id": ref, "offset": 0}, "b"),
            call("tool_output_cache", {"ref_id": "00000000-0000-0000-0000-0000000000ff"}, "u"),
        ]
    )
    assert read["content"].splitlines()[:2] == ["     2\tERROR disk full", "     3\tINFO retry"]
    assert "ERROR disk full" in grep["content"] and "ERROR disk still full" in grep["content"]
    assert bad["content"].startswith('Invalid arguments for tool "tool_output_cache": offset:')
    assert unknown["content"].startswith("Error: ")


def test_openai_tools_lists_the_agents_tools_then_the_standard_ones(fake: FakeService) -> None:
    kit = sync_kit(fake, OrderTools().all)
    names = [t["function"]["name"] for t in kit.openai_tools()]
    assert names == [
        "get_orders",
        "show_order",
        "tool_output",
        "tool_output_cache",
        "tool_output_cache_grep",
        "buffer_ops",
    ]
    assert kit.openai_tools()[2]["function"]["parameters"] == TOOL_OUTPUT_PARAMETERS
    for definition in kit.openai_tools(strict=True):
        assert definition["function"]["strict"] is True
        assert strict_violations(definition["function"]["parameters"]) == [], definition["function"]["name"]
    only = Toolkit(OrderTools().all, client=fake.sync_client(), standard=["tool_output"])
    assert [t["function"]["name"] for t in only.openai_tools()][-1] == "tool_output"
    with pytest.raises(ToolDefinitionError):
        Toolkit([], client=fake.sync_client(), standard=["tool_outputs"])


def test_strict_mode_nulls_reach_the_standard_tools_as_not_given(fake: FakeService) -> None:
    @tool
    def logs() -> str:
        """Fetch logs."""
        return "a\nb\nc"

    kit = sync_kit(fake, [logs])
    ref = kit.run_calls([call("logs")])[0].handle
    (read,) = kit.handle([call("tool_output_cache", {"ref_id": ref, "offset": None, "limit": None})])
    assert read["content"].splitlines()[:3] == ["     1\ta", "     2\tb", "     3\tc"]


def test_instructions_list_the_sessions_variables(fake: FakeService) -> None:
    kit = sync_kit(fake, OrderTools().all)
    assert kit.instructions().endswith("No variables saved yet.")
    kit.handle([call("get_orders", {"limit": 1})])
    text = kit.instructions()
    assert text.startswith("\n## Tool Output Variables\n")
    assert text.endswith('- `$get_orders_1` (get_orders): {"items":[{"id":1,"note":"","status":"paid"}]}')


def test_the_session_is_created_once_and_deleted_only_if_the_toolkit_created_it(fake: FakeService) -> None:
    with sync_kit(fake, OrderTools().all) as kit:
        kit.handle([call("get_orders")])
        kit.instructions()
        created = kit.session_id
    assert fake.paths("POST").count("/v1/sessions") == 1
    assert fake.paths("DELETE") == [f"/v1/sessions/{created}"]
    session = fake.sync_client().create_session()
    with sync_kit(fake, OrderTools().all, session_id=session) as kept:
        kept.handle([call("get_orders")])
    assert fake.paths("DELETE") == [f"/v1/sessions/{created}"]


def test_a_toolkit_needs_the_service_and_distinct_tool_names(fake: FakeService) -> None:
    with pytest.raises(ToolkitError, match="api_url"):
        Toolkit(OrderTools().all)
    tools = OrderTools()
    with pytest.raises(ToolDefinitionError, match="two tools"):
        sync_kit(fake, [tools.get_orders, tools.get_orders])

    @tool
    def tool_output(handle: str) -> str:
        """Mine."""
        return handle

    with pytest.raises(ToolDefinitionError, match="standard tools"):
        sync_kit(fake, [tool_output])
    assert sync_kit(fake, [tool_output], standard=False).openai_tools()[0]["function"]["name"] == "tool_output"
    with pytest.raises(ToolkitError, match="api_url"):
        import asyncio

        asyncio.run(sync_kit(fake, [tool_output], standard=False).ainstructions())


def test_dependencies_come_from_the_toolkits_context_with_its_overrides(fake: FakeService) -> None:
    from toolout.toolkit import Dependency, ToolContext

    database = Dependency("db", lambda: {"orders": 1})

    @tool
    def count_orders(db: dict = database) -> int:  # type: ignore[assignment]  # a Dependency default is injected
        """Count orders."""
        return db["orders"]

    kit = Toolkit(
        [count_orders], client=fake.sync_client(), context=ToolContext(overrides={"db": lambda: {"orders": 42}})
    )
    (message,) = kit.handle([call("count_orders")])
    assert message["content"] == "42"


def test_a_composite_tool_gets_references_resolved_inside_its_calls(fake: FakeService) -> None:
    from toolout.toolkit import composite_tool

    tools = OrderTools()
    batch = composite_tool("batch", "Run several order tools.", [tools.get_orders, tools.show_order])
    kit = sync_kit(fake, [tools.get_orders, batch])
    kit.handle([call("get_orders", {"limit": 2})])
    (report,) = kit.run_calls(
        [
            call(
                "batch",
                {"calls": [{"name": "show_order", "args": {"order": "$get_orders_1.items[1]"}}, {"name": "nope"}]},
            )
        ]
    )
    assert json.loads(report.message.content) == {
        "results": [
            {"name": "show_order", "result": "order 2 is paid"},
            {"name": "nope", "result": {"error": "Unknown sub-tool: nope"}},
        ]
    }
    assert report.variable == "batch_1" and tools.received == [Order(id=2, status="paid")]


def test_long_arguments_reach_the_upload_header_as_valid_json_of_their_head(fake: FakeService) -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return "ok"

    kit = sync_kit(fake, [echo])
    kit.handle([call("echo", '{"text": "' + "é" * 10_000 + '"}')])
    sent = next(r for r in fake.requests if r.url.path.endswith("/outputs")).headers["X-Tool-Args"]
    head = json.loads(sent.encode("latin-1").decode("utf-8"))["truncated_arguments"]
    assert head.startswith('{"text": "éé') and len(head.encode("utf-8")) <= 4_000
    with pytest.raises(ToolkitError, match="ToolOutClient"):
        Toolkit([echo], client=object())  # type: ignore[arg-type]
