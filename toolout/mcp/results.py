"""What `toolout mcp-proxy` does to an upstream tool result: the toolkit's policy, on MCP's result shape.

An upstream `CallToolResult` is text when all its content blocks are text (joined by newlines), or,
with no content blocks, when it has structured content (its stable JSON). Such a result is uploaded
to the service, which measures it and decides (`extraction.texts.oversize`, the same policy as the toolkit's):

* small (and not routed): the upstream's result goes back unchanged, byte for byte; the service
  keeps nothing (`store=if_oversized`, or `always` to keep every output as a variable, as the toolkit does);
* oversized: the content becomes the exact too-large message plus a `resource_link` to the stored
  output (`toolout://outputs/{handle}`, as `toolout mcp` links it: `toolout.mcp.tools.output_link`);
* routed (`--route 'tool(output=variable:NAME)'`): the content becomes the service's manifest, plus the link.

A replaced result keeps the upstream's shape where a client checks it: a tool with an `outputSchema`
must return structured content, and clients validate it. Its structured content usually repeats the
text (`{"content": "<the text>"}`), so each string in it that equals the stored text is replaced by the
message; structured content that still carries the output some other way is dropped (it would bring
the oversized output back into the context).

Left alone: error results (an error is not data to keep) and results with images, audio or embedded
resources (no text form to store), as in the toolkit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from mcp import types

from extraction.directives.specs import DestinationKind, OutputRoute
from toolout.client import AsyncToolOutClient
from toolout.mcp.tools import output_link
from toolout.toolkit.call_pipeline import header_arguments, payload
from toolout.toolkit.results import TextResult

StorePolicy = Literal["if_oversized", "always"]
R = TypeVar("R", bound=types.Result)


@dataclass(frozen=True)
class Upload:
    """Where one upstream result goes: the session, the tool's route, and the store policy for inline results."""

    session: str
    tool: str
    arguments: dict[str, Any] | None
    route: OutputRoute | None = None
    store: StorePolicy = "if_oversized"


def unstamped(result: R) -> R:
    """`result` without the upstream's `serverInfo` stamp (2026-07-28 `_meta`): the proxy's client talks to
    the proxy, whose SDK stamps its own; the rest of `_meta` belongs to the upstream and passes through."""
    meta = result.meta or {}
    if types.SERVER_INFO_META_KEY not in meta:
        return result
    rest = {key: value for key, value in meta.items() if key != types.SERVER_INFO_META_KEY}
    return result.model_copy(update={"meta": rest or None})


def result_text(result: types.CallToolResult) -> str | None:
    """The text of a result the proxy may store, or None when it passes through untouched (see module doc)."""
    if result.is_error:
        return None
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if len(texts) != len(result.content):
        return None
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return None


async def shrink(client: AsyncToolOutClient, result: types.CallToolResult, upload: Upload) -> types.CallToolResult:
    """The result the proxy's client receives: unchanged, or the too-large message / manifest and a link."""
    text = result_text(result)
    if text is None:
        return result
    content, content_type = payload(TextResult(text))
    route = upload.route if upload.route is not None and upload.route.output.routed else None
    answer = await client.store(
        upload.session,
        content.encode("utf-8"),
        tool_name=upload.tool,
        tool_args=header_arguments(json.dumps(upload.arguments or {}, ensure_ascii=False)),
        content_type=content_type,
        store=upload.store,
        output=str(route.output) if route is not None else _discard(upload.route),
        write_mode=route.write_mode.value if route is not None and route.write_mode is not None else None,
    )
    if answer.get("routed"):
        return replaced(result, text, str(answer["manifest"]), answer.get("handle"))
    if answer.get("oversized"):
        return replaced(result, text, str(answer["message"]), str(answer["handle"]))
    return result


def _discard(route: OutputRoute | None) -> str | None:
    """`output=discard` is a route too (stored nowhere, the model sees the manifest)."""
    return str(route.output) if route is not None and route.output.kind is DestinationKind.DISCARD else None


def replaced(result: types.CallToolResult, text: str, message: str, handle: str | None) -> types.CallToolResult:
    """`result` with `message` (and a link to the stored output) in place of `text`."""
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=message)]
    if handle:
        content.append(output_link(handle))
    structured = _structured(result.structured_content, text, message)
    return types.CallToolResult(content=content, structured_content=structured, is_error=False, meta=result.meta)


def _structured(value: dict[str, Any] | None, text: str, message: str) -> dict[str, Any] | None:
    """Structured content with `text` replaced by `message`; None when it does not repeat the text."""
    if value is None:
        return None
    swapped, found = _swap(value, text, message)
    return swapped if found and isinstance(swapped, dict) else None


def _swap(value: Any, text: str, message: str) -> tuple[Any, bool]:
    """`value` with every string equal to `text` replaced by `message`, and whether there was one."""
    if isinstance(value, str):
        return (message, True) if value == text else (value, False)
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        pairs = [(key, *_swap(item, text, message)) for key, item in items]
        found = any(hit for _, _, hit in pairs)
        swapped = {k: v for k, v, _ in pairs} if isinstance(value, dict) else [v for _, v, _ in pairs]
        return swapped, found
    return value, False
