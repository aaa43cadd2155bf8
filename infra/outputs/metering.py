"""Measuring content as it streams by: stats and token index, line index, characters, its head, and whether a
credential rule matched (`infra.privacy`); and what the head gives a record (its kind, its preview)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from extraction.documents.kinds import ContentKind, sniff_kind
from extraction.documents.lines import LineIndex, LineIndexBuilder, count_chars
from extraction.documents.stats import Measured, StatsCounter
from extraction.variables.prompts import preview, preview_from_head
from infra.outputs.content import HEAD_BYTES, head_text, json_candidate
from infra.outputs.tokenizers import store_counter
from infra.privacy.scanner import default_scanner
from infra.privacy.streaming import Detector


@dataclass(frozen=True)
class Known:
    """What is measured of a content: stats + token index, line index, characters, its first bytes."""

    measured: Measured
    lines: LineIndex
    chars: int | None = None
    head: bytes | None = None
    holds_secret: bool | None = None
    """Whether a credential rule matched (`infra.privacy`); None: not scanned, so it is looked for again."""


class Meter:
    """Measures content as it streams by: what ingest and appends both need, in one pass."""

    def __init__(self, encoding: str, *, scan: bool = True) -> None:
        self._stats = StatsCounter(encoding, count_batch=store_counter(encoding))
        self._lines = LineIndexBuilder()
        self._chars = 0
        self._head = bytearray()
        self._secrets = Detector(default_scanner()) if scan else None

    def feed(self, block: bytes) -> None:
        if self._secrets is not None:
            self._secrets.feed(block)
        self._stats.feed(block)
        self._lines.feed(block)
        self._chars += count_chars(block)
        if len(self._head) < HEAD_BYTES:
            self._head += block[: HEAD_BYTES - len(self._head)]

    def metered(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        for block in blocks:
            self.feed(block)
            yield block

    def finish(self) -> Known:
        found = None if self._secrets is None else self._secrets.found
        return Known(self._stats.finish(), self._lines.finish(), self._chars, bytes(self._head), found)


def kind_of(content_type: str, head: bytes | None, parts: int = 1) -> ContentKind:
    """The content's kind; appended content (`parts` > 1) is text, whatever it looks like."""
    return sniff_kind(content_type, head or b"") if parts == 1 else ContentKind.TEXT


def preview_of(head: bytes, size: int, content_type: str, *, parts: int = 1) -> str:
    """About 100 chars of the content for listings and the instructions (compact JSON when it is JSON).

    Appended content (`parts` > 1) is text, whatever it looks like (`infra.variable_values`).
    """
    text = head_text(head)
    maybe_json = parts == 1 and json_candidate(content_type, head)
    if size > len(head):
        return preview_from_head(text, is_json=maybe_json, more=True)
    if maybe_json:
        try:
            return preview(json.loads(head))
        except ValueError:
            pass
    return preview(text)
