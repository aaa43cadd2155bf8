"""Resolving `$ref`s in streamed text (docs/spec/variables.md §Streaming): chunks in, resolved text out.

A reference may be split across chunks (`$weather_` + `nyc`, `$x.` + `field`), so each `feed`
holds back exactly the undecided suffix that `extraction.variables.refs.find_refs(final=False)`
reports — a `$…` run that more text could still extend, never more — and resolves the rest with
the same `ReferenceResolver.render` that `extraction.variables.resolve.interpolate` uses. So for any
text and any chunking, the concatenated output equals `interpolate(text, source, strict=…)`;
a property test holds this. The hold is bounded by `MAX_REF_CHARS` (longer runs are not refs).

Streams default to `strict=False`: a stream cannot fail half-way, so a known variable with a
bad path is left as written and reported in `warnings` (like unknown variables always are).
With `strict=True`, `feed` raises the first such error; the stream is then unusable.

Non-text items (tool calls, events) pass through unchanged and in order. They end a text run:
the held suffix is flushed before them, and the text after them starts a new run (a `$ref`
cannot span a non-text item, since the text around it is not contiguous).

Sync and async twins: the decision what an item lets out is `push`/`end`, written once; the sync
and async iterators are three-line loops around it (a shared helper, not generated code: a
generator would copy ten lines to save four, and the toolkit's plan-based resolver reuses `push` too).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TypeVar

from extraction.variables.refs import find_refs
from extraction.variables.resolve import ReferenceResolver, ResolveWarning, VariableSource

Item = TypeVar("Item")


class VariableStream:
    """Push-style incremental resolver: `feed(chunk) -> str`, then `finish() -> str`."""

    def __init__(self, source: VariableSource, *, strict: bool = False, max_value_chars: int | None = None) -> None:
        self._resolver = ReferenceResolver(source, strict=strict, max_value_chars=max_value_chars)
        self._pending = ""
        self._before = ""  # the input character just before `_pending` (decides if its `$` may start a ref)

    @property
    def warnings(self) -> list[ResolveWarning]:
        """References left as written so far (unknown variables; bad paths when not strict)."""
        return self._resolver.warnings

    @property
    def pending(self) -> str:
        """The text held back, waiting to see whether it completes a reference."""
        return self._pending

    def feed(self, chunk: str) -> str:
        """Resolve what `chunk` decides; hold back only a suffix that could still grow into a reference."""
        text = self._pending + chunk
        spans, hold = find_refs(text, final=False, before=self._before)
        if hold:
            self._before = text[hold - 1]
        self._pending = text[hold:]
        return self._resolver.render(text[:hold], spans)

    def finish(self) -> str:
        """End of the text run: resolve and return what was held back; the stream can start a new run."""
        text, self._pending = self._pending, ""
        spans, _ = find_refs(text, final=True, before=self._before)
        self._before = ""
        return self._resolver.render(text, spans)

    def push(self, item: str | Item) -> list[str | Item]:
        """What one stream item lets out: its resolved text, or the held text then the non-text item.

        The one place the streaming decision lives: `resolve_iter`, `aresolve_iter` and the
        toolkit's plan-based `StreamResolver` only differ in how they wait for the next item.
        """
        if isinstance(item, str):
            text = self.feed(item)
            return [text] if text else []
        return [*self.end(), item]

    def end(self) -> list[str]:
        """`finish()` as a list of outputs (none for an empty tail)."""
        tail = self.finish()
        return [tail] if tail else []

    def resolve_iter(self, items: Iterable[str | Item]) -> Iterator[str | Item]:
        """Resolved text (non-empty pieces) and non-text items, in order."""
        for item in items:
            yield from self.push(item)
        yield from self.end()

    async def aresolve_iter(self, items: AsyncIterable[str | Item]) -> AsyncIterator[str | Item]:
        """`resolve_iter` for async streams (lookups stay synchronous: wrap a blocking source yourself)."""
        async for item in items:
            for out in self.push(item):
                yield out
        for tail in self.end():
            yield tail


def resolve_stream(
    items: Iterable[str | Item], source: VariableSource, *, strict: bool = False, max_value_chars: int | None = None
) -> Iterator[str | Item]:
    """Resolve a sync stream of text chunks and other items (a `VariableStream` keeps the warnings)."""
    return VariableStream(source, strict=strict, max_value_chars=max_value_chars).resolve_iter(items)


def aresolve_stream(
    items: AsyncIterable[str | Item],
    source: VariableSource,
    *,
    strict: bool = False,
    max_value_chars: int | None = None,
) -> AsyncIterator[str | Item]:
    """Resolve an async stream of text chunks and other items."""
    return VariableStream(source, strict=strict, max_value_chars=max_value_chars).aresolve_iter(items)
