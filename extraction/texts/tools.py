"""Tool definitions, from one place: `tool_output` (exact) and the line-level tools (docs/spec/tool-output.md).

`tool_output` is what the agent calls to extract. Read and Grep (docs/spec/tool-output.md §Line tools,
by `handle`) serve two callers with the same parameters: the agent, as
`tool_output_read`/`tool_output_grep`, and the read-grep sub-agent, as `Read`/`Grep` (names its
prompt uses). Everything is returned as a fresh deep copy in OpenAI function-tool form, so no
caller can mutate the shared definitions; `strict()` derives the strict-mode variant.
"""

from __future__ import annotations

import copy
from typing import Any

from extraction.schemas.strict_schema import strict_schema

Schema = dict[str, Any]
Tool = dict[str, Any]

TOOL_OUTPUT_NAME = "tool_output"
READ_NAME = "tool_output_read"
GREP_NAME = "tool_output_grep"
SUB_AGENT_READ_NAME = "Read"
SUB_AGENT_GREP_NAME = "Grep"

TOOL_OUTPUT_PARAMETERS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["handle", "extract"],
    "properties": {
        "handle": {
            "type": "string",
            "minLength": 1,
            "description": (
                "UUID handle of the stored tool output "
                '(provided in the tool-result message: tool_output(handle = "<uuid>", ...)).'
            ),
        },
        "extract": {
            "type": "string",
            "minLength": 1,
            "description": (
                "Provide precise, detailed instructions about what you need from the tool output "
                "(be specific, include keys/fields/sections if known)."
            ),
        },
        "mode": {
            "type": "string",
            "enum": ["auto", "full-chunked", "read-grep", "truncate"],
            "description": (
                "Optional override. auto=module decides; full-chunked=LLM chunk+reduce; "
                "read-grep=dynamic sub-agent with Read/Grep; truncate=keeps top and bottom, truncates in the middle."
            ),
        },
    },
}

_HANDLE = {
    "type": "string",
    "minLength": 1,
    "description": "UUID handle of the stored tool output; it is also the filename. Use it exactly as given.",
}

READ_PARAMETERS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["handle"],
    "properties": {
        "handle": _HANDLE,
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "1-based line number to start reading from (default: the first line).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "Maximum number of lines to return (default: a page chosen by the server).",
        },
    },
}

GREP_PARAMETERS: Schema = {
    "type": "object",
    "additionalProperties": False,
    "required": ["handle", "pattern"],
    "properties": {
        "handle": _HANDLE,
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "Text to search for: a literal substring, or a regular expression when regex is true.",
        },
        "regex": {
            "type": "boolean",
            "description": (
                "Treat pattern as a regular expression (RE2 syntax: no backreferences or lookaround). Default false."
            ),
        },
        "ignore_case": {"type": "boolean", "description": "Match without regard to letter case. Default false."},
        "before": {
            "type": "integer",
            "minimum": 0,
            "description": "Lines of context to show before each match. Default 0.",
        },
        "after": {
            "type": "integer",
            "minimum": 0,
            "description": "Lines of context to show after each match. Default 0.",
        },
        "max_matches": {
            "type": "integer",
            "minimum": 1,
            "description": "Stop after this many matching lines (default: a limit chosen by the server).",
        },
    },
}

TOOL_OUTPUT_DESCRIPTION = (
    "Extract information from a tool output that was too large to show. Pass the handle from the "
    '"Tool output is too large" message and precise instructions in `extract`; the answer is plain text.'
)
READ_DESCRIPTION = (
    "Read a stored tool output by handle (the filename). Returns the lines from offset, each prefixed "
    "with its line number; page with offset/limit."
)
GREP_DESCRIPTION = (
    "Search a stored tool output by handle (the filename). Returns matching lines prefixed with their "
    "line numbers, with optional context lines before/after each match."
)


def function_tool(name: str, description: str, parameters: Schema) -> Tool:
    """An OpenAI function-tool definition (deep-copied parameters)."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": copy.deepcopy(parameters)},
    }


QUERY_MODE_DESCRIPTION = (
    "Optional override. auto=module decides; full-chunked=LLM chunk+reduce; "
    "read-grep=dynamic sub-agent with Read/Grep; truncate=keeps top and bottom, truncates in the middle; "
    "query=sub-agent with SQL over JSON/NDJSON/CSV data (exact counts and sums)."
)


def tool_output_tool(name: str = TOOL_OUTPUT_NAME, *, offer_query: bool = False) -> Tool:
    """The agent-facing extraction tool: the exact schema (docs/spec/tool-output.md §tool_output schema), or
    with `query` in the mode enum when offered."""
    tool = function_tool(name, TOOL_OUTPUT_DESCRIPTION, TOOL_OUTPUT_PARAMETERS)
    if offer_query:
        mode = tool["function"]["parameters"]["properties"]["mode"]
        mode["enum"] = [*mode["enum"], "query"]
        mode["description"] = QUERY_MODE_DESCRIPTION
    return tool


def read_tool(name: str = SUB_AGENT_READ_NAME) -> Tool:
    """Line-numbered read of a stored output; `Read` for the sub-agent, `tool_output_read` for the agent."""
    return function_tool(name, READ_DESCRIPTION, READ_PARAMETERS)


def grep_tool(name: str = SUB_AGENT_GREP_NAME) -> Tool:
    """Line-numbered search of a stored output; `Grep` for the sub-agent, `tool_output_grep` for the agent."""
    return function_tool(name, GREP_DESCRIPTION, GREP_PARAMETERS)


def agent_tools() -> list[Tool]:
    """Everything the agent sees while its store is non-empty: extract, read, grep."""
    return [tool_output_tool(), tool_output_read_tool(), tool_output_grep_tool()]


def sub_agent_tools() -> list[Tool]:
    """The read-grep sub-agent's only tools (Read and Grep, nothing else)."""
    return [read_tool(), grep_tool()]


def strict(tool_or_schema: Tool | Schema) -> Tool | Schema:
    """An OpenAI strict-mode copy of a function tool (adds `"strict": true`) or of a bare schema.

    The conversion is `extraction.schemas.strict_schema.strict_schema` (shared with the toolkit): every
    property required, optional ones nullable (a null argument means "not given"), keywords strict
    mode rejects (here `minLength`) dropped and left to the server's own validation.
    """
    if "function" not in tool_or_schema:
        return strict_schema(tool_or_schema)
    result = copy.deepcopy(tool_or_schema)
    result["function"]["parameters"] = strict_schema(tool_or_schema["function"]["parameters"])
    result["function"]["strict"] = True
    return result


def tool_output_read_tool() -> Tool:
    """Read as the agent sees it: named `tool_output_read`."""
    return read_tool(READ_NAME)


def tool_output_grep_tool() -> Tool:
    """Grep as the agent sees it: named `tool_output_grep`."""
    return grep_tool(GREP_NAME)
