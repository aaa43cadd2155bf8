"""Which lines a sub-agent saw: the numbered lines its Read and Grep calls returned.

A sub-agent may only cite what a tool showed it; a quote of a line no call returned is a line it
never read there, whatever the output holds, so the verifier checks citations against these ranges.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from extraction.evidence.citations import Range

_NUMBERED = re.compile(r"^ *(\d{1,12})[:\-]?\t", re.MULTILINE)


def seen_lines(result: str) -> list[int]:
    """The line numbers a Read or Grep result shows (Read's `{n:>6}\\t`, Grep's hit and context marks)."""
    return [int(match.group(1)) for match in _NUMBERED.finditer(result)]


def as_ranges(numbers: Iterable[int]) -> list[Range]:
    """Sorted numbers as runs of consecutive lines."""
    ranges: list[Range] = []
    for number in sorted(set(numbers)):
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], number)
        else:
            ranges.append((number, number))
    return ranges


def inside(start: int, end: int, ranges: Iterable[Range]) -> bool:
    return any(lo <= start and end <= hi for lo, hi in ranges)


def join_runs(ranges: Iterable[Range], gap: int) -> list[Range]:
    """Ranges sorted and merged where they overlap or lie at most `gap` lines apart."""
    joined: list[Range] = []
    for lo, hi in sorted(ranges):
        if joined and lo <= joined[-1][1] + gap + 1:
            joined[-1] = (joined[-1][0], max(joined[-1][1], hi))
        else:
            joined.append((lo, hi))
    return joined
