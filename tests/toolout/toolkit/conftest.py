"""Toolkits on the fake service (`tests/toolout/fake_service.py`): no server, so these run on the light install."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tests.toolout.fake_service import FakeService
from toolout.toolkit import Tool, tool
from toolout.toolkit.runtime import Toolkit


class Order(BaseModel):
    id: int
    status: str
    note: str = ""


class OrderTools:
    """`get_orders` returns JSON; `show_order` takes a typed `Order` and records what it received."""

    def __init__(self, count: int = 3, padding: int = 0) -> None:
        self.received: list[Any] = []
        self.calls = 0

        @tool
        def get_orders(limit: int = count) -> dict[str, Any]:
            """List the latest orders."""
            self.calls += 1
            return {"items": [{"id": i, "status": "paid", "note": "x" * padding} for i in range(1, limit + 1)]}

        @tool
        def show_order(order: Order) -> str:
            """Show one order."""
            self.received.append(order)
            return f"order {order.id} is {order.status}"

        self.get_orders, self.show_order = get_orders, show_order

    @property
    def all(self) -> list[Tool]:
        return [self.get_orders, self.show_order]


@pytest.fixture()
def fake() -> FakeService:
    return FakeService()


def sync_kit(fake: FakeService, tools: list[Tool], **options: Any) -> Toolkit:
    return Toolkit(tools, client=fake.sync_client(), **options)


def async_kit(fake: FakeService, tools: list[Tool], **options: Any) -> Toolkit:
    return Toolkit(tools, client=fake.async_client(), **options)


def call(name: str, arguments: Any = None, call_id: str | None = None) -> dict[str, Any]:
    """A tool call as a chat-completions dict."""
    text = arguments if isinstance(arguments, str) or arguments is None else __import__("json").dumps(arguments)
    return {"id": call_id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": text}}
