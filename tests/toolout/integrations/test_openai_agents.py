"""offload(agent) in the OpenAI Agents SDK's own loop (`Runner` + `OpenAIChatCompletionsModel` on the offline
model over HTTP), on the real stack (API + worker + Redis)."""

from __future__ import annotations

import asyncio

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from agents.items import ToolCallItem, ToolCallOutputItem
from openai import AsyncOpenAI

from tests.toolout.integrations.conftest import (
    NEEDLE,
    SMALL_ORDER,
    SMALL_TASK,
    TASK,
    expected_too_large,
    session_deleted,
)
from toolout.integrations.openai_agents import offload, toolout_tools

pytestmark = pytest.mark.slow


def shop_agent(model_url: str, orders_json: str) -> Agent:
    @function_tool
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders_json

    @function_tool
    def get_order(id: str) -> str:
        """One order, by id."""
        return SMALL_ORDER

    client = AsyncOpenAI(base_url=model_url, api_key="offline", max_retries=0)
    model = OpenAIChatCompletionsModel(model="toolout-offline", openai_client=client)
    return Agent(name="shop", instructions="You run a shop.", model=model, tools=[get_orders, get_order])


def outputs(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(item.output) for item in result.new_items if isinstance(item, ToolCallOutputItem)]


def calls(result) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    items = [item.raw_item for item in result.new_items if isinstance(item, ToolCallItem)]
    return [(item.name, item.arguments) for item in items]


def test_an_oversized_output_becomes_the_message_and_tool_output_finds_the_record(
    local_stack, offline_model_url, orders_json
) -> None:
    set_tracing_disabled(True)
    agent = offload(shop_agent(offline_model_url, orders_json), api_url=local_stack.api_url)
    result = asyncio.run(Runner.run(agent, TASK))

    assert [name for name, _ in calls(result)] == ["get_orders", "tool_output"]
    too_large, abstract = outputs(result)
    handle = abstract.split("WITH HANDLE ", 1)[1].split(",", 1)[0]
    assert too_large == expected_too_large(orders_json, handle)
    assert abstract.startswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {handle}")
    assert NEEDLE in result.final_output
    assert session_deleted(local_stack, handle)


def test_a_small_output_passes_through_byte_identical(local_stack, offline_model_url) -> None:
    set_tracing_disabled(True)

    async def both():  # type: ignore[no-untyped-def]
        plain = shop_agent(offline_model_url, "{}")
        return await Runner.run(plain, SMALL_TASK), await Runner.run(offload(plain, local_stack.api_url), SMALL_TASK)

    plain, offloaded = asyncio.run(both())
    assert outputs(offloaded) == outputs(plain) == [SMALL_ORDER]
    assert offloaded.final_output == plain.final_output


def test_toolout_tools_are_the_four_function_tools(local_stack) -> None:
    names = [tool.name for tool in toolout_tools(local_stack.api_url)]
    assert names == ["tool_output", "tool_output_cache", "tool_output_cache_grep", "buffer_ops"]
