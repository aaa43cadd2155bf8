"""Callbacks (docs/spec/tools.md): order, short-circuit, replacement, format_output last, and the propagation table."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from toolout.toolkit.results import JsonResult, TextResult
from toolout.toolkit.tool import define_tool


class Numbers(BaseModel):
    a: int
    b: int = 0


class Recorder:
    """Callbacks that record the order they ran in (and their arguments)."""

    def __init__(self) -> None:
        self.log: list[Any] = []

    def before_call(self, args: Numbers) -> None:
        self.log.append(("before_call", args.a))

    def on_success(self, args: Numbers, output: Any) -> None:
        self.log.append(("on_success", output))

    def on_error(self, args: Numbers, error: dict[str, str]) -> None:
        self.log.append(("on_error", error))

    def format_output(self, output: Any) -> None:
        self.log.append(("format_output", output))

    def callbacks(self) -> dict[str, Any]:
        return {
            "before_call": self.before_call,
            "on_success": self.on_success,
            "on_error": self.on_error,
            "format_output": self.format_output,
        }


def adder(recorder: Recorder | None = None, **callbacks: Any) -> Any:
    def execute(args: Numbers) -> dict[str, int]:
        if recorder:
            recorder.log.append(("execute", args.a))
        if args.a < 0:
            raise ValueError("negative")
        return {"sum": args.a + args.b}

    return define_tool(name="add", description="Add.", input=Numbers, execute=execute, **callbacks)


def test_success_order() -> None:
    recorder = Recorder()
    result = adder(recorder, **recorder.callbacks()).run_sync('{"a": 1, "b": 2}')
    assert result == JsonResult({"sum": 3})
    assert recorder.log == [
        ("before_call", 1),
        ("execute", 1),
        ("on_success", {"sum": 3}),
        ("format_output", {"sum": 3}),
    ]


def test_error_order_and_the_error_dict() -> None:
    recorder = Recorder()
    result = adder(recorder, **recorder.callbacks()).run_sync('{"a": -1}')
    assert result == TextResult("Error executing tool: negative", is_error=True)
    assert recorder.log == [
        ("before_call", -1),
        ("execute", -1),
        ("on_error", {"error": "negative"}),
        ("format_output", {"error": "negative"}),
    ]


def test_before_call_short_circuits_execute_and_on_success_but_not_format_output() -> None:
    recorder = Recorder()
    callbacks = recorder.callbacks() | {"before_call": lambda args: {"cached": args.a}}
    result = adder(recorder, **callbacks).run_sync('{"a": 5}')
    assert result == JsonResult({"cached": 5})
    assert recorder.log == [("format_output", {"cached": 5})]


def test_on_success_replaces_the_output() -> None:
    tool = adder(on_success=lambda args, output: f"sum is {output['sum']}")
    assert tool.run_sync('{"a": 2, "b": 2}') == TextResult("sum is 4")


def test_on_error_replaces_the_error_and_it_stays_an_error() -> None:
    tool = adder(on_error=lambda args, error: {"error": error["error"], "hint": "use a >= 0"})
    assert tool.run_sync('{"a": -1}') == JsonResult({"error": "negative", "hint": "use a >= 0"}, is_error=True)


def test_an_error_dict_edited_in_place_counts_as_replaced() -> None:
    tool = adder(on_error=lambda args, error: error.update(hint="a >= 0"))
    assert tool.run_sync('{"a": -1}') == JsonResult({"error": "negative", "hint": "a >= 0"}, is_error=True)


def test_on_error_may_recover_with_an_explicit_result() -> None:
    tool = adder(on_error=lambda args, error: TextResult("0 (defaulted)"))
    assert tool.run_sync('{"a": -1}') == TextResult("0 (defaulted)", is_error=False)


def test_format_output_is_last_on_success_and_on_error() -> None:
    tool = adder(on_success=lambda args, out: out["sum"], format_output=lambda out: f"<{out}>")
    assert tool.run_sync('{"a": 1, "b": 1}') == TextResult("<2>")
    assert tool.run_sync('{"a": -1}') == TextResult("<{'error': 'negative'}>", is_error=True)


def test_returning_none_keeps_the_output_everywhere() -> None:
    tool = adder(before_call=lambda a: None, on_success=lambda a, o: None, format_output=lambda o: None)
    assert tool.run_sync('{"a": 1}') == JsonResult({"sum": 1})
    assert tool.run_sync('{"a": -1}') == TextResult("Error executing tool: negative", is_error=True)


def test_async_callbacks_are_awaited() -> None:
    async def before_call(args: Numbers) -> None:
        return None

    async def on_success(args: Numbers, output: dict[str, int]) -> int:
        return output["sum"] * 10

    async def format_output(output: int) -> str:
        return f"={output}"

    tool = adder(before_call=before_call, on_success=on_success, format_output=format_output)
    assert tool.run_sync('{"a": 1, "b": 2}') == TextResult("=30")


def test_invalid_arguments_never_reach_the_callbacks() -> None:
    recorder = Recorder()
    result = adder(recorder, **recorder.callbacks()).run_sync('{"b": 1}')
    assert result == TextResult('Invalid arguments for tool "add": a: Field required', is_error=True)
    assert recorder.log == []


def test_an_exception_with_no_message_is_named_by_its_class() -> None:
    def execute(args: Numbers) -> None:
        raise KeyError

    tool = define_tool(name="t", description="T.", input=Numbers, execute=execute)
    assert tool.run_sync('{"a": 1}') == TextResult("Error executing tool: KeyError", is_error=True)


# ------------------------------------------------ the propagation table, one row per test


class CallbackFailure(Exception):
    pass


def fail(*_: Any) -> None:
    raise CallbackFailure("callback broke")


def test_row_error_in_before_call_propagates() -> None:
    with pytest.raises(CallbackFailure, match="callback broke") as caught:
        adder(before_call=fail).run_sync('{"a": 1}')
    assert caught.value.__notes__ == ["raised in the before_call callback of tool 'add'"]


def test_row_error_in_execute_is_caught_and_goes_to_on_error() -> None:
    seen: list[dict[str, str]] = []
    result = adder(on_error=lambda args, error: seen.append(error)).run_sync('{"a": -1}')
    assert seen == [{"error": "negative"}]
    assert result == TextResult("Error executing tool: negative", is_error=True)


def test_row_error_in_on_success_propagates() -> None:
    with pytest.raises(CallbackFailure) as caught:
        adder(on_success=fail).run_sync('{"a": 1}')
    assert caught.value.__notes__ == ["raised in the on_success callback of tool 'add'"]


def test_row_error_in_on_error_propagates() -> None:
    with pytest.raises(CallbackFailure) as caught:
        adder(on_error=fail).run_sync('{"a": -1}')
    assert caught.value.__notes__ == ["raised in the on_error callback of tool 'add'"]


def test_error_in_format_output_propagates_like_the_other_callbacks() -> None:
    with pytest.raises(CallbackFailure):
        adder(format_output=fail).run_sync('{"a": 1}')
