"""How evidence reads in plain text: one compact sources line, and a warning when a quote did not check out."""

from __future__ import annotations

from collections.abc import Sequence

from extraction.evidence.model import QUOTELESS, EvidenceItem, SourceKind, UnreadRange

MAX_LISTED = 12
"""Ranges named on the sources line; the rest are counted, so the line stays one line."""


def sources_line(items: Sequence[EvidenceItem], unread: Sequence[UnreadRange] = ()) -> str | None:
    """`SOURCES: L12, L40-42, query 2 (3 of 3 quotes verified)`; None when there is nothing to show."""
    if not items and not unread:
        return None
    queries = iter(range(1, len(items) + 1))
    places = [_place(next(queries) if item.source is SourceKind.QUERY else 0, item) for item in items]
    shown = ", ".join(places[:MAX_LISTED]) + (f", +{len(places) - MAX_LISTED} more" if len(places) > MAX_LISTED else "")
    quotes = quoted(items)
    notes = [f"{sum(item.verified for item in quotes)} of {len(quotes)} quotes verified"] if quotes else []
    notes += [f"not read: {', '.join(f'L{r.start_line}-L{r.end_line}' for r in unread)}"] if unread else []
    return f"SOURCES: {shown or 'none'}" + (f" ({'; '.join(notes)})" if notes else "")


def unverified_warning(items: Sequence[EvidenceItem]) -> str | None:
    """The WARNING an answer opens with when any of its quotes is not on the lines it names."""
    failed = [item for item in quoted(items) if not item.verified]
    if not failed:
        return None
    named = "; ".join(f"L{item.start_line}-L{item.end_line}: {item.why}" for item in failed[:3])
    more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
    return f"WARNING: {len(failed)} quote(s) in this answer could not be verified against the output ({named}{more})."


def quoted(items: Sequence[EvidenceItem]) -> list[EvidenceItem]:
    """The items that carry a quote to check."""
    return [item for item in items if item.source not in QUOTELESS]


def all_verified(items: Sequence[EvidenceItem]) -> bool:
    """Whether every quote of an answer checked out (an answer with no quote has nothing unverified)."""
    return all(item.verified for item in quoted(items))


def _place(number: int, item: EvidenceItem) -> str:
    if item.source is SourceKind.QUERY:
        return f"query {number}"
    lines = f"L{item.start_line}" if item.start_line == item.end_line else f"L{item.start_line}-L{item.end_line}"
    return lines if item.verified else f"{lines}?"
