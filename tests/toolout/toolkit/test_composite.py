"""Composite tools (docs/spec/tools.md): per-call results, independent failures, sequential and concurrent runs."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from extraction.schemas.strict_rules import strict_violations
from toolout.toolkit.composite import composite_tool
from toolout.toolkit.context import ToolContext
from toolout.toolkit.deps import Dependency
from toolout.toolkit.errors import ToolCanceled, ToolDefinitionError
from toolout.toolkit.results import JsonResult
from toolout.toolkit.tool import Tool, define_tool, tool


class Pair(BaseModel):
    a: int
    b: int


def add_tool(**callbacks: Any) -> Tool:
    return define_tool(
        name="add", description="Add two numbers.", input=Pair, execute=lambda p: {"sum": p.a + p.b}, **callbacks
    )


def multiply_tool(**callbacks: Any) -> Tool:
    async def execute(p: Pair) -> dict[str, int]:
        return {"product": p.a * p.b}

    return define_tool(name="multiply", description="Multiply two numbers.", input=Pair, execute=execute, **callbacks)


@tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


def calls(*items: tuple[str, dict[str, Any]]) -> str:
    return json.dumps({"calls": [{"name": name, "args": args} for name, args in items]})


def results(tool_: Tool, raw: str, ctx: ToolContext | None = None) -> list[dict[str, Any]]:
    result = tool_.run_sync(raw, ctx)
    assert isinstance(result, JsonResult) and not result.is_error
    return list(result.value["results"])


def test_the_seed_example() -> None:
    math = composite_tool("math", "Arithmetic.", [add_tool(), multiply_tool()])
    assert results(math, calls(("add", {"a": 1, "b": 2}), ("multiply", {"a": 3, "b": 4}))) == [
        {"name": "add", "result": {"sum": 3}},
        {"name": "multiply", "result": {"product": 12}},
    ]


def test_unknown_sub_tool_is_reported_for_that_call_only() -> None:
    math = composite_tool("math", "Arithmetic.", [add_tool()])
    assert results(math, calls(("subtract", {"a": 1}), ("add", {"a": 1, "b": 1}))) == [
        {"name": "subtract", "result": {"error": "Unknown sub-tool: subtract"}},
        {"name": "add", "result": {"sum": 2}},
    ]


def test_failures_are_independent() -> None:
    math = composite_tool("math", "Arithmetic.", [add_tool(), divide])
    assert results(
        math,
        calls(("divide", {"a": 1, "b": 0}), ("add", {"a": "x", "b": 1}), ("divide", {"a": 6, "b": 3})),
    ) == [
        {"name": "divide", "result": {"error": "float division by zero"}},
        {
            "name": "add",
            "result": {
                "error": 'Invalid arguments for tool "add": '
                'a: Input should be a valid integer, unable to parse string as an integer (got "x")'
            },
        },
        {"name": "divide", "result": 2.0},
    ]


def test_per_sub_tool_callbacks_apply_to_their_own_calls_only() -> None:
    math = composite_tool(
        "math",
        "Arithmetic.",
        [
            add_tool(on_success=lambda args, out: f"sum={out['sum']}"),
            multiply_tool(
                on_error=lambda args, err: "unused", before_call=lambda args: "cached" if args.a == 0 else None
            ),
        ],
    )
    assert results(
        math, calls(("add", {"a": 1, "b": 1}), ("multiply", {"a": 0, "b": 5}), ("multiply", {"a": 2, "b": 5}))
    ) == [
        {"name": "add", "result": "sum=2"},
        {"name": "multiply", "result": "cached"},
        {"name": "multiply", "result": {"product": 10}},
    ]


def test_a_sub_tool_callback_error_fails_that_call_and_the_others_run() -> None:
    def broken(*_: Any) -> None:
        raise LookupError("cache offline")

    math = composite_tool("math", "Arithmetic.", [add_tool(before_call=broken), multiply_tool()])
    assert results(math, calls(("add", {"a": 1, "b": 1}), ("multiply", {"a": 2, "b": 2}))) == [
        {"name": "add", "result": {"error": "cache offline"}},
        {"name": "multiply", "result": {"product": 4}},
    ]


def test_sequential_calls_run_in_order_one_at_a_time() -> None:
    log: list[str] = []

    def step(name: str) -> Tool:
        async def execute(p: Pair) -> int:
            log.append(f"start {name}{p.a}")
            await asyncio.sleep(0)  # yield: a concurrent run would interleave here
            log.append(f"end {name}{p.a}")
            return p.a

        return define_tool(name=name, description="Step.", input=Pair, execute=execute)

    steps = composite_tool("steps", "Steps.", [step("x"), step("y")])
    assert [r["result"] for r in results(steps, calls(("x", {"a": 1, "b": 0}), ("y", {"a": 2, "b": 0})))] == [1, 2]
    assert log == ["start x1", "end x1", "start y2", "end y2"]


def test_concurrent_calls_overlap_and_keep_call_order() -> None:
    """Each call waits at a barrier for all three: sequential execution could never pass it."""
    barrier = asyncio.Barrier(3)

    async def execute(p: Pair) -> int:
        await asyncio.wait_for(barrier.wait(), timeout=5)
        await asyncio.sleep(0.01 * (3 - p.a))  # finish in reverse order
        return p.a

    meet = define_tool(name="meet", description="Meet.", input=Pair, execute=execute)
    together = composite_tool("together", "Together.", [meet], concurrent=True)
    raw = calls(("meet", {"a": 1, "b": 0}), ("meet", {"a": 2, "b": 0}), ("meet", {"a": 3, "b": 0}))
    assert [r["result"] for r in results(together, raw)] == [1, 2, 3]


def test_concurrent_sync_sub_tools_run_in_parallel_threads() -> None:
    barrier = threading.Barrier(2, timeout=5)

    @tool
    def rendezvous(n: int) -> int:
        """Wait for the other call."""
        barrier.wait()
        return n

    both = composite_tool("both", "Both.", [rendezvous], concurrent=True)
    assert [r["result"] for r in results(both, calls(("rendezvous", {"n": 1}), ("rendezvous", {"n": 2})))] == [1, 2]


def test_sequential_sync_sub_tools_do_not_overlap() -> None:
    barrier = threading.Barrier(2, timeout=0.2)

    @tool
    def rendezvous(n: int) -> int:
        """Wait for the other call."""
        barrier.wait()
        return n

    one_by_one = composite_tool("one_by_one", "One by one.", [rendezvous])
    out = results(one_by_one, calls(("rendezvous", {"n": 1}), ("rendezvous", {"n": 2})))
    assert out[0]["result"] == {"error": "BrokenBarrierError"}


def test_sub_calls_share_one_dependency_cache() -> None:
    created: list[int] = []

    def connect() -> str:
        created.append(1)
        return "conn"

    db = Dependency("db", connect)

    @tool
    async def use(n: int, conn: str = db) -> str:  # type: ignore[assignment]  # a Dependency default is injected
        """Use the connection."""
        return f"{conn}{n}"

    shared = composite_tool("shared", "Shared.", [use], concurrent=True)
    assert [r["result"] for r in results(shared, calls(("use", {"n": 1}), ("use", {"n": 2})))] == ["conn1", "conn2"]
    assert created == [1]


def test_missing_args_mean_no_arguments_and_bad_shapes_fail_the_whole_call() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    ops = composite_tool("ops", "Ops.", [ping])
    assert results(ops, '{"calls": [{"name": "ping"}]}') == [{"name": "ping", "result": "pong"}]
    bad = ops.run_sync('{"calls": {"name": "ping"}}')
    assert bad.is_error and "calls: Input should be a valid list" in bad.text  # type: ignore[union-attr]  # a TextResult here


def test_schema_is_a_discriminated_union_that_passes_strict() -> None:
    math = composite_tool("math", "Arithmetic.", [add_tool(), divide])
    item = math.parameters["properties"]["calls"]["items"]
    assert item["discriminator"]["propertyName"] == "name"
    strict = math.strict_parameters
    assert strict_violations(strict) == []
    variants = [
        strict["$defs"][ref["$ref"].rsplit("/", 1)[-1]] for ref in strict["properties"]["calls"]["items"]["anyOf"]
    ]
    assert [v["properties"]["name"] for v in variants] == [
        {"const": "add", "type": "string"},
        {"const": "divide", "type": "string"},
    ]
    assert variants[0]["properties"]["args"] == {"$ref": "#/$defs/Pair"}


def test_description_documents_every_sub_tool() -> None:
    math = composite_tool("math", "Arithmetic.", [add_tool(), divide], concurrent=True)
    assert math.description == (
        "Arithmetic.\n\n"
        'Pass one or more calls in `calls`, each {"name": <sub-tool>, "args": {...}}. The calls run all at once; '
        "each gets its own result and a failing call does not stop the others. Returns "
        '{"results": [{"name": ..., "result": ...}]} in call order; a failed call\'s result is {"error": "..."}.\n\n'
        "Sub-tools:\n"
        "- add: Add two numbers.\n"
        "  args: a (integer); b (integer)\n"
        "- divide: Divide a by b.\n"
        "  args: a (number); b (number)"
    )


def test_composites_nest() -> None:
    inner = composite_tool("inner", "Inner.", [add_tool()])
    outer = composite_tool("outer", "Outer.", [inner, divide])
    assert strict_violations(outer.strict_parameters) == []
    raw = json.dumps({"calls": [{"name": "inner", "args": {"calls": [{"name": "add", "args": {"a": 1, "b": 1}}]}}]})
    assert results(outer, raw) == [{"name": "inner", "result": {"results": [{"name": "add", "result": {"sum": 2}}]}}]


def test_cancellation_stops_the_composite() -> None:
    async def main() -> None:
        started = asyncio.Event()

        async def execute(p: Pair) -> int:
            started.set()
            await asyncio.Event().wait()
            return 0

        waits = define_tool(name="waits", description="W.", input=Pair, execute=execute)
        both = composite_tool("both", "Both.", [waits], concurrent=True)
        ctx = ToolContext()
        run = asyncio.ensure_future(both.run(calls(("waits", {"a": 1, "b": 1}), ("waits", {"a": 2, "b": 2})), ctx))
        await started.wait()
        ctx.cancel()
        with pytest.raises(ToolCanceled):
            await run

    asyncio.run(main())


def test_invalid_composites_raise_typed_errors() -> None:
    with pytest.raises(ToolDefinitionError, match="needs at least one sub-tool"):
        composite_tool("empty", "E.", [])
    with pytest.raises(ToolDefinitionError, match="two sub-tools named 'add'"):
        composite_tool("dup", "D.", [add_tool(), add_tool()])
