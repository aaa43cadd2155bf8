"""What every framework integration shares: where the service is, the session of one agent run, and the two
things an integration does to a tool call — offload a framework tool's output, or answer a call of one of
toolout's own tools.

Both are the toolkit's SDK plans (`toolout.toolkit.call_pipeline`): `foreign_output` (the service's oversize
policy decides; an oversized output is stored with the tool's name and arguments and the model sees the
exact "Tool output is too large" message; a routed one its manifest; anything else is left as it was) and
`service_tool_call` (validation, then the service answers). Nothing here knows a framework: the adapters
in `toolout.integrations.langchain`, `.pydantic_ai` and `.openai_agents` translate their messages to
these calls and back.

Sessions: one per agent run (`open_session`, deleted by `close_session`) unless `session_id=` is given
(then it is never deleted) or `keep_session=True`.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from toolout.client import AsyncToolOutClient, ToolOutClient
from toolout.sdk import outputs
from toolout.sdk.plans import Plan
from toolout.toolkit.adapters import ToolCall
from toolout.toolkit.call_pipeline import CallReport, CallSettings, foreign_output, service_tool_call
from toolout.toolkit.errors import ToolkitError
from toolout.toolkit.results import JsonResult, TextResult
from toolout.toolkit.routes import Routes, parse_routes
from toolout.toolkit.standard import CACHE_GREP_NAME, CACHE_NAME, ServiceTool, standard_tools

T = TypeVar("T")
TOOL_OUTPUT = "tool_output"
BUFFER_OPS = "buffer_ops"
DEFAULT_TOOLS = (TOOL_OUTPUT, CACHE_NAME, CACHE_GREP_NAME)
"""`buffer_ops` joins them with `buffer_ops=True` (it only makes sense with routes: docs/spec/directives.md)."""


@dataclass(frozen=True)
class RunSession:
    """The service session of one agent run; `owned`: created for the run, so deleted at its end."""

    id: str
    owned: bool


class ToolOutService:
    """The service for one integration object (a middleware, a capability, an `offload`ed agent)."""

    def __init__(
        self,
        api_url: str | None = None,
        api_key: str | None = None,
        *,
        client: ToolOutClient | AsyncToolOutClient | None = None,
        session_id: str | None = None,
        keep_session: bool = False,
        routes: Routes = None,
        buffer_ops: bool = False,
        extraction_timeout: float = 600.0,
    ) -> None:
        """As `Toolkit` takes the service: `api_url` (+ `api_key`), else `TOOLOUT_API_URL` (+ `TOOLOUT_API_KEY`),
        or a `client`. `routes`: `@tools` routes (docs/spec/directives.md) for the framework's tools
        (`toolout.toolkit.routes`)."""
        self._url = api_url or os.environ.get("TOOLOUT_API_URL")
        self._key = api_key or os.environ.get("TOOLOUT_API_KEY")
        if client is None and not self._url:
            raise ToolkitError("toolout needs the service: api_url=... (or TOOLOUT_API_URL), or client=...")
        self._sync = client if isinstance(client, ToolOutClient) else None
        self._given_async = client if isinstance(client, AsyncToolOutClient) else None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncToolOutClient] = (
            weakref.WeakKeyDictionary()
        )
        self.session_id, self.keep_session = session_id, keep_session
        self.tools: dict[str, ServiceTool] = standard_tools([*DEFAULT_TOOLS, *([BUFFER_OPS] if buffer_ops else [])])
        self.settings = CallSettings(parse_routes(routes, None), extraction_timeout=extraction_timeout)
        self._shared: RunSession | None = None

    # --- sessions ------------------------------------------------------------------------------------
    def open_session(self) -> RunSession:
        if self.session_id:
            return RunSession(self.session_id, owned=False)
        return RunSession(self._sync_client().execute(outputs.create_session()), owned=not self.keep_session)

    async def aopen_session(self) -> RunSession:
        if self.session_id:
            return RunSession(self.session_id, owned=False)
        created = await self._async_client().execute(outputs.create_session())
        return RunSession(created, owned=not self.keep_session)

    def close_session(self, session: RunSession | None) -> None:
        if session is not None and session.owned:
            self._sync_client().execute(outputs.delete_session(session.id))

    async def aclose_session(self, session: RunSession | None) -> None:
        if session is not None and session.owned:
            await self._async_client().execute(outputs.delete_session(session.id))

    def shared_session(self) -> str:
        """A session for calls outside any run (a bare LangGraph `ToolNode`): made once, deleted by `close()`."""
        if self._shared is None:
            self._shared = self.open_session()
        return self._shared.id

    async def ashared_session(self) -> str:
        if self._shared is None:
            self._shared = await self.aopen_session()
        return self._shared.id

    # --- one tool call -------------------------------------------------------------------------------
    def offload(self, session_id: str, name: str, args: Any, output: Any) -> CallReport:
        """A framework tool's output through the toolkit's pipeline (see the module docstring)."""
        return self._sync_client().execute(self._offload_plan(session_id, name, args, output))

    async def aoffload(self, session_id: str, name: str, args: Any, output: Any) -> CallReport:
        return await self._async_client().execute(self._offload_plan(session_id, name, args, output))

    def call_tool(self, session_id: str, name: str, args: Any, call_id: str = "") -> CallReport:
        """A call of one of toolout's tools (`tools`), answered by the service."""
        return self._sync_client().execute(self._tool_plan(session_id, name, args, call_id))

    async def acall_tool(self, session_id: str, name: str, args: Any, call_id: str = "") -> CallReport:
        return await self._async_client().execute(self._tool_plan(session_id, name, args, call_id))

    def _offload_plan(self, session_id: str, name: str, args: Any, output: Any) -> Plan[CallReport]:
        call = ToolCall(_call_id(), name, _arguments(args))
        result = TextResult(output) if isinstance(output, str) else JsonResult(output)
        return foreign_output(call, session_id, result, self.settings)

    def _tool_plan(self, session_id: str, name: str, args: Any, call_id: str) -> Plan[CallReport]:
        call = ToolCall(call_id or _call_id(), name, _arguments(args))
        return service_tool_call(self.tools[name], call, session_id, self.settings)

    # --- clients -------------------------------------------------------------------------------------
    def close(self) -> None:
        """Delete the shared session (if any) and close the sync client this object opened."""
        shared, self._shared = self._shared, None
        self.close_session(shared)
        if self._sync is not None and self._url:
            self._sync.close()
            self._sync = None

    async def aclose(self) -> None:
        shared, self._shared = self._shared, None
        await self.aclose_session(shared)
        client = self._async.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    def _sync_client(self) -> ToolOutClient:
        if self._sync is None:
            self._sync = ToolOutClient(self._require_url(), api_key=self._key)
        return self._sync

    def _async_client(self) -> AsyncToolOutClient:
        """One per event loop: an httpx async client cannot move between loops (`asyncio.run` twice)."""
        if self._given_async is not None:
            return self._given_async
        loop = asyncio.get_running_loop()
        if loop not in self._async:
            self._async[loop] = AsyncToolOutClient(self._require_url(), api_key=self._key)
        return self._async[loop]

    def _require_url(self) -> str:
        if not self._url:
            raise ToolkitError("this call needs the other kind of client: pass api_url= instead of client=")
        return self._url


def _call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _arguments(args: Any) -> str | Mapping[str, Any] | None:
    """The arguments as the pipeline takes them: JSON text, a mapping, or None."""
    if args is None or isinstance(args, str | Mapping):
        return args
    return json.dumps(args, default=str)


def tool_names(service: ToolOutService) -> Iterable[str]:
    return service.tools.keys()


def report_text(report: CallReport) -> str:
    """What the model reads for a call (always text here: these reports never carry content parts)."""
    content = report.message.content
    return content if isinstance(content, str) else json.dumps(content)
