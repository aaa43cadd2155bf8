"""ToolOutMiddleware in LangChain's own agent loop (`create_agent` + `ChatOpenAI` on the offline model over
HTTP), in a LangGraph `ToolNode`, with `Command` results, on the real stack (API + worker + Redis)."""

from __future__ import annotations

import asyncio

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command

from tests.toolout.integrations.conftest import (
    NEEDLE,
    SMALL_ORDER,
    SMALL_TASK,
    TASK,
    chat_openai,
    expected_too_large,
    session_deleted,
)
from toolout.integrations.langchain import ToolOutMiddleware

pytestmark = pytest.mark.slow


def chat(model_url: str) -> ChatOpenAI:
    return chat_openai(model_url)


def shop_tools(orders_json: str) -> list:
    @tool
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders_json

    @tool
    def get_order(id: str) -> str:
        """One order, by id."""
        return SMALL_ORDER

    return [get_orders, get_order]


def tool_messages(state: dict) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def test_an_oversized_result_becomes_the_message_and_tool_output_finds_the_record(
    local_stack, offline_model_url, orders_json
) -> None:
    middleware = ToolOutMiddleware(api_url=local_stack.api_url)
    agent = create_agent(chat(offline_model_url), shop_tools(orders_json), middleware=[middleware])
    state = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": TASK}]}))

    too_large, abstract = tool_messages(state)
    calls = [c for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [c["name"] for c in calls] == ["get_orders", "tool_output"]
    handle = too_large.artifact["toolout_handle"]
    assert too_large.content == expected_too_large(orders_json, handle)
    assert (too_large.name, too_large.status, too_large.tool_call_id) == ("get_orders", "success", calls[0]["id"])
    assert calls[1]["args"]["handle"] == handle
    assert abstract.content.startswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {handle}")
    assert NEEDLE in state["messages"][-1].content
    assert state.get("toolout_session") and session_deleted(local_stack, handle)


def small_run(model_url: str, middleware: list, *, sync: bool) -> tuple[dict, dict]:
    """The same small task without and with the middleware (one event loop: ChatOpenAI keeps its client)."""
    request = {"messages": [{"role": "user", "content": SMALL_TASK}]}
    agents = [create_agent(chat(model_url), shop_tools("{}"), middleware=m) for m in ([], middleware)]
    if sync:
        return agents[0].invoke(request), agents[1].invoke(request)

    async def both() -> tuple[dict, dict]:
        return await agents[0].ainvoke(request), await agents[1].ainvoke(request)

    return asyncio.run(both())


@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_a_small_result_passes_through_byte_identical(local_stack, offline_model_url, sync: bool) -> None:
    plain, offloaded = small_run(offline_model_url, [ToolOutMiddleware(api_url=local_stack.api_url)], sync=sync)
    assert tool_messages(offloaded)[0].content == tool_messages(plain)[0].content == SMALL_ORDER
    assert tool_messages(offloaded)[0].artifact is None
    assert offloaded["messages"][-1].content == plain["messages"][-1].content


def tool_graph(node: ToolNode):  # type: ignore[no-untyped-def]
    """A graph of just the tool node: the runtime a ToolNode needs, and Command updates applied."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def calling(name: str, args: dict, call_id: str) -> dict:
    return {"messages": [AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])]}


def test_in_a_langgraph_tool_node_and_for_command_results(local_stack, orders_json, monkeypatch) -> None:
    monkeypatch.setenv("TOOLOUT_API_URL", local_stack.api_url)
    middleware = ToolOutMiddleware()

    @tool
    def export(runtime: ToolRuntime) -> Command:
        """Export every order (a Command carrying the tool message)."""
        message = ToolMessage(orders_json, tool_call_id=runtime.tool_call_id, name="export")
        return Command(update={"messages": [message]})

    graph = tool_graph(
        ToolNode(
            [*shop_tools(orders_json), export, *middleware.tools],
            wrap_tool_call=middleware.wrap_tool_call,
            awrap_tool_call=middleware.awrap_tool_call,
        )
    )
    message = graph.invoke(calling("get_orders", {}, "c0"))["messages"][-1]
    assert message.content == expected_too_large(orders_json, message.artifact["toolout_handle"])
    assert (message.tool_call_id, message.name) == ("c0", "get_orders")

    grep = {"ref_id": message.artifact["toolout_handle"], "pattern": NEEDLE}
    found = asyncio.run(graph.ainvoke(calling("tool_output_cache_grep", grep, "c1")))["messages"][-1]
    assert NEEDLE in found.content and found.artifact is None and found.tool_call_id == "c1"

    exported = graph.invoke(calling("export", {}, "c2"))["messages"][-1]
    assert exported.content == expected_too_large(orders_json, exported.artifact["toolout_handle"])
    assert exported.tool_call_id == "c2"
    middleware.close()
