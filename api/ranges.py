"""Single-range `Range: bytes=...` parsing for the content endpoint (RFC 9110 §14).

Only a syntactically valid single byte range changes the answer. Anything else (another unit,
several ranges, garbage) is ignored and the whole body is served, which the RFC allows and which
means a bad header can never become an error, let alone a 500. A valid range that starts past the
end is the one client mistake we report: 416.
"""

from __future__ import annotations

import re

from api.errors import RangeNotSatisfiable

_SINGLE_RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.ASCII)


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The requested span as `(start, end_exclusive)`, or None to serve everything.

    Raises `RangeNotSatisfiable` when the range is well-formed but selects no byte of `size`.
    """
    match = _SINGLE_RANGE.fullmatch(header.strip()) if header else None
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":
        return _suffix(int(last), size)
    start = int(first)
    if last != "" and int(last) < start:
        return None
    end = size if last == "" else min(int(last) + 1, size)
    if start >= size:
        raise _unsatisfiable(header, size)
    return start, end


def _suffix(length: int, size: int) -> tuple[int, int]:
    """`bytes=-n`: the last n bytes (all of them when n exceeds the size)."""
    if length == 0 or size == 0:
        raise _unsatisfiable(f"bytes=-{length}", size)
    return max(size - length, 0), size


def _unsatisfiable(header: str | None, size: int) -> RangeNotSatisfiable:
    return RangeNotSatisfiable(f"range {header!r} selects no byte of a {size}-byte output", range=header, size=size)
