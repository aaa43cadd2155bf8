"""Resolving a `$ref` path inside a JSON document as it streams: `$big.items[3].id` without loading `$big`.

The document is parsed with ijson (yajl2 in C) into events and walked one path step at a time, with
the path rules of `extraction.variables.paths` and the error constructors of
`extraction.variables.errors`, so a reference fails here with exactly the words it fails with in
memory. Only the value at the end of the path is built, and only up to `max_chars` characters of its
compact JSON (past that it is counted, not kept, so the error can say how big it is): memory stays
bounded by the limit, not by the document.

* Skipped values are consumed as events, never built; the walk stops as soon as the value is built
  (the rest of the document is not read), unless `complete=True` (content only sniffed as JSON must
  prove it is one document: `[2026-01-01] INFO` starts like an array) or the value is the whole document.
* A negative index (`[-1]`) needs the array's length first: the array is counted in one pass and
  the walk starts again with the index made positive (one extra pass per negative index).
* A document that does not parse raises `NotJSONDocument`; the caller decides (text, or `not_json`).
* yajl2 refuses integers beyond 64 bits, which Python's `json` accepts: such a document is walked
  again with ijson's pure-Python backend (slower, but the answer is the same as `json.loads`').
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Iterator
from typing import Any, Final

import ijson

from extraction.variables.errors import index_out_of_range, missing_key, not_a_container, value_too_large
from extraction.variables.paths import compact_json
from extraction.variables.refs import Ref, format_ref

Event = tuple[str, Any]
OpenBlocks = Callable[[], Iterator[bytes]]

STARTS: Final = frozenset({"start_map", "start_array"})
ENDS: Final = frozenset({"end_map", "end_array"})
_SCALAR_KIND: Final = {
    "string": "string",
    "integer": "number",
    "double": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}
_LISTED: Final = 50


class NotJSONDocument(Exception):
    """The content is not one JSON document (a parse error at `position`, or trailing data)."""


class _Overflow(NotJSONDocument):
    """yajl2 could not hold a number; the pure-Python backend can."""


class _Restart(Exception):
    """Internal: a negative index was made positive; walk again with `path`."""

    def __init__(self, path: tuple[str | int, ...]) -> None:
        self.path = path


class _BlockFile:
    """A read(n) file over an iterator of blocks (what ijson pulls from)."""

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self._blocks, self._buffer = blocks, memoryview(b"")

    def read(self, size: int = -1) -> bytes:
        while not self._buffer:
            block = next(self._blocks, None)
            if block is None:
                return b""
            self._buffer = memoryview(block)
        piece = self._buffer[:size] if size >= 0 else self._buffer
        self._buffer = self._buffer[len(piece) :]
        return bytes(piece)


_PYTHON_BACKEND: Final = ijson.get_backend("python")


def _events(blocks: Iterator[bytes], *, exact: bool = False) -> Generator[Event, None, None]:
    """ijson's basic events (`exact`: the pure-Python backend); parse errors become `NotJSONDocument`."""
    backend = _PYTHON_BACKEND if exact else ijson
    parser = backend.basic_parse(_BlockFile(blocks), use_float=True)
    try:
        yield from parser
    except ijson.JSONError as err:
        reason = str(err).splitlines()[0] if str(err) else "invalid JSON"
        raise (_Overflow if "integer overflow" in reason else NotJSONDocument)(reason) from None


def _next(events: Iterator[Event]) -> Event:
    event = next(events, None)
    if event is None:
        raise NotJSONDocument("the document ended early")
    return event


def lookup_json(
    open_blocks: OpenBlocks,
    ref: Ref,
    *,
    max_chars: int | None = None,
    handle: str | None = None,
    complete: bool = False,
) -> Any:
    """The value at `ref.path` in the JSON document `open_blocks()` streams (opened again per pass)."""
    path, exact = ref.path, False
    while True:
        try:
            return _walk(_events(open_blocks(), exact=exact), ref, path, max_chars, handle, complete)
        except _Restart as restart:
            path = restart.path
        except _Overflow:
            if exact:
                raise
            exact = True


