"""`Toolkit`: your tools plus toolout, for one agent session — sync and async, cancellable.

    kit = Toolkit([get_orders, show_order], api_url="http://127.0.0.1:8000",
                  routes="@tools search(output=variable:search)")
    tools = kit.openai_tools()                      # yours + tool_output, tool_output_cache(_grep), buffer_ops
    messages += kit.handle(response.choices[0].message.tool_calls)   # tool messages, in call order
    result = kit.run_agent("openai/gpt-4o-mini", messages, max_turns=10)   # or your own loop

What happens to a call: `toolout.toolkit.call_pipeline` ($var resolution, run, save as a variable
or route, the too-large message). Compaction: `compact(messages, budget_tokens)`. Instructions for
the system prompt: `instructions()`. The agent's streamed text: `resolve_stream(chunks)`.

Every operation is an SDK plan (`toolout.toolkit.session`), run by the sync client for the plain
methods and by the async client for the `a`-prefixed ones (`ahandle`, `arun_agent`, ...). With
`api_url`, the toolkit opens whichever client a method needs; with `client=`, that client's kind
decides which methods work (a sync method on an async client, or the reverse, is a `ToolkitError`).

Cancellation: `cancel()` (or the `cancel_token` of the `context` you passed, or a per-call
`cancel=`) stops the running tool (it raises `ToolCanceled`), waits for the service, and any
pending extraction job, which is canceled on the service too. A canceled toolkit stays
canceled; start a new one (with `session_id=` to keep the session's variables).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from extraction.documents.tokens import DEFAULT_ENCODING
from toolout.client import AsyncToolOutClient, ToolOutClient
from toolout.sdk.driving import as_async
from toolout.sdk.plans import Plan
from toolout.sdk.variables import Style
from toolout.toolkit.adapters import tool_calls_of
from toolout.toolkit.agent import AgentOptions, AgentResult, agent_plan
from toolout.toolkit.call_pipeline import CallReport, CallSettings, Naming
from toolout.toolkit.cancel import CancelToken
from toolout.toolkit.context import ToolContext
from toolout.toolkit.errors import ToolDefinitionError, ToolkitError
from toolout.toolkit.routes import Routes, parse_routes
from toolout.toolkit.session import ToolSession
from toolout.toolkit.standard import ServiceTool, standard_tools
from toolout.toolkit.tokens import TokenCounter, token_counter
from toolout.toolkit.tool import Tool

T = TypeVar("T")
Client = ToolOutClient | AsyncToolOutClient


class Toolkit:
    """Your tools plus toolout's for one agent session: offer them to the model (`openai_tools`), run the model's
    calls (`handle`) — a result too large for the context is stored and the model gets the too-large message —
    or run a whole agent loop (`run_agent`). Plain methods use the sync client, `a`-prefixed ones the async one;
    close it (or use `with` / `async with`) to delete the session it created."""

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        api_url: str | None = None,
        api_key: str | None = None,
        client: Client | None = None,
        session_id: str | None = None,
        routes: Routes = None,
        naming: Naming | None = None,
        standard: bool | Iterable[str] = True,
        max_value_chars: int | None = None,
        extraction_timeout: float = 600.0,
        context: ToolContext | None = None,
        encoding: str = DEFAULT_ENCODING,
        offer_query: bool = False,
        model: str | None = None,
    ) -> None:
        """`tools`: your `Tool`s (`define_tool`, `@tool`, `composite_tool`). The service: `api_url` (+ `api_key`,
        default `TOOLOUT_API_KEY`, as `toolout dev` prints it) or a `client`. `session_id`: continue a session
        (default: one is created on first use, and deleted by `close()`). `routes`: `@tools` directive text or a dict
        (`toolout.toolkit.routes`). `naming(tool, args, output)`: a variable name, or None for the service's
        `<tool>_<n>`. `standard`: which standard tools to add. `max_value_chars`: largest value one `$ref` may bring
        into arguments (default: the service's). `offer_query`: list `query` in `tool_output`'s mode enum (the SQL
        strategy for JSON/NDJSON/CSV outputs). `model`: the model `tool_output` extractions ask the service for (one of
        its allowed models; default: the service's own per stage); with a `client`, the client's `model` applies.
        """
        self._model = model
        if client is None and api_url is None:
            raise ToolkitError("a Toolkit needs the service: api_url=... (and api_key=...) or client=...")
        if client is not None and not isinstance(client, ToolOutClient | AsyncToolOutClient):
            raise ToolkitError(f"client must be a ToolOutClient or an AsyncToolOutClient, not {type(client).__name__}")
        own = _index_tools(tools)
        service = standard_tools(standard, offer_query=offer_query)
        clash = sorted(set(own) & set(service))
        if clash:
            raise ToolDefinitionError(f"tool name(s) {clash} are taken by the standard tools (standard=False?)")
        settings = CallSettings(parse_routes(routes, own), naming, max_value_chars, extraction_timeout)
        self.session = ToolSession(own, service, settings, session_id=session_id)
        self.context = context or ToolContext()
        self._api = (api_url, api_key if api_key is not None else os.environ.get("TOOLOUT_API_KEY"))
        self._sync = client if isinstance(client, ToolOutClient) else None
        self._async = client if isinstance(client, AsyncToolOutClient) else None
        self._owned: list[Client] = []
        self._count: TokenCounter | None = None
        self._encoding = encoding

    # --- what the model is offered ----------------------------------------------------------------
    @property
    def session_id(self) -> str | None:
        """The toolout session the outputs and variables live in: `None` until the first call that needs one."""
        return self.session.session_id

    @property
    def tools(self) -> dict[str, Tool | ServiceTool]:
        """Every tool by name: yours, then the standard ones (`tool_output`, the cache tools, `buffer_ops`)."""
        return {**self.session.tools, **self.session.service_tools}

    def openai_tools(self, *, strict: bool = False) -> list[dict[str, Any]]:
        """Chat-completions `tools`: yours, then the standard ones; `strict` for OpenAI strict mode."""
        own = [t.definition(strict=strict) for t in self.session.tools.values()]
        return own + [t.definition(strict_mode=strict) for t in self.session.service_tools.values()]

    # --- sync ----------------------------------------------------------------------------------------
    def handle(self, tool_calls: Any, *, cancel: CancelToken | None = None) -> list[dict[str, Any]]:
        """Run the model's tool calls (litellm/openai objects, dicts, a message or a response): tool messages."""
        return [report.to_openai() for report in self.run_calls(tool_calls, cancel=cancel)]

    def run_calls(self, tool_calls: Any, *, cancel: CancelToken | None = None) -> list[CallReport]:
        """`handle`, with each call's report (variable name, handle, routed, oversized)."""
        ctx = self._ctx(cancel)
        return self._run(self.session.calls(tool_calls_of(tool_calls), ctx), ctx.cancel_token)

    def instructions(self, style: Style = "full") -> str:
        """The variable instructions (docs/spec/variables.md §Instructions) with the current variables."""
        return self._run(self.session.instructions(style))

    def compact(self, messages: Sequence[Any], budget_tokens: int, *, keep_last: int = 1) -> list[Any]:
        """Past `budget_tokens`, the oldest tool results become `output_ref` references (docs/spec/tools.md)."""
        return self._run(self.session.compact(messages, budget_tokens, self.count_tokens, keep_last=keep_last))

    def resolve_text(self, text: str) -> str:
        """`text` with its `$var` references replaced by the variables' values (docs/spec/variables.md)."""
        return self._run(self.session.resolve_text(text))

    def resolve_stream(self, items: Iterable[str | T]) -> Iterator[str | T]:
        """The agent's text stream with `$var` references resolved chunk by chunk; other items pass through."""
        resolver = self._run(self.session.stream())
        for item in items:
            yield from self._run(resolver.push(item))
        yield from self._run(resolver.end())

    def run_agent(self, model: str, messages: Sequence[Any], *, max_turns: int = 10, **options: Any) -> AgentResult:
        """A litellm agent loop with these tools (`toolout.toolkit.agent`); `options`: `budget_tokens`,
        `keep_last`, `style`, `strict`, and anything else goes to `litellm.completion`."""
        agent, ctx = self._agent_options(model, max_turns, options), self._ctx(None)
        return self._run(agent_plan(self.session, messages, agent, ctx, self.count_tokens), ctx.cancel_token)

    # --- async ---------------------------------------------------------------------------------------
    async def ahandle(self, tool_calls: Any, *, cancel: CancelToken | None = None) -> list[dict[str, Any]]:
        """`handle`, awaited: the calls run concurrently on the async client."""
        return [report.to_openai() for report in await self.arun_calls(tool_calls, cancel=cancel)]

    async def arun_calls(self, tool_calls: Any, *, cancel: CancelToken | None = None) -> list[CallReport]:
        """`run_calls`, awaited."""
        ctx = self._ctx(cancel)
        return await self._arun(self.session.calls(tool_calls_of(tool_calls), ctx), ctx.cancel_token)

    async def ainstructions(self, style: Style = "full") -> str:
        """`instructions`, awaited."""
        return await self._arun(self.session.instructions(style))

    async def acompact(self, messages: Sequence[Any], budget_tokens: int, *, keep_last: int = 1) -> list[Any]:
        """`compact`, awaited."""
        return await self._arun(self.session.compact(messages, budget_tokens, self.count_tokens, keep_last=keep_last))

    async def aresolve_text(self, text: str) -> str:
        """`resolve_text`, awaited."""
        return await self._arun(self.session.resolve_text(text))

    async def aresolve_stream(self, items: AsyncIterable[str | T] | Iterable[str | T]) -> AsyncIterator[str | T]:
        """`resolve_stream` for an async stream (a plain iterable is accepted too)."""
        resolver = await self._arun(self.session.stream())
        async for item in as_async(items):
            for out in await self._arun(resolver.push(item)):
                yield out
        for out in await self._arun(resolver.end()):
            yield out

    async def arun_agent(
        self, model: str, messages: Sequence[Any], *, max_turns: int = 10, **options: Any
    ) -> AgentResult:
        """`run_agent` with `litellm.acompletion`."""
        agent, ctx = self._agent_options(model, max_turns, options), self._ctx(None)
        return await self._arun(agent_plan(self.session, messages, agent, ctx, self.count_tokens), ctx.cancel_token)

    # --- lifecycle -----------------------------------------------------------------------------------
    def cancel(self, reason: str = "canceled") -> None:
        """Stop what runs now and refuse further calls (the context's token is canceled)."""
        self.context.cancel(reason)

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` (exact offline, else the documented estimate: `toolout.toolkit.tokens`)."""
        if self._count is None:
            self._count = token_counter(self._encoding)
        return self._count(text)

    def close(self) -> None:
        """Delete the session if this toolkit created it, and close the clients it opened (sync)."""
        if self.session.created_session and self.session.session_id:
            self._sync_client().delete_session(self.session.session_id)
            self.session.created_session = False
        for client in self._owned:
            if isinstance(client, ToolOutClient):
                client.close()

    async def aclose(self) -> None:
        """`close()` for async use."""
        if self.session.created_session and self.session.session_id:
            await self._async_client().delete_session(self.session.session_id)
            self.session.created_session = False
        for client in self._owned:
            if isinstance(client, AsyncToolOutClient):
                await client.aclose()
            else:
                client.close()

    def __enter__(self) -> Toolkit:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # --- plumbing ------------------------------------------------------------------------------------
    def _ctx(self, cancel: CancelToken | None) -> ToolContext:
        return self.context if cancel is None else self.context.with_cancel_token(cancel)

    def _agent_options(self, model: str, max_turns: int, options: dict[str, Any]) -> AgentOptions:
        known = {key: options.pop(key) for key in ("budget_tokens", "keep_last", "style") if key in options}
        tools = self.openai_tools(strict=bool(options.pop("strict", False)))
        return AgentOptions(model, max_turns, tools=tools, completion=options, **known)

    def _run(self, plan: Plan[T], cancel: CancelToken | None = None) -> T:
        return self._sync_client().execute(plan, cancel=cancel or self.context.cancel_token)

    async def _arun(self, plan: Plan[T], cancel: CancelToken | None = None) -> T:
        return await self._async_client().execute(plan, cancel=cancel or self.context.cancel_token)

    def _sync_client(self) -> ToolOutClient:
        if self._sync is None:
            url, key = self._require_url("a sync method (handle, run_agent, ...)")
            self._sync = ToolOutClient(url, api_key=key, model=self._model)
            self._owned.append(self._sync)
        return self._sync

    def _async_client(self) -> AsyncToolOutClient:
        if self._async is None:
            url, key = self._require_url("an async method (ahandle, arun_agent, ...)")
            self._async = AsyncToolOutClient(url, api_key=key, model=self._model)
            self._owned.append(self._async)
        return self._async

    def _require_url(self, what: str) -> tuple[str, str | None]:
        url, key = self._api
        if url is None:
            raise ToolkitError(f"{what} needs the other kind of client: pass api_url= instead of client=")
        return url, key


def _index_tools(tools: Iterable[Tool]) -> dict[str, Tool]:
    index: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            raise ToolDefinitionError(f"{item!r} is not a Tool: define it with define_tool or @tool")
        if item.name in index:
            raise ToolDefinitionError(f"two tools named {item.name!r}")
        index[item.name] = item
    return index
