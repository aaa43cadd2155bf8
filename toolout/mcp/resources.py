"""Stored outputs as MCP resources: listed per session, read by handle, a window of bytes at a time.

URIs (the `resource_link` blocks of tool results use the first):

* `toolout://outputs/{handle}` — the output's text from its start;
* `toolout://outputs/{handle}/bytes/{offset}` — its text from byte `offset` (the next window);
* `toolout://outputs/{handle}/lines/{first}-{last}` — lines `first`-`last`, numbered as Read numbers them
  (what an answer's source links point at: the lines it cites);
* `toolout://sessions/{session_id}` — any session's outputs, as the JSON of what `resources/list`
  would list for it (`{"session_id", "resources": [{uri, name, description, mimeType, size}]}`).

A read returns at most `max_bytes` (256 KiB by default: `toolout.mcp.DEFAULT_MAX_BYTES` says why) of
the stored bytes as text, so a 1 GB output cannot flood a client; a window never cuts a UTF-8
character (it ends before one that does not fit). The content's `_meta["toolout"]` says where the
window sits: `{"bytes": total size, "offset", "end", "next": URI of the next window or null}`.
Bytes that are not UTF-8 read as U+FFFD.

`resources/list` lists the session's variables (named by variable name) and files (by path), each
once, newest versions only; with no session configured (or sent), the list is empty.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any

import mcp.types as types

from toolout.client import AsyncToolOutClient
from toolout.mcp import DEFAULT_MAX_BYTES, OUTPUT_URI_PREFIX, SESSION_URI_PREFIX, output_uri

_SESSION_URI = re.compile(re.escape(SESSION_URI_PREFIX) + r"(?P<session>[^/?#]+)")
_LINES_URI = re.compile(re.escape(OUTPUT_URI_PREFIX) + r"(?P<handle>[^/?#]+)/lines/(?P<first>\d+)-(?P<last>\d+)")
MAX_LINES = 2000
"""The most lines one lines resource returns (Read's own limit)."""
_URI = re.compile(re.escape(OUTPUT_URI_PREFIX) + r"(?P<handle>[^/?#]+)(?:/bytes/(?P<offset>\d+))?")


class BadResourceURI(ValueError):
    """The URI names no toolout output (the server answers INVALID_PARAMS)."""


class BadCursor(ValueError):
    """A `resources/list` cursor this server did not hand out (the server answers INVALID_PARAMS)."""


RESOURCES_PER_PAGE = 100
"""A session can hold thousands of outputs; a client gets them a page at a time (`nextCursor`)."""


def page_of(
    resources: list[types.Resource], cursor: str | None, size: int = RESOURCES_PER_PAGE
) -> tuple[list[types.Resource], str | None]:
    """The page `cursor` points at (None: the first) and the cursor of the next one (None: this is the last).

    The cursor is the next page's offset in the listing, which is in storing order, so a page stays put
    while outputs are added; one removed meanwhile shifts the rest by one (MCP cursors promise no snapshot).
    """
    start = _offset(cursor)
    end = start + size
    return resources[start:end], str(end) if end < len(resources) else None


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise BadCursor(f"not a cursor of this server: {cursor!r}")
    return int(cursor)


def window_uri(handle: str, offset: int) -> str:
    return output_uri(handle) if offset == 0 else f"{output_uri(handle)}/bytes/{offset}"


def resource_templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            uri_template=f"{OUTPUT_URI_PREFIX}{{handle}}",
            name="toolout-output",
            title="A stored tool output",
            description="A stored output's text by its handle (the first window; `_meta.toolout.next` pages on).",
            mime_type="text/plain",
        ),
        types.ResourceTemplate(
            uri_template=f"{OUTPUT_URI_PREFIX}{{handle}}/bytes/{{offset}}",
            name="toolout-output-window",
            title="A stored tool output, from a byte offset",
            description="The next window of a stored output's text, from byte `offset`.",
            mime_type="text/plain",
        ),
        types.ResourceTemplate(
            uri_template=f"{OUTPUT_URI_PREFIX}{{handle}}/lines/{{first}}-{{last}}",
            name="toolout-output-lines",
            title="Lines of a stored tool output",
            description="Lines `first`-`last` of a stored output, numbered (the lines an answer cites).",
            mime_type="text/plain",
        ),
        types.ResourceTemplate(
            uri_template=f"{SESSION_URI_PREFIX}{{session_id}}",
            name="toolout-session",
            title="A session's stored outputs",
            description="The outputs of any session (its variables and files) as JSON: each one's URI, name and size.",
            mime_type="application/json",
        ),
    ]


