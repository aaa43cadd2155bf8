"""How a model cites: one line per quote, `[L12] text copied from line 12` or `[L40-42] text from 40 to 42`.

The form lives inside the final-report wrapper as plain text, so the lenient report parser takes it
as it takes any answer; a citation may be bulleted (`- [L12] …`) and may put a colon after the
bracket. Chunks are shown numbered as Read numbers lines (without its padding), with document-wide line numbers, so
the number a model copies is the number of the stored line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

from extraction.documents.tokens import count_tokens
from extraction.evidence.model import SourceKind

_CITATION = re.compile(
    r"^[ \t]*(?:[-*\u2022][ \t]*)?\[L(?P<start>\d{1,9})(?:[ \t]*[-\u2013][ \t]*L?(?P<end>\d{1,9}))?\][ \t]*:?[ \t]?"
    r"(?P<quote>.*?)[ \t]*$",
    re.MULTILINE,
)

CITE_INSTRUCTION = (
    "Cite what you use: after each fact (or at the end, after a line SOURCES), one line per quote: the "
    "line number in brackets, then text copied exactly from that line, e.g. `[L12] text of line 12`, or "
    "`[L40-L42] text` for text across lines 40-42. Line numbers are the numbers shown before each line."
)
REDUCE_CITE_INSTRUCTION = "Keep the chunk outputs' citation lines (`[L12] ...`) of every fact you keep, unchanged."

NUMBER_TOKENS = 5
"""The most a line's number (`{n}\\t`, as chunks are shown) takes in o200k: digits, the tab, and the
merge it breaks with the line's first characters (dearest on lines that start with a date)."""

Range = tuple[int, int]
CR = "\r"


class Citation(BaseModel):
    """A quote a model wrote and the lines it names; `allowed` are the lines it could have seen (None: any)."""

    start_line: int
    end_line: int
    quote: str
    source: SourceKind = SourceKind.ANSWER
    chunk: int | None = None
    allowed: list[Range] | None = None


def parse_citations(
    text: str, *, source: SourceKind = SourceKind.ANSWER, chunk: int | None = None, allowed: list[Range] | None = None
) -> list[Citation]:
    """Every citation line of an answer, in order (a reversed range `[L42-40]` is read as 40-42)."""
    found = []
    for match in _CITATION.finditer(text):
        start = int(match.group("start"))
        end = int(match.group("end") or start)
        found.append(
            Citation(
                start_line=min(start, end),
                end_line=max(start, end),
                quote=match.group("quote"),
                source=source,
                chunk=chunk,
                allowed=allowed,
            )
        )
    return found


def number_lines(text: str, first_line: int) -> str:
    """`text` numbered as Read numbers it, a line's number and a tab before it, without Read's padding
    (`{n}\\t{line}`): the padding is paid on every line of every chunk and tells the model nothing more."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "\n".join(f"{first_line + i}\t{line.removesuffix(CR)}" for i, line in enumerate(lines))


def numbering_cost(sample: str, first_line: int, encoding: str) -> float:
    """Tokens one line's number adds on text like `sample` (numbered from `first_line`: digits count).

    What a number costs depends on the line it is put before (a tab then a date merges differently
    than a tab then a word), so the estimate measures it on the document's own head.
    """
    lines = sample.count("\n") + (not sample.endswith("\n"))
    if not sample or not lines:
        return float(NUMBER_TOKENS)
    added = count_tokens(number_lines(sample, first_line), encoding) - count_tokens(sample.rstrip("\n"), encoding)
    return max(0.0, added / lines)


def last_line_of(text: str, first_line: int) -> int:
    """The number of the last line of `text` when its first line is `first_line`."""
    body = text[:-1] if text.endswith("\n") else text
    return first_line + body.count("\n")


def unique(citations: Iterable[Citation]) -> list[Citation]:
    """Each (lines, quote) once, the first kept: an answer repeats what its chunks cited, overlaps repeat too."""
    seen: set[tuple[int, int, str]] = set()
    kept = []
    for citation in citations:
        key = (citation.start_line, citation.end_line, citation.quote.strip())
        if key not in seen:
            seen.add(key)
            kept.append(citation)
    return kept
