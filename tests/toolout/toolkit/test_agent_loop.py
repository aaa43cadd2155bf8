"""run_agent's loop with a scripted stand-in for litellm (the real model loop is tested end to end)."""

from __future__ import annotations

import asyncio
import builtins
import json
from types import SimpleNamespace
from typing import Any

import pytest

from tests.toolout.fake_service import FakeService
from tests.toolout.toolkit.conftest import OrderTools, async_kit, sync_kit
from toolout.toolkit import agent
from toolout.toolkit.errors import ToolkitError


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(id=call_id, type="function", function=SimpleNamespace(name=name, arguments=json.dumps(args)))


def reply(content: str | None = None, calls: list[SimpleNamespace] | None = None) -> SimpleNamespace:
    message = SimpleNamespace(role="assistant", content=content, tool_calls=calls or None)
    return SimpleNamespace(choices=[SimpleNamespace(message=message)])


class ScriptedModel:
    """Answers in turn: list orders, show the first by reference, then a final text with a reference."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def completion(self, **request: Any) -> SimpleNamespace:
        self.requests.append(request)
        turn = len(self.requests)
        if turn == 1:
            return reply(calls=[tool_call("c1", "get_orders", {"limit": 2})])
        if turn == 2:
            return reply(calls=[tool_call("c2", "show_order", {"order": "$get_orders_1.items[0]"})])
        return reply("Done: $show_order_1")

    async def acompletion(self, **request: Any) -> SimpleNamespace:
        return self.completion(**request)


@pytest.fixture()
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedModel:
    scripted = ScriptedModel()
    monkeypatch.setattr(agent, "litellm_module", lambda: scripted)
    return scripted


def test_the_loop_runs_tools_until_the_model_answers(model: ScriptedModel) -> None:
    kit = sync_kit(FakeService(), OrderTools().all)
    result = kit.run_agent("m", [{"role": "system", "content": "You sell."}, {"role": "user", "content": "go"}])
    assert (result.stop, result.turns, result.tool_calls) == ("answered", 3, 2)
    assert result.raw_text == "Done: $show_order_1" and result.text == "Done: order 1 is paid"
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    first, last = model.requests[0], model.requests[-1]
    assert first["model"] == "m" and [t["function"]["name"] for t in first["tools"]][:2] == ["get_orders", "show_order"]
    assert first["messages"][0]["content"].startswith("You sell.\n\n\n## Tool Output Variables")
    assert first["messages"][0]["content"].endswith("No variables saved yet.")
    assert "- `$get_orders_1` (get_orders)" in last["messages"][0]["content"]  # refreshed every turn


def test_the_async_loop_gives_the_same_result(model: ScriptedModel) -> None:
    async def main() -> agent.AgentResult:
        kit = async_kit(FakeService(), OrderTools().all)
        return await kit.arun_agent("m", [{"role": "user", "content": "go"}], temperature=0)

    result = asyncio.run(main())
    assert result.text == "Done: order 1 is paid"
    assert model.requests[0]["temperature"] == 0
    assert model.requests[0]["messages"][0]["content"].startswith("## Tool Output Variables")  # a system message added


def test_max_turns_stops_the_loop(model: ScriptedModel) -> None:
    result = sync_kit(FakeService(), OrderTools().all).run_agent("m", [{"role": "user", "content": "go"}], max_turns=1)
    assert (result.stop, result.turns, result.text) == ("max_turns", 1, "")
    with pytest.raises(ToolkitError, match="max_turns"):
        sync_kit(FakeService(), []).run_agent("m", [], max_turns=0)


def test_strict_tools_and_a_budget_are_passed_on(model: ScriptedModel) -> None:
    kit = sync_kit(FakeService(), OrderTools().all)
    kit.run_agent("m", [{"role": "user", "content": "go"}], strict=True, budget_tokens=100_000)
    assert all(t["function"]["strict"] for t in model.requests[0]["tools"])


def test_without_litellm_run_agent_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_litellm(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "litellm":
            raise ImportError("No module named 'litellm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_litellm)
    with pytest.raises(ToolkitError, match="pip install litellm"):
        sync_kit(FakeService(), OrderTools().all).run_agent("m", [{"role": "user", "content": "go"}])
