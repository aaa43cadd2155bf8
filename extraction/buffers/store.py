"""What `buffer_ops` needs from storage, as a small Protocol, and an in-memory implementation.

Buffers are the session's named outputs (the same objects as variables, seen as text). The
server implements `BufferStore` over Redis records and blobs — `read_lines` with
`extraction.documents.lines.read_lines` and the stored `LineIndex`, `grep` with `extraction.documents.grep.grep_lines`
— so a read or a search means the same in memory and on the server. `MemoryBufferStore` does
exactly that over in-memory bytes; tests and an embedded mode use it.

Writing (routing, `export`) follows the write modes of docs/spec/directives.md §Write modes:
* `replace`: the new content replaces the old (`created_at` is kept, `updated_at` moves);
* `append`: `append_text(old, new)` — the new part starts on a new line (a `\\n` is inserted
  only when the old content does not already end with one); the content type stays when both
  parts have the same non-JSON type, otherwise it becomes `text/plain` (two JSON documents in a
  row are no longer one JSON value, so `$name.field` then refuses them as text);
* `new`: a fresh name (`fresh_name` / `fresh_file_path`: `name_2`, `name_3`, …).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from extraction.directives.file_paths import fresh_file_path, validate_file_path
from extraction.directives.specs import WriteMode
from extraction.documents.grep import GrepResult, grep_lines
from extraction.documents.line_matchers import LineMatcher
from extraction.documents.lines import ReadResult, build_line_index, read_lines
from extraction.errors import NotFound
from extraction.variables.errors import listing
from extraction.variables.names import fresh_name, validate_name

TEXT = "text/plain"
JSON = "application/json"


class UnknownBuffer(NotFound):
    """No buffer has that name; `details["available"]` lists those that exist."""

    code = "unknown_buffer"


def unknown_buffer(name: str, available: Sequence[str]) -> UnknownBuffer:
    """The error for a missing buffer, listing the ones there are (capped)."""
    shown, total = listing(sorted(available))
    more = f", … and {total - len(shown):,} more" if total > len(shown) else ""
    where = f"available buffers: {', '.join(shown)}{more}" if total else "there are no buffers yet"
    return UnknownBuffer(f'unknown buffer "{name}"; {where}', name=name, available=shown, available_count=total)


class BufferInfo(BaseModel):
    """Metadata of one buffer: sizes in characters (what the model reads), bytes and lines."""

    name: str
    chars: int = Field(ge=0)
    bytes: int = Field(ge=0)
    lines: int = Field(ge=0)
    content_type: str = TEXT
    source: str | None = Field(None, description='where it came from, e.g. "tool web_search", "input file:a.md"')
    handle: str | None = None
    created_at: dt.datetime
    updated_at: dt.datetime


class ExportResult(BaseModel):
    """What an export wrote: the final path (after `new` naming) and the characters written."""

    path: str
    chars: int
    write_mode: WriteMode


@runtime_checkable
class BufferStore(Protocol):
    """Storage access for `buffer_ops`; every method may assume the buffer exists (checked first)."""

    def buffers(self) -> Sequence[BufferInfo]: ...

    def info(self, name: str) -> BufferInfo | None: ...

    def read_chars(self, name: str, offset: int, length: int) -> str:
        """Characters [offset, offset + length) of the buffer (clipped at its end)."""
        ...

    def read_lines(self, name: str, start_line: int, count: int, *, max_line_chars: int) -> ReadResult:
        """Lines start_line … start_line + count - 1, as `extraction.documents.lines.read_lines` returns them."""
        ...

    def grep(
        self, name: str, matcher: LineMatcher, *, context: int, max_matches: int, max_line_chars: int
    ) -> GrepResult:
        """Matching lines with `context` lines around each, as `extraction.documents.grep.grep_lines` returns them."""
        ...

    def export(self, name: str, path: str, write_mode: WriteMode) -> ExportResult:
        """Write the buffer to the session file `path` (already validated and expanded)."""
        ...


def append_separator(old_tail: str) -> str:
    """What goes between the old content and an appended part: `\n`, unless the old content is empty or
    already ends with one. Only the end of the old content matters, so a server passes its last character."""
    return "" if not old_tail or old_tail.endswith("\n") else "\n"


def append_text(old: str, new: str) -> str:
    """How an appended part joins: on a new line (see the module docstring)."""
    return old + append_separator(old) + new


def appended_content_type(old: str, new: str) -> str:
    """The content type after appending a part of type `new` to content of type `old`."""
    return old if old == new and old != JSON else TEXT


class _Entry:
    def __init__(self, text: str, info: BufferInfo) -> None:
        self.text, self.info = text, info
        self.data = text.encode("utf-8")


class _MemoryReader:
    """A `BlobReader` over one entry's bytes (what lines/grep read from)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def size(self, key: str) -> int:
        return len(self.data)

    def read_range(self, key: str, start: int, end: int) -> bytes:
        return self.data[start : max(start, end)]

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int = 8 << 20
    ) -> Iterator[bytes]:
        stop = len(self.data) if end is None else min(end, len(self.data))
        for pos in range(start, stop, block_size):
            yield self.data[pos : min(stop, pos + block_size)]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class MemoryBufferStore:
    """Buffers and session files in memory; `write` applies the routing write modes."""

    def __init__(self, clock: Callable[[], dt.datetime] = _utc_now) -> None:
        self.clock = clock
        self._buffers: dict[str, _Entry] = {}
        self.files: dict[str, str] = {}

    def write(
        self,
        name: str,
        text: str,
        *,
        mode: WriteMode = WriteMode.REPLACE,
        content_type: str = TEXT,
        source: str | None = None,
        handle: str | None = None,
    ) -> BufferInfo:
        """Store `text` under `name` with a write mode; returns the info (its name may be fresh, for `new`)."""
        validate_name(name, what="buffer name")
        old = self._buffers.get(name)
        if mode is WriteMode.NEW:
            name, old = fresh_name(name, self._buffers), None
        now = self.clock()
        if old is not None and mode is WriteMode.APPEND:
            text = append_text(old.text, text)
            content_type = appended_content_type(old.info.content_type, content_type)
        created = old.info.created_at if old is not None else now
        entry = _Entry(text, self._info(name, text, content_type, source, handle, created, now))
        self._buffers[name] = entry
        return entry.info

    @staticmethod
    def _info(
        name: str,
        text: str,
        content_type: str,
        source: str | None,
        handle: str | None,
        created: dt.datetime,
        now: dt.datetime,
    ) -> BufferInfo:
        data = text.encode("utf-8")
        return BufferInfo(
            name=name,
            chars=len(text),
            bytes=len(data),
            lines=build_line_index([data]).lines,
            content_type=content_type,
            source=source,
            handle=handle,
            created_at=created,
            updated_at=now,
        )

    def text(self, name: str) -> str:
        """The whole content (tests and embedded callers; `buffer_ops` reads through ranges)."""
        return self._entry(name).text

    def _entry(self, name: str) -> _Entry:
        entry = self._buffers.get(name)
        if entry is None:
            raise unknown_buffer(name, list(self._buffers))
        return entry

    def buffers(self) -> Sequence[BufferInfo]:
        return [entry.info for entry in self._buffers.values()]

    def info(self, name: str) -> BufferInfo | None:
        entry = self._buffers.get(name)
        return entry.info if entry else None

    def read_chars(self, name: str, offset: int, length: int) -> str:
        return self._entry(name).text[offset : offset + length]

    def read_lines(self, name: str, start_line: int, count: int, *, max_line_chars: int) -> ReadResult:
        entry = self._entry(name)
        index = build_line_index([entry.data])
        reader = _MemoryReader(entry.data)
        return read_lines(reader, name, index, offset=start_line, limit=count, max_line_chars=max_line_chars)

    def grep(
        self, name: str, matcher: LineMatcher, *, context: int, max_matches: int, max_line_chars: int
    ) -> GrepResult:
        reader = _MemoryReader(self._entry(name).data)
        return grep_lines(
            reader, name, matcher, before=context, after=context, max_matches=max_matches, max_line_chars=max_line_chars
        )

    def export(self, name: str, path: str, write_mode: WriteMode) -> ExportResult:
        text = self._entry(name).text
        validate_file_path(path)
        if write_mode is WriteMode.NEW:
            path = fresh_file_path(path, self.files)
        if write_mode is WriteMode.APPEND:
            self.files[path] = append_text(self.files.get(path, ""), text)
        else:
            self.files[path] = text
        return ExportResult(path=path, chars=len(text), write_mode=write_mode)
