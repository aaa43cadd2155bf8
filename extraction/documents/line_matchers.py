"""What grep matches with: the `LineMatcher` protocol, the literal matcher, and the block scans that
find candidate lines fast (`bytes.find` over a whole block instead of a Python loop per line).

Separate from `extraction.documents.grep` (the streaming over a blob, numbering and context) because the
regex matcher in `infra.outputs.grep_engine` (RE2) and buffer_ops' grep use these scans without the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from extraction.documents.lines import NL, decode, nth_newline
from extraction.errors import InvalidInput


@runtime_checkable
class LineMatcher(Protocol):
    """Decides whether one line (decoded, without its line ending) matches.

    Optional extras grep uses when present:
    * ``span(line) -> tuple[int, int] | None`` — where the first match is, to clip long lines around it;
    * ``candidate_offsets(block: bytes, start: int, end: int) -> Iterator[int]`` — increasing byte
      offsets in ``block[start:end]`` (whole lines, the last maybe without `\\n`) such that every
      matching line contains one; extra offsets in non-matching lines are allowed (they are
      re-checked with `search`). This is the fast path.
    """

    pattern: str

    def search(self, line: str) -> bool: ...


def iter_line_hits(block: bytes, start: int, end: int, find: Callable[[int], int]) -> Iterator[int]:
    """Hits of `find(pos)` (next hit at or after pos, -1 if none), at most one per line."""
    pos = start
    while (hit := find(pos)) >= 0 and hit <= end:
        yield hit
        nl = block.find(NL, hit, end)
        if nl < 0:
            return
        pos = nl + 1


def iter_view_hits(raw: bytes, start: int, end: int, view: str | bytes, find: Callable[[int], int]) -> Iterator[int]:
    """Hits found in `view` — a transformed copy of `raw[start:end]` with the same lines
    (decoded, casefolded, CRLF-normalised) — mapped back to raw line-start offsets.
    """
    nl: Any = "\n" if isinstance(view, str) else NL  # the view's own newline: str for str, bytes for bytes
    vpos, rpos = 0, start
    while (hit := find(vpos)) >= 0:
        lines = view.count(nl, vpos, hit)
        if lines:
            at = nth_newline(raw, lines, rpos, end)
            if at < 0:
                return
            rpos = at + 1
        yield rpos
        vnext, rnext = view.find(nl, hit), raw.find(NL, rpos, end)
        if vnext < 0 or rnext < 0:
            return
        vpos, rpos = vnext + 1, rnext + 1


def every_line(block: bytes, start: int, end: int) -> Iterator[int]:
    """The slow path for matchers without `candidate_offsets`: every line start."""
    pos = start
    while pos < end:
        yield pos
        nl = block.find(NL, pos, end)
        if nl < 0:
            return
        pos = nl + 1


class LiteralMatcher:
    """Plain substring search; `ignore_case` compares `str.casefold()`ed text (so "STRASSE" finds "straße")."""

    def __init__(self, text: str, ignore_case: bool = False) -> None:
        check_pattern(text)
        self.pattern, self.ignore_case = text, ignore_case
        self._folded = text.casefold() if ignore_case else text
        self._needle = text.encode("utf-8")
        self._ascii_lower = text.lower().encode("ascii") if text.isascii() else None
        self._raw_ok = "\ufffd" not in text  # U+FFFD in a line may stand for an invalid byte

    def search(self, line: str) -> bool:
        return self._folded in (line.casefold() if self.ignore_case else line)

    def span(self, line: str) -> tuple[int, int] | None:
        """First match in `line`; positions are approximate when casefolding changed the length."""
        hay = line.casefold() if self.ignore_case else line
        at = hay.find(self._folded)
        if at < 0:
            return None
        scale = len(line) / len(hay) if hay else 1.0
        return int(at * scale), int((at + len(self._folded)) * scale)

    def candidate_offsets(self, block: bytes, start: int, end: int) -> Iterator[int]:
        """Raw `bytes.find` when exact; lowercase ASCII blocks; else a decoded (casefolded) view."""
        if not self.ignore_case and self._raw_ok:
            return iter_line_hits(block, start, end, lambda p: block.find(self._needle, p, end))
        ascii_lower = self._ascii_lower
        part = block[start:end]  # only this range: grep may scan one block in slices
        if self.ignore_case and ascii_lower is not None and part.isascii():
            lowered = part.lower()
            return iter_line_hits(block, start, end, lambda p: _shifted(lowered.find(ascii_lower, p - start), start))
        view = decode(block[start:end])
        view = view.casefold() if self.ignore_case else view
        return iter_view_hits(block, start, end, view, lambda p: view.find(self._folded, p))


def _shifted(found: int, start: int) -> int:
    return found + start if found >= 0 else -1


def check_pattern(pattern: str) -> None:
    """Refuse patterns that can never be meant: empty ones, and line breaks (grep is per line)."""
    if not pattern:
        raise InvalidInput("the grep pattern is empty; give the text (or regex) to search for", pattern=pattern)
    if "\n" in pattern:
        raise InvalidInput(
            "grep matches within single lines, so the pattern cannot contain a line break", pattern=pattern
        )
