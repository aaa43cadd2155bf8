"""define_tool / @tool / Tool.run: inference, execution errors, sync and async, timeouts, cancellation."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from extraction.errors import StrictSchemaError
from extraction.schemas.strict_rules import strict_violations
from toolout.toolkit.context import ToolContext
from toolout.toolkit.deps import Dependency
from toolout.toolkit.errors import ToolCanceled, ToolDefinitionError, ToolkitError
from toolout.toolkit.results import JsonResult, TextResult
from toolout.toolkit.tool import define_tool, tool


class Query(BaseModel):
    """Search input."""

    q: str
    limit: int = 3


def test_define_tool_with_execute_args_ctx() -> None:
    def execute(args: Query, ctx: ToolContext) -> list[str]:
        return [f"{ctx.tool_name}:{args.q}"] * args.limit

    search = define_tool(name="search", description="Search things.", input=Query, execute=execute)
    assert search.run_sync('{"q": "x", "limit": 2}') == JsonResult(["search:x", "search:x"])


def test_define_tool_with_execute_args_only_and_async() -> None:
    async def execute(args: Query) -> str:
        return args.q.upper()

    search = define_tool(name="search", description="Search.", input=Query, execute=execute)
    assert asyncio.run(search.execute_raw('{"q": "x"}', ToolContext())) == TextResult("X")


def test_definition_plain_and_strict() -> None:
    search = define_tool(name="search", description="Search things.", input=Query, execute=lambda a: "")
    plain = search.definition()
    assert plain == {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search things.",
            "parameters": {
                "additionalProperties": False,
                "description": "Search input.",
                "properties": {"q": {"type": "string"}, "limit": {"default": 3, "type": "integer"}},
                "required": ["q"],
                "type": "object",
            },
        },
    }
    strict = search.definition(strict=True)["function"]
    assert strict["strict"] is True
    assert strict["parameters"]["properties"]["limit"] == {"type": ["integer", "null"], "description": "Default: 3."}
    assert strict_violations(strict["parameters"]) == []


def test_a_dict_input_has_no_strict_form() -> None:
    class Labels(BaseModel):
        labels: dict[str, str]

    labels = define_tool(name="label", description="Label.", input=Labels, execute=lambda a: "")
    assert not labels.supports_strict
    assert labels.definition()["function"]["parameters"]["properties"]["labels"]["additionalProperties"] == {
        "type": "string"
    }
    with pytest.raises(StrictSchemaError, match="open object"):
        labels.definition(strict=True)
    assert define_tool(name="q", description="Q.", input=Query, execute=lambda a: "").supports_strict


def test_definitions_are_copies() -> None:
    search = define_tool(name="search", description="S.", input=Query, execute=lambda a: "")
    search.definition()["function"]["parameters"]["properties"].clear()
    assert list(search.parameters["properties"]) == ["q", "limit"]


def test_an_exception_becomes_the_seed_error_text() -> None:
    def execute(args: Query) -> str:
        raise RuntimeError(f"index {args.q} unavailable")

    search = define_tool(name="search", description="S.", input=Query, execute=execute)
    assert search.run_sync('{"q": "books"}') == TextResult(
        "Error executing tool: index books unavailable", is_error=True
    )


def test_a_sync_tool_runs_in_a_worker_thread_and_an_async_one_on_the_loop() -> None:
    threads: dict[str, threading.Thread] = {}

    def sync_execute(args: Query) -> str:
        threads["sync"] = threading.current_thread()
        return "s"

    async def async_execute(args: Query) -> str:
        threads["async"] = threading.current_thread()
        return "a"

    for name, execute in (("s", sync_execute), ("a", async_execute)):
        define_tool(name=name, description="D.", input=Query, execute=execute).run_sync('{"q": ""}')
    assert threads["async"] is threading.main_thread()
    assert threads["sync"] is not threading.main_thread()


def test_run_sync_inside_a_running_loop_is_refused() -> None:
    search = define_tool(name="search", description="S.", input=Query, execute=lambda a: "")

    async def main() -> None:
        search.run_sync('{"q": ""}')

    with pytest.raises(ToolkitError, match=r"search.run_sync\(\) called inside a running event loop"):
        asyncio.run(main())


def test_timeout_is_an_execution_error_seen_by_on_error() -> None:
    errors: list[dict[str, str]] = []

    async def execute(args: Query) -> str:
        await asyncio.Event().wait()
        return "never"

    slow = define_tool(
        name="slow",
        description="S.",
        input=Query,
        execute=execute,
        timeout=0.05,
        on_error=lambda a, e: errors.append(e),
    )
    assert slow.run_sync('{"q": ""}') == TextResult("Error executing tool: timed out after 0.05 s", is_error=True)
    assert errors == [{"error": "timed out after 0.05 s"}]


def test_run_sync_returns_on_timeout_while_an_uncooperative_sync_tool_still_runs() -> None:
    release, finished = threading.Event(), threading.Event()

    def execute(args: Query) -> str:
        release.wait(3)  # ignores its context; the safety timeout only keeps a broken build from hanging
        finished.set()
        return "late"

    stuck = define_tool(name="stuck", description="S.", input=Query, execute=execute, timeout=0.05)
    result = stuck.run_sync('{"q": ""}')
    still_running = not finished.is_set()
    release.set()
    assert result == TextResult("Error executing tool: timed out after 0.05 s", is_error=True)
    assert still_running
    assert finished.wait(5)


def test_invalid_definitions_raise_typed_errors() -> None:
    with pytest.raises(ToolDefinitionError, match="invalid tool name 'bad name'"):
        define_tool(name="bad name", description="D.", input=Query, execute=lambda a: "")
    with pytest.raises(ToolDefinitionError, match="needs a description"):
        define_tool(name="t", description="  ", input=Query, execute=lambda a: "")
    with pytest.raises(ToolDefinitionError, match="input must be a pydantic model class"):
        define_tool(name="t", description="D.", input=dict, execute=lambda a: "")  # type: ignore[arg-type]  # the mistake under test


# ---------------------------------------------------------------- @tool


def test_tool_infers_the_input_model_and_description_from_the_function() -> None:
    @tool
    def search(query: str, limit: int = 5, tags: list[str] | None = None) -> dict[str, Any]:
        """Search the catalogue.

        Returns matching titles.

        Args:
            query: What to look for.
            limit: At most this many results,
                counted after filtering.
            tags (list): Only items with all these tags.
        """
        return {"query": query, "limit": limit, "tags": tags}

    assert search.name == "search"
    assert search.description == "Search the catalogue.\n\nReturns matching titles."
    properties = search.parameters["properties"]
    assert properties["query"] == {"description": "What to look for.", "type": "string"}
    assert properties["limit"]["description"] == "At most this many results, counted after filtering."
    assert properties["tags"]["description"] == "Only items with all these tags."
    assert search.parameters["required"] == ["query"]
    assert search.run_sync('{"query": "q", "tags": null}') == JsonResult({"query": "q", "limit": 5, "tags": None})
    assert strict_violations(search.strict_parameters) == []


def test_annotated_field_descriptions_win_over_the_docstring() -> None:
    @tool(name="find", description="Find.")
    def finder(q: Annotated[str, Field(description="from Field", min_length=2)]) -> str:
        """Ignored.

        Args:
            q: from the docstring
        """
        return q

    assert finder.name == "find" and finder.description == "Find."
    assert finder.parameters["properties"]["q"]["description"] == "from Field"
    assert finder.run_sync('{"q": "a"}').is_error


def test_tool_injects_the_context_and_dependencies_outside_the_schema() -> None:
    created: list[str] = []

    def connect() -> dict[str, int]:
        created.append("db")
        return {"rows": 2}

    db = Dependency("db", connect)

    @tool
    async def count(table: str, ctx: ToolContext, conn: dict[str, int] = db) -> str:  # type: ignore[assignment]  # a Dependency default is injected
        """Count rows."""
        again = await ctx.resolve(db)
        return f"{table}:{conn['rows']}:{again is conn}:{ctx.tool_name}"

    assert list(count.parameters["properties"]) == ["table"]
    assert count.run_sync('{"table": "t"}') == TextResult("t:2:True:count")
    assert created == ["db"]
    overridden = ToolContext(overrides={"db": lambda: {"rows": 9}})
    assert count.run_sync('{"table": "t"}', overridden) == TextResult("t:9:True:count")


def test_tool_with_an_explicit_input_model() -> None:
    @tool(input=Query)
    def lookup(args: Query, ctx: ToolContext) -> str:
        """Look up."""
        return args.q * args.limit

    assert lookup.description == "Look up." and lookup.input_model is Query
    assert lookup.run_sync('{"q": "ab", "limit": 2}') == TextResult("abab")


def test_tool_refuses_signatures_it_cannot_call_by_name() -> None:
    with pytest.raises(ToolDefinitionError, match="parameter 'rest' must be a named parameter"):

        @tool
        def variadic(*rest: int) -> None:
            """V."""

    with pytest.raises(ToolDefinitionError, match="parameter 'x' needs a type annotation"):

        @tool
        def untyped(x) -> None:  # type: ignore[no-untyped-def]  # the mistake under test
            """U."""

    with pytest.raises(ToolDefinitionError, match="needs a description"):

        @tool
        def undocumented(x: int) -> None:
            pass


# ---------------------------------------------------------------- cancellation


def test_cancelling_the_context_cancels_a_running_async_tool() -> None:
    seen: list[str] = []

    async def main() -> None:
        started = asyncio.Event()

        async def execute(args: Query) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                seen.append("tool canceled")
                raise
            return "never"

        waits = define_tool(name="waits", description="W.", input=Query, execute=execute)
        ctx = ToolContext()
        run = asyncio.ensure_future(waits.run('{"q": ""}', ctx))
        await started.wait()
        ctx.cancel("user pressed stop")
        with pytest.raises(ToolCanceled, match="user pressed stop"):
            await run
        await asyncio.sleep(0)

    asyncio.run(main())
    assert seen == ["tool canceled"]


def test_cancelling_the_context_from_another_thread_stops_a_sync_tool_cooperatively() -> None:
    started, finished = threading.Event(), threading.Event()
    observed: list[bool] = []

    def execute(args: Query, ctx: ToolContext) -> str:
        started.set()
        observed.append(ctx.cancel_token.wait_sync(timeout=5))
        finished.set()
        ctx.raise_if_canceled()
        return "never"

    waits = define_tool(name="waits", description="W.", input=Query, execute=execute)
    ctx = ToolContext()

    def cancel_once_started() -> None:
        started.wait(5)
        ctx.cancel("shutdown")

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    with pytest.raises(ToolCanceled, match="shutdown"):
        waits.run_sync('{"q": ""}', ctx)
    canceller.join(5)
    assert finished.wait(5) and observed == [True]


def test_an_already_canceled_context_runs_nothing() -> None:
    ran: list[str] = []
    tool_ = define_tool(name="t", description="T.", input=Query, execute=lambda a: ran.append("x"))
    ctx = ToolContext()
    ctx.cancel()
    with pytest.raises(ToolCanceled):
        tool_.run_sync('{"q": ""}', ctx)
    assert ran == []


def test_cancelling_the_awaiting_task_cancels_the_tool() -> None:
    seen: list[str] = []

    async def main() -> None:
        started = asyncio.Event()

        async def execute(args: Query) -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                seen.append("tool stopped")
            return "never"

        waits = define_tool(name="waits", description="W.", input=Query, execute=execute)
        run = asyncio.ensure_future(waits.run('{"q": ""}'))
        await started.wait()
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        await asyncio.sleep(0)

    asyncio.run(main())
    assert seen == ["tool stopped"]


def test_cancellation_is_not_an_execution_error() -> None:
    errors: list[Any] = []

    def execute(args: Query, ctx: ToolContext) -> str:
        ctx.cancel("stop")
        ctx.raise_if_canceled()
        return "never"

    tool_ = define_tool(
        name="t", description="T.", input=Query, execute=execute, on_error=lambda a, e: errors.append(e)
    )
    with pytest.raises(ToolCanceled):
        tool_.run_sync('{"q": ""}')
    assert errors == []
