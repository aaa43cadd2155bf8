"""Whether a quote is on the lines it names: as written, normalised, or a few lines away.

What may differ (and nothing else):
- whitespace: any run of spaces, tabs and newlines equals one space, and leading/trailing space is ignored;
- case: compared case-folded (`str.casefold`), after Unicode NFKC (so a full-width digit equals a digit);
- elisions: a quote may start or end with `…`/`...`, or with the markers Read puts on a clipped line;
  they stand for text left out, so the rest must still be found;
- wrapping: a quote put in double quotes or backticks is also tried without them.
A quote is re-anchored when it is found within `REANCHOR_LINES` lines of where it was cited, the same
number of lines long; the item then says how far it moved. A quote is never matched anywhere else.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from extraction.evidence.model import Match
from extraction.evidence.window import Window

REANCHOR_LINES = 5
MIN_QUOTE_CHARS = 2
"""A quote shorter than this (not counting spaces) would be found almost anywhere: it proves nothing."""

_LEADING = re.compile(r"^(?:\s|…|\.\.\.|\[line clipped: \d+ chars before\])+")
_TRAILING = re.compile(r"(?:\s|…|\.\.\.|\[line clipped: \d+ more chars\])+$")
_WRAPPERS = ('"', "`", "'", "\u201c\u201d")


@dataclass(frozen=True)
class Found:
    """Where a quote was found: lines `start` … `end`, how, and how far from where it was cited."""

    start: int
    end: int
    match: Match
    shift: int = 0


def normalise(text: str) -> str:
    """The comparison form: NFKC, case-folded, whitespace runs as one space."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def quote_forms(quote: str) -> list[str]:
    """The quote without its elisions, and without a wrapping pair of quotes or backticks if it has one."""
    core = _TRAILING.sub("", _LEADING.sub("", quote))
    forms = [core]
    for pair in _WRAPPERS:
        opening, closing = pair[0], pair[-1]
        if len(core) > 2 and core.startswith(opening) and core.endswith(closing):
            forms.append(core[1:-1].strip())
    return [form for form in forms if len("".join(form.split())) >= MIN_QUOTE_CHARS]


def shifts(bound: int) -> list[int]:
    """0, -1, 1, -2, 2, … ±bound: the nearest place is tried first."""
    return [0, *(sign * step for step in range(1, bound + 1) for sign in (-1, 1))]


def find_quote(forms: list[str], window: Window, start: int, end: int, bound: int = REANCHOR_LINES) -> list[Found]:
    """Every place within `bound` lines of `start`-`end` holding the quote, nearest first."""
    exact_forms, normal_forms = forms, [normalise(form) for form in forms]
    found = []
    for shift in shifts(bound):
        lo, hi = start + shift, end + shift
        if not window.holds(lo, hi):
            continue
        text = window.text(lo, hi)
        if any(form in text for form in exact_forms):
            found.append(Found(lo, hi, Match.EXACT if shift == 0 else Match.REANCHORED, shift))
        elif any(form in normalise(text) for form in normal_forms):
            found.append(Found(lo, hi, Match.NORMALISED if shift == 0 else Match.REANCHORED, shift))
    return found
