"""The verifier: each citation checked against the stored lines it names, with no model.

A citation is verified when its quote is on the lines it names (or within the re-anchoring bound of
them, `matching`) and those lines are ones its source could have seen: a map answer cites its own
chunk, a sub-agent the lines its Read and Grep calls returned. A quote found only outside what its
source saw is not verified: the model did not read it there. Every citation becomes an item, checked
or not: none is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from extraction.evidence.citations import Citation, Range
from extraction.evidence.matching import REANCHOR_LINES, Found, find_quote, quote_forms
from extraction.evidence.model import EvidenceItem, Match
from extraction.evidence.window import Window

WindowReader = Callable[[int, int], Window]
"""Reads lines `first` … `last` of the output (clamped to it)."""


def verify_all(
    citations: Iterable[Citation], read: WindowReader, total_lines: int, *, bound: int = REANCHOR_LINES
) -> list[EvidenceItem]:
    """One item per citation, in order."""
    return [verify(citation, read, total_lines, bound=bound) for citation in citations]


def verify(citation: Citation, read: WindowReader, total_lines: int, *, bound: int = REANCHOR_LINES) -> EvidenceItem:
    """The citation as an item: verified, or not with the reason."""
    item = _unverified(citation, "")
    forms = quote_forms(citation.quote)
    if not forms:
        return _unverified(citation, "the quote is empty or too short to check")
    if citation.start_line < 1 or citation.start_line > total_lines:
        return _unverified(citation, f"line {citation.start_line} is not in the output ({total_lines} lines)")
    window = read(citation.start_line - bound, citation.end_line + bound)
    if not window.holds(citation.start_line, min(citation.end_line, total_lines)):
        return _unverified(citation, f"lines {_lines(citation)} are too long to check within the read bound")
    places = find_quote(forms, window, citation.start_line, citation.end_line, bound)
    seen = [place for place in places if _seen(place, citation.allowed)]
    if seen:
        return _verified(item, seen[0], window)
    if places:
        return _unverified(citation, _unseen_reason(citation, places[0]))
    return _unverified(citation, f"the quoted text is not on lines {_lines(citation)} nor within {bound} lines of them")


def _verified(item: EvidenceItem, place: Found, window: Window) -> EvidenceItem:
    start_byte, end_byte = window.byte_span(place.start, place.end)
    return item.model_copy(
        update={
            "start_line": place.start,
            "end_line": place.end,
            "start_byte": start_byte,
            "end_byte": end_byte,
            "verified": True,
            "match": place.match,
            "shift": place.shift,
            "why": None,
        }
    )


def _unverified(citation: Citation, why: str) -> EvidenceItem:
    return EvidenceItem(
        start_line=citation.start_line,
        end_line=citation.end_line,
        quote=citation.quote,
        source=citation.source,
        chunk=citation.chunk,
        verified=False,
        match=Match.NONE,
        why=why or None,
    )


def _seen(place: Found, allowed: list[Range] | None) -> bool:
    return allowed is None or any(lo <= place.start and place.end <= hi for lo, hi in allowed)


def _unseen_reason(citation: Citation, place: Found) -> str:
    """The quote is there, but its source never showed those lines."""
    shown = ", ".join(f"{lo}-{hi}" for lo, hi in citation.allowed or [])
    whose = f"chunk {citation.chunk}" if citation.chunk is not None else f"its {citation.source.value}"
    crosses = any(lo <= place.end and place.start <= hi for lo, hi in citation.allowed or [])
    where = "crosses the edge of" if crosses else "lies outside"
    return f"the quote is on lines {place.start}-{place.end}, which {where} what {whose} showed (lines {shown})"


def _lines(citation: Citation) -> str:
    start, end = citation.start_line, citation.end_line
    return str(start) if start == end else f"{start}-{end}"
