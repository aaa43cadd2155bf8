"""The standard tools a toolkit adds to the agent's own: the service answers them, no local code runs.

* `tool_output` {handle, extract, mode?} — docs/spec/tool-output.md, schema exact (`extraction.texts.tools`): an
  extraction job on the service; the answer is the ABSTRACT text.
* `tool_output_cache` {ref_id, offset?, limit?} and `tool_output_cache_grep` {ref_id, pattern,
  regex?, before?, after?, max_matches?} — docs/spec/tools.md §Standard tools: line-numbered Read and Grep of a
  stored output by its reference (a handle: every output the toolkit saw is stored, and a compacted
  tool message names its `output_ref`).
* `buffer_ops` — docs/spec/buffer-ops.md (`extraction.buffers.ops.buffer_ops_tool()`), its arguments sent
  to the service verbatim; a misuse comes back as an `Error: …` tool result.

A client mistake the service reports (an unknown ref_id, a bad pattern: any 4xx) becomes the tool
result `Error: <message>` flagged as an error, so the model can correct itself; a 5xx or a lost
connection propagates (the agent's operator must see those).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from extraction.buffers.ops import BUFFER_OPS_NAME, buffer_ops_tool
from extraction.texts.tools import TOOL_OUTPUT_NAME, Schema, function_tool, strict, tool_output_tool
from toolout.sdk import jobs, outputs, variables
from toolout.sdk.errors import ToolOutAPIError, UnavailableError
from toolout.sdk.evidence import Source
from toolout.sdk.plans import Plan, ToolText
from toolout.toolkit.args import RawArguments, decode_arguments, parse_arguments
from toolout.toolkit.errors import ToolDefinitionError
from toolout.toolkit.schema import input_schema

CACHE_NAME = "tool_output_cache"
CACHE_GREP_NAME = "tool_output_cache_grep"
STANDARD_NAMES = (TOOL_OUTPUT_NAME, CACHE_NAME, CACHE_GREP_NAME, BUFFER_OPS_NAME)
_CLOSED = ConfigDict(extra="forbid")
_REF_ID = "The output_ref of a tool output moved out of the context (or any stored output's handle)."


class ToolOutputArgs(BaseModel):
    model_config = _CLOSED
    handle: str = Field(min_length=1)
    extract: str = Field(min_length=1)
    mode: Literal["auto", "full-chunked", "read-grep", "truncate", "query"] = "auto"


class CacheReadArgs(BaseModel):
    model_config = _CLOSED
    ref_id: str = Field(min_length=1, description=_REF_ID)
    offset: int = Field(1, ge=1, description="1-based line number to start reading from.")
    limit: int = Field(2000, ge=1, description="Maximum number of lines to return.")


class CacheGrepArgs(BaseModel):
    model_config = _CLOSED
    ref_id: str = Field(min_length=1, description=_REF_ID)
    pattern: str = Field(min_length=1, description="Text to find: a literal substring, or a regex when regex is true.")
    regex: bool = Field(False, description="Treat pattern as a regular expression (RE2 syntax).")
    before: int = Field(0, ge=0, description="Lines of context before each match.")
    after: int = Field(0, ge=0, description="Lines of context after each match.")
    max_matches: int = Field(100, ge=1, description="Stop after this many matching lines.")


CACHE_DESCRIPTION = (
    "Read a tool output that was moved out of the context, by its output_ref. Returns its lines from offset, "
    "each prefixed with its line number; page with offset/limit."
)
CACHE_GREP_DESCRIPTION = (
    "Search a tool output that was moved out of the context, by its output_ref. Returns the matching lines "
    "prefixed with their line numbers, with optional context lines before/after each match."
)


@dataclass(frozen=True)
class ServiceTool:
    """A standard tool: its definition and the plan that answers one call (`run(args, session_id, timeout)`).

    `input_model` None: the arguments go to the service as given (it validates them itself).
    """

    name: str
    definition_dict: dict[str, Any]
    input_model: type[BaseModel] | None
    run: Callable[[Any, str, float], Plan[ToolText]]

    @property
    def parameters(self) -> Schema:
        return dict(self.definition_dict["function"]["parameters"])

    def definition(self, *, strict_mode: bool = False) -> dict[str, Any]:
        """The OpenAI function tool (a fresh copy; the strict variant with `strict_mode`)."""
        return dict(strict(self.definition_dict)) if strict_mode else copy.deepcopy(self.definition_dict)

    def arguments(self, raw: RawArguments) -> Any:
        """Decoded (and validated) arguments; `InvalidArguments` with the model-facing text otherwise."""
        if self.input_model is None:
            return decode_arguments(raw, self.name)
        return parse_arguments(raw, self.input_model, self.parameters, self.name)


def as_tool_text(plan: Plan[str | ToolText]) -> Plan[ToolText]:
    """A plan's answer as a tool result; the service's 4xx becomes `Error: <message>` for the model."""
    try:
        answer = yield from plan
    except ToolOutAPIError as exc:
        if isinstance(exc, UnavailableError):
            raise
        return ToolText(f"Error: {exc.message}", is_error=True)
    return answer if isinstance(answer, ToolText) else ToolText(answer)


def tool_output_text(
    args: ToolOutputArgs,
    *,
    timeout: float,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    poll_interval: float = 0.1,
) -> Plan[ToolText]:
    """The `tool_output` answer as a tool result (a failed extraction is flagged); `on_progress` sees the
    job record every `poll_interval` seconds (the MCP server relays them as progress notifications)."""
    options: dict[str, Any] = {"timeout": timeout, "on_progress": on_progress, "poll_interval": poll_interval}
    answer = yield from as_tool_text(
        _with_sources(jobs.tool_output_answer(args.handle, args.extract, args.mode, **options))
    )
    return answer._replace(is_error=answer.is_error or answer.text.startswith("TOOL_OUTPUT FAILED"))


def _with_sources(plan: Plan[tuple[str, tuple[Source, ...]]]) -> Plan[ToolText]:
    text, sources = yield from plan
    return ToolText(text, sources=sources)


def _tool_output(args: ToolOutputArgs, session_id: str, timeout: float) -> Plan[ToolText]:
    return (yield from tool_output_text(args, timeout=timeout))


def _cache_read(args: CacheReadArgs, session_id: str, timeout: float) -> Plan[ToolText]:
    return (yield from as_tool_text(outputs.read(args.ref_id, offset=args.offset, limit=args.limit)))


def _cache_grep(args: CacheGrepArgs, session_id: str, timeout: float) -> Plan[ToolText]:
    options = {"regex": args.regex, "before": args.before, "after": args.after, "max_matches": args.max_matches}
    return (yield from as_tool_text(outputs.grep(args.ref_id, args.pattern, **options)))


def _buffer_ops(args: dict[str, Any], session_id: str, timeout: float) -> Plan[ToolText]:
    return (yield from as_tool_text(variables.buffer_ops(session_id, args)))


def _model_tool(name: str, description: str, model: type[BaseModel]) -> dict[str, Any]:
    return function_tool(name, description, input_schema(model))


def _catalogue(offer_query: bool = False) -> dict[str, ServiceTool]:
    return {
        TOOL_OUTPUT_NAME: ServiceTool(
            TOOL_OUTPUT_NAME, tool_output_tool(offer_query=offer_query), ToolOutputArgs, _tool_output
        ),
        CACHE_NAME: ServiceTool(
            CACHE_NAME, _model_tool(CACHE_NAME, CACHE_DESCRIPTION, CacheReadArgs), CacheReadArgs, _cache_read
        ),
        CACHE_GREP_NAME: ServiceTool(
            CACHE_GREP_NAME,
            _model_tool(CACHE_GREP_NAME, CACHE_GREP_DESCRIPTION, CacheGrepArgs),
            CacheGrepArgs,
            _cache_grep,
        ),
        BUFFER_OPS_NAME: ServiceTool(BUFFER_OPS_NAME, buffer_ops_tool(), None, _buffer_ops),
    }


def standard_tools(selection: bool | Iterable[str] = True, *, offer_query: bool = False) -> dict[str, ServiceTool]:
    """The standard tools to add: all (True), none (False), or those named.

    `offer_query`: `tool_output`'s mode enum lists `query` (default: the exact schema of
    docs/spec/tool-output.md §tool_output schema; the service accepts `mode="query"` either way).
    """
    catalogue = _catalogue(offer_query)
    if selection is True:
        return catalogue
    if selection is False:
        return {}
    names = list(selection)
    unknown = sorted(set(names) - set(catalogue))
    if unknown:
        raise ToolDefinitionError(f"unknown standard tool(s) {unknown}: choose from {', '.join(STANDARD_NAMES)}")
    return {name: catalogue[name] for name in names}
