"""ToolOutMiddleware in deepagents' `create_deep_agent(middleware=[...])` (ChatOpenAI on the offline model over
HTTP), on the real stack: toolout answers before deepagents' own eviction sees the 20 MB result."""

from __future__ import annotations

import asyncio

import pytest
from deepagents import create_deep_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from tests.toolout.integrations.conftest import NEEDLE, SMALL_ORDER, SMALL_TASK, TASK, chat_openai, expected_too_large
from toolout.integrations.langchain import ToolOutMiddleware

pytestmark = pytest.mark.slow


def deep_agent(model_url: str, orders_json: str, middleware: list):  # type: ignore[no-untyped-def]
    @tool
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders_json

    @tool
    def get_order(id: str) -> str:
        """One order, by id."""
        return SMALL_ORDER

    model = chat_openai(model_url)
    return create_deep_agent(model=model, tools=[get_orders, get_order], middleware=middleware)


def test_toolout_answers_before_deepagents_evicts(local_stack, offline_model_url, orders_json) -> None:
    agent = deep_agent(offline_model_url, orders_json, [ToolOutMiddleware(api_url=local_stack.api_url)])
    state = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": TASK}]}))

    calls = [c["name"] for m in state["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["get_orders", "tool_output"]
    too_large = next(m for m in state["messages"] if isinstance(m, ToolMessage))
    assert too_large.content == expected_too_large(orders_json, too_large.artifact["toolout_handle"])
    assert NEEDLE in state["messages"][-1].content
    assert not state.get("files")  # nothing was evicted to deepagents' filesystem


def test_a_small_result_is_the_same_with_and_without(local_stack, offline_model_url) -> None:
    request = {"messages": [{"role": "user", "content": SMALL_TASK}]}

    async def both():  # type: ignore[no-untyped-def]
        plain = await deep_agent(offline_model_url, "{}", []).ainvoke(request)
        middleware = [ToolOutMiddleware(api_url=local_stack.api_url)]
        return plain, await deep_agent(offline_model_url, "{}", middleware).ainvoke(request)

    plain, offloaded = asyncio.run(both())
    said = [[m.content for m in s["messages"] if isinstance(m, ToolMessage)] for s in (plain, offloaded)]
    assert said[0] == said[1] == [SMALL_ORDER]
    assert offloaded["messages"][-1].content == plain["messages"][-1].content