def _walk(
    events: Generator[Event, None, None],
    ref: Ref,
    path: tuple[str | int, ...],
    limit: int | None,
    handle: str | None,
    complete: bool,
) -> Any:
    try:
        event = _next(events)
        for steps, key in enumerate(path):
            event = _step(events, event, key, Ref(ref.name, ref.path[:steps]), path, steps)
        value = _Builder(limit).build(events, event)
        if value.over:
            raise value_too_large(format_ref(ref), value.chars, limit or 0, handle)
        if not path and next(events, None) is not None:
            raise NotJSONDocument("more than one JSON value")
        if complete:
            for _ in events:  # the rest must parse, up to a clean end
                pass
        return value.value
    finally:
        events.close()


def _step(
    events: Iterator[Event], event: Event, key: str | int, at_ref: Ref, path: tuple[str | int, ...], steps: int
) -> Event:
    """From the value starting with `event`, go to its `key`; returns the first event of that value."""
    at = format_ref(at_ref)
    kind = event[0]
    if kind == "start_map":
        return _field(events, key, at)
    if kind == "start_array":
        if isinstance(key, str):
            raise not_a_container(at, key, "array", _count_items(events))
        if key < 0:
            length = _count_items(events)
            if key < -length:
                raise index_out_of_range(at, key, length)
            raise _Restart((*path[:steps], length + key, *path[steps + 1 :]))
        return _item(events, key, at)
    raise not_a_container(at, key, _SCALAR_KIND.get(kind, kind))


def _field(events: Iterator[Event], key: str | int, at: str) -> Event:
    wanted = key if isinstance(key, str) else str(key)
    shown: list[str] = []
    total = 0
    while True:
        kind, value = _next(events)
        if kind == "end_map":
            raise missing_key(at, key, itertools.chain(shown, itertools.repeat("", total - len(shown))))
        if value == wanted:
            return _next(events)
        total += 1
        if len(shown) < _LISTED:
            shown.append(value)
        _skip(events, _next(events))


def _item(events: Iterator[Event], index: int, at: str) -> Event:
    for position in itertools.count():
        event = _next(events)
        if event[0] == "end_array":
            raise index_out_of_range(at, index, position)
        if position == index:
            return event
        _skip(events, event)
    raise AssertionError("unreachable")


def _skip(events: Iterator[Event], event: Event) -> None:
    """Consume the rest of the value that starts with `event` (nothing more for a scalar)."""
    if event[0] not in STARTS:
        return
    depth = 1
    for kind, _ in events:
        if kind in STARTS:
            depth += 1
        elif kind in ENDS:
            depth -= 1
            if depth == 0:
                return
    raise NotJSONDocument("the document ended early")


def _count_items(events: Iterator[Event]) -> int:
    """Items of the array whose `start_array` was just read (consumes it)."""
    count = 0
    while (event := _next(events))[0] != "end_array":
        _skip(events, event)
        count += 1
    return count


class _Built:
    def __init__(self, value: Any, chars: int, over: bool) -> None:
        self.value, self.chars, self.over = value, chars, over


class _Builder:
    """Builds one value from events while counting its compact-JSON characters; stops keeping it past `limit`."""

    def __init__(self, limit: int | None) -> None:
        self.limit, self.chars, self.over = limit, 0, False

    def build(self, events: Iterator[Event], first: Event) -> _Built:
        if first[0] not in STARTS:
            return _Built(first[1], len(_text(first[1])), False)  # a scalar is checked by the resolver
        value = self._container(events, first[0])
        return _Built(value, self.chars, self.over)

    def _add(self, chars: int) -> None:
        self.chars += chars
        if self.limit is not None and self.chars > self.limit:
            self.over = True

    def _container(self, events: Iterator[Event], kind: str) -> Any:
        is_map = kind == "start_map"
        result: Any = {} if is_map else []
        self._add(2)
        count = 0
        key: str | None = None
        for event, value in events:
            if event in ENDS:
                return result
            if event == "map_key":
                key = value
                self._add(len(compact_json(value)) + 1 + (1 if count else 0))
                count += 1
                continue
            if not is_map:
                self._add(1 if count else 0)
                count += 1
            item = self._container(events, event) if event in STARTS else self._scalar(value)
            if not self.over:
                _put(result, key, item)
        raise NotJSONDocument("the document ended early")

    def _scalar(self, value: Any) -> Any:
        self._add(len(compact_json(value)))
        return value


def _put(result: Any, key: str | None, item: Any) -> None:
    if isinstance(result, dict):
        result[key] = item
    else:
        result.append(item)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else compact_json(value)
