"""The agent toolkit on the real stack: API + Celery worker + Redis + the offline model, as processes.

A litellm agent loop (`Toolkit.run_agent`) on the offline model:
* a tool returns a 20 MB JSON: the model sees the too-large message, calls `tool_output`, and gets
  the ABSTRACT (which finds the planted order);
* a second tool is called with `"$<var>.items[0]"` and receives the typed object;
* a tool routed with `output=variable:search` gives the model only the manifest, and `buffer_ops`
  reads it back.
Then `examples/agent_loop.py` runs against the same stack.

These need the variables server: on an API without its routes they skip, naming them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.toolout.variables_server import require_variable_routes
from toolout.devstack import datasets
from toolout.toolkit import Toolkit, tool

ROOT = Path(__file__).resolve().parents[2]
ORDERS_BYTES = 20 << 20
TASK = """Call get_orders. Then call show_order with {"order": "$get_orders.items[0]"}.
Then call search with {"q": "payment failed"}.
Extract: Find the order with id ORD-77731: give its customer, status and the failure_reason."""

pytestmark = pytest.mark.slow


class Customer(BaseModel):
    name: str
    city: str


class LineItem(BaseModel):
    sku: str
    product: str
    qty: int


class Order(BaseModel):
    id: str
    customer: Customer
    items: list[LineItem]
    status: str
    total_cents: int


@pytest.fixture(scope="module")
def orders_json() -> str:
    return '{"items":' + b"".join(datasets.json_orders(ORDERS_BYTES)).decode() + "}"


def test_a_litellm_agent_loop_on_the_offline_model(local_stack, offline_model_url, orders_json) -> None:
    require_variable_routes(local_stack.api_url)
    received: list[Order] = []

    @tool
    def get_orders() -> str:
        """Every order of the shop (large JSON)."""
        return orders_json

    @tool
    def show_order(order: Order) -> str:
        """Summarise one order."""
        received.append(order)
        return f"{order.id} is {order.status}"

    @tool
    def search(q: str) -> str:
        """Search the help center."""
        return "\n".join(f"{n}. help article about {q}" for n in range(1, 201))

    tools = [get_orders, show_order, search]
    with Toolkit(tools, api_url=local_stack.api_url, routes="@tools search(output=variable:search)") as kit:
        result = kit.run_agent(
            "openai/toolout-offline",
            [{"role": "system", "content": "You run a shop."}, {"role": "user", "content": TASK}],
            api_base=offline_model_url,
            api_key="offline",
        )
        with local_stack.client() as client:
            variables = client.variables(str(kit.session_id))

    calls = [c for m in result.messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    said = {m["tool_call_id"]: m["content"] for m in result.messages if m["role"] == "tool"}
    assert [c["function"]["name"] for c in calls] == ["get_orders", "tool_output", "show_order", "search", "buffer_ops"]
    too_large, abstract, shown, manifest, read_back = (said[c["id"]] for c in calls)

    handle = json.loads(calls[1]["function"]["arguments"])["handle"]
    assert too_large.startswith(f"Tool output is too large ({len(orders_json.encode())} bytes, 1 lines, ")
    assert f'Call tool_output(handle = "{handle}", extract = "what to extract").' in too_large
    assert abstract.startswith(f"ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE {handle}, STRATEGY:")
    assert datasets.ORDER_NEEDLE.needle in abstract

    first = json.loads(orders_json)["items"][0]
    assert json.loads(calls[2]["function"]["arguments"]) == {"order": "$get_orders_1.items[0]"}
    assert received == [Order.model_validate(first)] and shown == f"{first['id']} is {first['status']}"

    assert manifest.startswith("[tool output routed] search -> variable:search (total ")
    assert "1. help article about payment failed" in read_back
    assert {v["name"] for v in variables} >= {"get_orders_1", "show_order_1", "search"}
    assert result.stop == "answered"


def test_the_example_runs_against_the_stack(local_stack, offline_model_url) -> None:
    require_variable_routes(local_stack.api_url)
    done = subprocess.run(
        [sys.executable, "examples/agent_loop.py", "--api-url", local_stack.api_url, "--model-url", offline_model_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "model -> get_orders({})" in out and "Tool output is too large (" in out
    assert "ABSTRACT FROM TOOL OUTPUT get_orders WITH HANDLE" in out and datasets.ORDER_NEEDLE.needle in out
    assert 'model -> show_order({"order": "$get_orders_1.items[0]"})' in out
    assert "[tool output routed] search -> variable:search" in out
    assert "answer (answered after 6 turns, 5 tool calls)" in out
