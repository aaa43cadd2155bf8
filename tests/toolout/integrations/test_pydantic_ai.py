"""The ToolOut capability in PydanticAI's own agent loop (`Agent` + `OpenAIChatModel` on the offline model over
HTTP), on the real stack (API + worker + Redis)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ToolCallPart, ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.toolout.integrations.conftest import (
    NEEDLE,
    SMALL_ORDER,
    SMALL_TASK,
    TASK,
    expected_too_large,
    session_deleted,
)
from toolout.integrations.pydantic_ai import ToolOut

pytestmark = pytest.mark.slow


def shop_agent(model_url: str, orders_json: str, capabilities: list) -> Agent:
    model = OpenAIChatModel("toolout-offline", provider=OpenAIProvider(base_url=model_url, api_key="offline"))
    agent = Agent(model, instructions="You run a shop.", capabilities=capabilities)

    @agent.tool_plain
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders_json

    @agent.tool_plain
    def get_order(id: str) -> str:
        """One order, by id."""
        return SMALL_ORDER

    return agent


def parts(result, kind):  # type: ignore[no-untyped-def]
    return [p for m in result.all_messages() for p in m.parts if isinstance(p, kind)]


def test_an_oversized_result_becomes_the_message_and_tool_output_finds_the_record(
    local_stack, offline_model_url, orders_json
) -> None:
    agent = shop_agent(offline_model_url, orders_json, [ToolOut(api_url=local_stack.api_url)])
    result = asyncio.run(agent.run(TASK))

    assert [p.tool_name for p in parts(result, ToolCallPart)] == ["get_orders", "tool_output"]
    too_large, abstract = (p.content for p in parts(result, ToolReturnPart))
    handle = parts(result, ToolCallPart)[1].args_as_dict()["handle"]
    assert too_large == expected_too_large(orders_json, handle)
    assert abstract.startswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {handle}")
    assert NEEDLE in result.output
    assert session_deleted(local_stack, handle)


def test_a_small_result_passes_through_byte_identical(local_stack, offline_model_url) -> None:
    async def both():  # type: ignore[no-untyped-def]
        plain = await shop_agent(offline_model_url, "{}", []).run(SMALL_TASK)
        capability = [ToolOut(api_url=local_stack.api_url)]
        return plain, await shop_agent(offline_model_url, "{}", capability).run(SMALL_TASK)

    plain, offloaded = asyncio.run(both())
    assert [p.content for p in parts(offloaded, ToolReturnPart)] == [SMALL_ORDER]
    assert [p.content for p in parts(plain, ToolReturnPart)] == [SMALL_ORDER]
    assert offloaded.output == plain.output