@dataclass(frozen=True)
class Target:
    handle: str
    offset: int


def parse_uri(uri: str) -> Target:
    match = _URI.fullmatch(uri)
    if match is None:
        expected = f"{OUTPUT_URI_PREFIX}{{handle}} or {SESSION_URI_PREFIX}{{session_id}}"
        raise BadResourceURI(f"not a toolout resource URI: {uri!r} (expected {expected})")
    return Target(match["handle"], int(match["offset"] or 0))


async def list_outputs(client: AsyncToolOutClient, session_id: str | None) -> list[types.Resource]:
    """The session's variables and files as resources (nothing without a session)."""
    if not session_id:
        return []
    found = [_variable_resource(item) for item in await client.variables(session_id)]
    found += [_file_resource(item) for item in await client.files(session_id) if item.get("handle")]
    unique = {resource.uri: resource for resource in reversed(found)}
    return list(reversed(unique.values()))


def _variable_resource(item: dict[str, Any]) -> types.Resource:
    description = f"variable ${item['name']} from {item['tool']}: {item['tokens']:,} tokens. {item['preview']}"
    return _resource(item, item["name"], description)


def _file_resource(item: dict[str, Any]) -> types.Resource:
    return _resource(item, item["path"], f"session file {item['path']}")


def _resource(item: dict[str, Any], name: str, description: str) -> types.Resource:
    return types.Resource(
        uri=output_uri(item["handle"]),
        name=name,
        description=description,
        mime_type=item.get("content_type") or "text/plain",
        size=item["bytes"],
    )


async def read_resource(
    client: AsyncToolOutClient, uri: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> types.ReadResourceResult:
    """A session's listing or one window of a stored output's text (see the module docstring)."""
    session = _SESSION_URI.fullmatch(uri)
    if session is not None:
        return await read_session(client, uri, session["session"])
    lines = _LINES_URI.fullmatch(uri)
    if lines is not None:
        return await read_lines(client, uri, lines["handle"], int(lines["first"]), int(lines["last"]))
    return await read_output(client, parse_uri(uri), uri, max_bytes=max_bytes)


async def read_lines(
    client: AsyncToolOutClient, uri: str, handle: str, first: int, last: int
) -> types.ReadResourceResult:
    """Lines `first`-`last` of a stored output, numbered as the service's Read returns them."""
    if first < 1 or last < first:
        raise BadResourceURI(f"not a line range: {first}-{last} (lines are numbered from 1, first <= last)")
    text = await client.read(handle, offset=first, limit=min(last - first + 1, MAX_LINES))
    meta = {"toolout": {"first_line": first, "last_line": last}}
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text, meta=meta)]
    )


async def read_session(client: AsyncToolOutClient, uri: str, session_id: str) -> types.ReadResourceResult:
    listed = [
        item.model_dump(mode="json", by_alias=True, exclude_none=True)
        for item in await list_outputs(client, session_id)
    ]
    text = json.dumps({"session_id": session_id, "resources": listed}, ensure_ascii=False, indent=2)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="application/json", text=text)]
    )


async def read_output(
    client: AsyncToolOutClient, target: Target, uri: str, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> types.ReadResourceResult:
    """One window of a stored output's text, as a model may read it: its redacted view when it holds secrets."""
    meta = await client.output(target.handle)
    size = int((meta.get("redaction") or meta)["bytes"])
    if target.offset > size:
        raise BadResourceURI(f"offset {target.offset} is past the end of the {size}-byte output {target.handle}")
    length = min(max_bytes, size - target.offset)
    data = await client.content(target.handle, start=target.offset, length=length, redacted=True) if length else b""
    text, used = utf8_prefix(data, at_end=target.offset + len(data) >= size)
    end = target.offset + used
    window = {
        "bytes": size,
        "offset": target.offset,
        "end": end,
        "next": window_uri(target.handle, end) if end < size else None,
    }
    contents = types.TextResourceContents(
        uri=uri, mime_type=meta.get("content_type") or "text/plain", text=text, meta={"toolout": window}
    )
    return types.ReadResourceResult(contents=[contents])


def utf8_prefix(data: bytes, *, at_end: bool) -> tuple[str, int]:
    """`data` as text and how many of its bytes that used: a character cut at the end of a window that is
    not the output's end is left for the next window; invalid bytes become U+FFFD."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data, final=at_end)
    pending, _ = decoder.getstate()
    return text, len(data) - len(pending)
