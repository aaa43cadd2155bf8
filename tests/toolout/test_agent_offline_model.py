"""run_agent end to end on litellm and the offline model (over HTTP, in this process), on the fake contract.

The same scenario as the stack test (tests/integration/test_agent_toolkit.py), smaller, with the
service replaced by the contract fake: it checks the loop, litellm's objects, the offline model's
agent rules and the toolkit together, without the variables server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from tests.toolout.fake_service import FakeService
from tests.toolout.toolkit.conftest import Order
from toolout.toolkit import tool
from toolout.toolkit.runtime import Toolkit

TASK = """Call get_orders. Then call show_order with {"order": "$get_orders.items[0]"}.
Then call search with {"q": "refund"}.
Extract: the paid orders"""


# The offline model served over HTTP in this process, reached by litellm: a server, so integration.
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def offline_model() -> Iterator[str]:
    from offline_model.server import create_app
    from tests.fixtures.api_server import serve_app

    with serve_app(create_app()) as url:
        yield f"{url}/v1"


def scenario_tools(received: list[Order]) -> list:
    @tool
    def get_orders() -> str:
        """Every order, as JSON."""
        items = [{"id": n, "status": "paid", "note": "n" * 80} for n in range(1, 5001)]
        return json.dumps({"items": items})

    @tool
    def show_order(order: Order) -> str:
        """Show one order."""
        received.append(order)
        return f"order {order.id} is {order.status}"

    @tool
    def search(q: str) -> str:
        """Search the help center."""
        return "\n".join(f"{n}. article about {q}" for n in range(1, 101))

    return [get_orders, show_order, search]


def check(result, received: list[Order]) -> None:  # type: ignore[no-untyped-def]
    tools_said = {m["tool_call_id"]: m["content"] for m in result.messages if m["role"] == "tool"}
    calls = [c for m in result.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    names = [c["function"]["name"] for c in calls]
    assert names == ["get_orders", "tool_output", "show_order", "search", "buffer_ops"]
    said = [tools_said[c["id"]] for c in calls]
    assert said[0].startswith("Tool output is too large (")
    handle = json.loads(calls[1]["function"]["arguments"])["handle"]
    assert handle in said[0] and said[1].startswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {handle}")
    assert json.loads(calls[2]["function"]["arguments"]) == {"order": "$get_orders_1.items[0]"}
    assert received == [Order(id=1, status="paid", note="n" * 80)] and said[2] == "order 1 is paid"
    assert said[3].startswith("[tool output routed] search -> variable:search (total ")
    assert "1. article about refund" in said[4]
    assert result.stop == "answered" and result.text.startswith("Done. Tools called: get_orders, tool_output")


def test_the_agent_loop_on_litellm_and_the_offline_model(offline_model: str) -> None:
    received: list[Order] = []
    fake = FakeService()
    kit = Toolkit(scenario_tools(received), client=fake.sync_client(), routes="search(output=variable:search)")
    result = kit.run_agent(
        "openai/toolout-offline", [{"role": "user", "content": TASK}], api_base=offline_model, api_key="offline"
    )
    check(result, received)


def test_the_async_agent_loop_gives_the_same_conversation(offline_model: str) -> None:
    received: list[Order] = []

    async def main():  # type: ignore[no-untyped-def]
        kit = Toolkit(
            scenario_tools(received), client=FakeService().async_client(), routes="search(output=variable:search)"
        )
        return await kit.arun_agent(
            "openai/toolout-offline", [{"role": "user", "content": TASK}], api_base=offline_model, api_key="offline"
        )

    check(asyncio.run(main()), received)
