"""What part of a document a map-reduce answer does not cover, and when that is too much.

A full-chunked job degrades instead of sinking: a chunk whose map call still fails after its retry,
or a reduce group that does, is recorded as a `FailedRange` and the reduce runs over the rest. The
answer then opens with one WARNING line naming the byte ranges it does not cover. Only when more
than `max_fraction` of the chunks are lost (or none is left) does the job give up on the strategy.

Chunks lost in a failed reduce group count like failed chunks: what matters to the reader is how
much of the document the answer covers, not at which step it was lost.
"""

from __future__ import annotations

import math
from itertools import groupby

from pydantic import BaseModel, Field

REASON_CHARS = 80
"""A reason shown in the WARNING is clipped to this many characters (the job record keeps it whole)."""
MAX_LISTED = 6
"""Ranges listed in the WARNING; more are summarised as "and N more"."""


class FailedRange(BaseModel):
    """One part of a job that could not be read: a chunk's map call (level 0) or a reduce group (level n ≥ 1)."""

    level: int = Field(ge=0, description="0: the map call over one chunk; n >= 1: a reduce group of level n")
    index: int = Field(ge=0, description="the chunk's index (level 0) or the group's, 0-based")
    chunks: list[int] = Field(min_length=1, description="0-based indices of the chunks the answer does not cover")
    start: int = Field(ge=0, description="first byte of the range those chunks span")
    end: int = Field(ge=0, description="end of that range (exclusive)")
    reason: str = Field(description="why the call failed after its retry")


def chunks_lost(failed: list[FailedRange]) -> int:
    """Chunks the answer does not cover (failed parts never share a chunk: a failed one is no one's input)."""
    return sum(len(part.chunks) for part in failed)


def allowed_losses(total: int, max_fraction: float) -> int:
    """How many of `total` chunks may be lost: `max_fraction` of them, rounded down (exact for 0.25 of 20: 5)."""
    return math.floor(max_fraction * total + 1e-9)


def over_limit(lost: int, total: int, max_fraction: float) -> bool:
    """True when too much is lost to answer at all: more than `max_fraction` of the chunks, or every one."""
    return total > 0 and (lost >= total or lost > allowed_losses(total, max_fraction))


def limit_reason(failed: list[FailedRange], total: int, max_fraction: float) -> str:
    """The fallback reason when `over_limit`: how many chunks, the limit, and the first failure's reason."""
    first = min(failed, key=_position)
    return (
        f"{chunks_lost(failed)} of {total} chunks could not be read, more than max_failed_chunk_fraction="
        f"{max_fraction:g} allows (first: {_label(first)}: {headline(first.reason)})"
    )


def coverage_warning(failed: list[FailedRange], total: int) -> str | None:
    """The line that opens a partial answer, or None when every chunk was read.

    `WARNING: 1 of 57 chunks could not be read (bytes 7,340,032-7,471,103: <reason>); the answer
    below does not cover it.` Chunks that failed for the same reason with touching ranges are
    merged into one range, neighbouring ranges with one reason share it, a failed reduce group
    names the chunks it held, and past `MAX_LISTED` ranges the rest are only counted.
    """
    if not failed:
        return None
    ranges = _ranges(sorted(failed, key=_position))
    listed = "; ".join(
        f"bytes {' and '.join(label for label, _ in run)}: {reason}"
        for reason, run in groupby(ranges[:MAX_LISTED], key=lambda item: item[1])
    )
    more = f"; and {len(ranges) - MAX_LISTED} more" if len(ranges) > MAX_LISTED else ""
    lost = chunks_lost(failed)
    noun = "chunk" if total == 1 else "chunks"
    return (
        f"WARNING: {lost} of {total} {noun} could not be read ({listed}{more}); "
        f"the answer below does not cover {'it' if lost == 1 else 'them'}."
    )


def headline(reason: str) -> str:
    """A reason's summary: our error messages say what failed before the first colon, details after it."""
    summary = reason.split(": ", 1)[0].strip() or reason.strip()
    return summary if len(summary) <= REASON_CHARS else summary[: REASON_CHARS - 3].rstrip() + "..."


def _position(part: FailedRange) -> tuple[int, int, int, int]:
    return (part.start, part.end, part.level, part.index)


def _ranges(failed: list[FailedRange]) -> list[tuple[str, str]]:
    """(range, reason) to show: touching chunks failing alike as one range, each group on its own."""
    ranges: list[tuple[str, str]] = []
    for (level, reason), run in groupby(failed, key=lambda part: (part.level, headline(part.reason))):
        parts = list(run)
        if level == 0:
            ranges.extend((_span(start, end), reason) for start, end in _merged(parts))
        else:
            ranges.extend((_label(part).removeprefix("bytes "), reason) for part in parts)
    return ranges


def _merged(parts: list[FailedRange]) -> list[tuple[int, int]]:
    """Overlapping or touching byte ranges as one (neighbouring chunks overlap)."""
    spans: list[tuple[int, int]] = []
    for part in parts:
        if spans and part.start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], part.end))
        else:
            spans.append((part.start, part.end))
    return spans


def _label(part: FailedRange) -> str:
    if part.level == 0:
        return f"chunk {part.index + 1}, bytes {_span(part.start, part.end)}"
    first, last = min(part.chunks) + 1, max(part.chunks) + 1
    held = f"chunk {first}" if first == last else f"chunks {first}-{last}"
    return f"bytes {_span(part.start, part.end)} ({held}, reduce group {part.index + 1} of level {part.level})"


def _span(start: int, end: int) -> str:
    """A byte range as people read it: first and last byte, with thousands separators."""
    return f"{start:,}-{max(start, end - 1):,}"
