"""The offline model as a simple agent (offline_model/tool_agent.py): each rule, through `respond`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from extraction.buffers.ops import buffer_ops_tool
from extraction.texts.oversize import TOO_LARGE_TEMPLATE
from extraction.texts.tools import tool_output_tool
from extraction.variables.prompts import FULL_HEADER, LIST_TITLE
from offline_model import OfflineModelConfig
from offline_model.responder import Answer, respond

HANDLE = "5f0c7a3e-9b1d-4c2e-8f00-123456789abc"


def fn(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object"}}}


TOOLS = [
    fn("get_orders"),
    fn("show_order"),
    fn("search"),
    tool_output_tool(),
    buffer_ops_tool(),
    fn("tool_output_cache"),
]


def ask(messages: list[dict[str, Any]], tools: list[dict[str, Any]] = TOOLS) -> Answer:
    return respond({"messages": messages, "tools": tools}, OfflineModelConfig())


def called(answer: Answer) -> tuple[str, dict[str, Any]]:
    (call,) = answer.tool_calls
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def play(task: str, run: Callable[[str, dict[str, Any]], str], system: Callable[[], str] | None = None) -> list:
    """Run the conversation with `run(name, args)` as the tools; returns (calls, final answer)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    calls = []
    for _ in range(10):
        head = [{"role": "system", "content": system()}] if system else []
        answer = ask(head + messages)
        if not answer.tool_calls:
            return [calls, answer.content]
        name, args = called(answer)
        calls.append((name, args))
        messages += [
            {"role": "assistant", "content": None, "tool_calls": answer.tool_calls},
            {"role": "tool", "tool_call_id": answer.tool_calls[0]["id"], "content": run(name, args)},
        ]
    raise AssertionError("the agent never answered")


def test_it_calls_the_tools_the_task_names_in_order_with_their_arguments() -> None:
    calls, answer = play(
        'Call get_orders with {"limit": 2}, then show_order {"order": {"id": 1}}, then answer.',
        lambda name, args: f"{name} ran",
    )
    assert calls == [("get_orders", {"limit": 2}), ("show_order", {"order": {"id": 1}})]
    assert answer == "Done. Tools called: get_orders, show_order.\nLast tool result:\nshow_order ran"


def test_a_too_large_message_is_answered_with_tool_output_and_the_tasks_extract() -> None:
    too_large = TOO_LARGE_TEMPLATE.format(bytes=20_000_000, lines=1, tokens=6_000_000, handle=HANDLE)

    def run(name: str, args: dict[str, Any]) -> str:
        return too_large if name == "get_orders" else f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {HANDLE}"

    calls, answer = play("Call get_orders.\nExtract: the declined orders", run)
    assert calls == [("get_orders", {}), ("tool_output", {"handle": HANDLE, "extract": "the declined orders"})]
    assert answer.endswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {HANDLE}")


def test_a_routed_manifest_is_read_back_with_buffer_ops() -> None:
    def run(name: str, args: dict[str, Any]) -> str:
        if name == "search":
            return "[tool output routed] search -> variable:search (total 12,340 chars)"
        return "result 1 for toolout"

    calls, answer = play('Call search {"q": "toolout"}.', run)
    assert calls == [("search", {"q": "toolout"}), ("buffer_ops", {"operation": "peek", "target": "search"})]
    assert answer.endswith("result 1 for toolout")


def test_a_compacted_result_is_read_back_with_tool_output_cache() -> None:
    reference = f"[output_ref {HANDLE}] This tool output (9 chars, 1 lines) was moved out of the context."
    calls, _ = play("Call get_orders.", lambda name, args: reference if name == "get_orders" else "lines")
    assert calls[1] == ("tool_output_cache", {"ref_id": HANDLE})


def test_a_deepagents_eviction_is_read_back_with_read_file_as_it_asks() -> None:
    evicted = (
        "Tool result too large, the result of this tool call call_1 was saved in the filesystem at this path: "
        "/large_tool_results/call_1\n\nYou can read the result from the filesystem by using the read_file tool"
    )
    tools = [fn("get_orders"), fn("read_file")]
    messages = [
        {"role": "user", "content": "Call get_orders."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "get_orders"}}]},
        {"role": "tool", "tool_call_id": "c", "content": evicted},
    ]
    name, args = called(ask(messages, tools))
    assert (name, args) == ("read_file", {"file_path": "/large_tool_results/call_1", "offset": 0, "limit": 100})


def test_a_tool_reference_becomes_the_tools_newest_listed_variable() -> None:
    variables: list[str] = []

    def system() -> str:
        lines = [f"- `${name}` ({name.rsplit('_', 1)[0]}): …" for name in variables]
        return "You sell.\n\n" + FULL_HEADER + (LIST_TITLE + "\n".join(lines) if lines else "\nNo variables saved yet.")

    def run(name: str, args: dict[str, Any]) -> str:
        variables.append(f"{name}_{sum(v.startswith(name) for v in variables) + 1}")
        return "ok"

    task = (
        'Call get_orders. Call get_orders again. Then show_order with {"order": "$get_orders.items[0]", '
        '"raw": "$HOME"}.'
    )
    calls, _ = play(task, run, system)
    assert calls[-1] == ("show_order", {"order": "$get_orders_2.items[0]", "raw": "$HOME"})


def test_standard_tools_named_in_passing_are_not_steps_and_missing_tools_are_skipped() -> None:
    too_large = TOO_LARGE_TEMPLATE.format(bytes=1, lines=1, tokens=1, handle=HANDLE)
    task = "Call get_orders; if its output is too large, use tool_output."
    answer = ask(
        [
            {"role": "user", "content": task},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "function": {"name": "get_orders", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": too_large},
        ],
        tools=[fn("get_orders")],  # tool_output not offered: no follow-up
    )
    assert answer.kind == "agent-answer" and answer.content.startswith("Done. Tools called: get_orders.")


def test_the_same_conversation_gets_the_same_answer_and_ids_differ_by_turn() -> None:
    messages = [{"role": "user", "content": "Call get_orders. Call get_orders."}]
    first, again = ask(messages), ask(messages)
    assert first.tool_calls == again.tool_calls
    second = ask(
        [
            *messages,
            {"role": "assistant", "content": None, "tool_calls": first.tool_calls},
            {"role": "tool", "tool_call_id": first.tool_calls[0]["id"], "content": "ok"},
        ]
    )
    assert called(second) == ("get_orders", {}) and second.tool_calls[0]["id"] != first.tool_calls[0]["id"]


def test_a_task_naming_no_offered_tool_is_answered_at_once() -> None:
    answer = ask([{"role": "user", "content": "What is 2 + 2?"}])
    assert (answer.kind, answer.content) == ("agent-answer", "Done. Tools called: none.")
