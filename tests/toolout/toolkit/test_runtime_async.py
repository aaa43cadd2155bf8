"""The async toolkit runs the same plans as the sync one; both are cancellable."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tests.toolout.fake_service import FakeService
from tests.toolout.toolkit.conftest import Order, OrderTools, async_kit, call, sync_kit
from toolout.toolkit import CancelToken, ToolCanceled, tool


def test_async_handle_gives_what_sync_handle_gives() -> None:
    def scenario_sync() -> list[dict]:
        kit = sync_kit(FakeService(), OrderTools().all)
        return kit.handle([call("get_orders", {"limit": 1})]) + kit.handle(
            [call("show_order", {"order": "$get_orders_1.items[0]"})]
        )

    async def scenario_async() -> list[dict]:
        kit = async_kit(FakeService(), OrderTools().all)
        first = await kit.ahandle([call("get_orders", {"limit": 1})])
        return first + await kit.ahandle([call("show_order", {"order": "$get_orders_1.items[0]"})])

    assert scenario_sync() == asyncio.run(scenario_async())


def test_async_tools_run_on_the_loop_and_instructions_work_async() -> None:
    seen: list[Order] = []

    @tool
    async def pick(order: Order) -> str:
        """Pick an order."""
        await asyncio.sleep(0)
        seen.append(order)
        return "picked"

    async def main() -> str:
        tools = OrderTools()
        async with async_kit(FakeService(), [tools.get_orders, pick]) as kit:
            await kit.ahandle([call("get_orders", {"limit": 2})])
            (message,) = await kit.ahandle([call("pick", {"order": "$get_orders_1.items[1]"})])
            assert message["content"] == "picked"
            return await kit.ainstructions("minimal")

    text = asyncio.run(main())
    assert seen == [Order(id=2, status="paid")]
    assert "`$get_orders_1` (get_orders)" in text and "`$pick_1` (pick): picked" in text


def test_cancel_stops_a_running_sync_tool_at_once() -> None:
    started = threading.Event()

    @tool
    def slow() -> str:
        """Take forever."""
        started.set()
        time.sleep(3)
        return "done"

    kit = sync_kit(FakeService(), [slow])
    threading.Thread(target=lambda: (started.wait(5), kit.cancel("user pressed stop"))).start()
    begun = time.monotonic()
    with pytest.raises(ToolCanceled, match="user pressed stop"):
        kit.handle([call("slow")])
    assert time.monotonic() - begun < 2
    with pytest.raises(ToolCanceled):  # a canceled toolkit stays canceled
        kit.handle([call("slow")])


def test_a_per_call_token_cancels_an_async_call_and_leaves_the_toolkit_usable() -> None:
    @tool
    async def slow() -> str:
        """Take forever."""
        await asyncio.sleep(30)
        return "done"

    @tool
    def quick() -> str:
        """Be quick."""
        return "quick"

    async def main() -> list[dict]:
        kit = async_kit(FakeService(), [slow, quick])
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.05, token.cancel)
        with pytest.raises(ToolCanceled):
            await asyncio.wait_for(kit.ahandle([call("slow")], cancel=token), 5)
        return await kit.ahandle([call("quick")])

    assert asyncio.run(main())[0]["content"] == "quick"


def test_cancelling_while_tool_output_waits_cancels_the_extraction_job() -> None:
    fake = FakeService(finish_jobs=False)
    fake.max_bytes = 100
    kit = sync_kit(fake, OrderTools(count=10, padding=20).all)
    handle = kit.run_calls([call("get_orders")])[0].handle
    threading.Timer(0.2, kit.cancel).start()
    with pytest.raises(ToolCanceled):
        kit.handle([call("tool_output", {"handle": handle, "extract": "ids"})])
    assert [job["status"] for job in fake.jobs.values()] == ["canceled"]
