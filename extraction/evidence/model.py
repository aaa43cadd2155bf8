"""What an answer's evidence is: the places of the stored output it came from, each quote checked.

An item names a line range (1-based, inclusive) and the bytes those lines span, the text the model
quoted from them, and whether that text was found there (`verified`), and how: as written, after
whitespace and case were normalised, or a few lines away (re-anchored, with the shift). A query
answer's items carry the SQL behind the numbers and the rows it returned instead of a quote's place.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Match(StrEnum):
    """How a quote was found in the stored output (`none`: it was not)."""

    EXACT = "exact"
    NORMALISED = "normalised"
    REANCHORED = "re-anchored"
    NONE = "none"


class SourceKind(StrEnum):
    """What showed the model the text it quoted."""

    CHUNK = "chunk"
    READ = "read"
    GREP = "grep"
    QUERY = "query"
    ANSWER = "answer"
    SHOWN = "shown"


QUOTELESS = frozenset({SourceKind.QUERY, SourceKind.SHOWN})
"""Sources that carry no quote to check: a query's SQL and rows, the lines a truncated view shows as they are."""


class EvidenceItem(BaseModel):
    """One place an answer came from, and whether its quote is really there."""

    start_line: int = Field(ge=0, description="first cited line, 1-based (0 for a query item)")
    end_line: int = Field(ge=0, description="last cited line, inclusive")
    start_byte: int | None = Field(None, description="byte offset where the matched lines start")
    end_byte: int | None = Field(None, description="byte offset just past the matched lines")
    quote: str = Field("", description="the text the model quoted, as it wrote it")
    verified: bool = False
    match: Match = Match.NONE
    shift: int = Field(0, description="re-anchored: how many lines the quote sits from where it was cited")
    source: SourceKind = SourceKind.ANSWER
    chunk: int | None = Field(None, description="chunk source: the 1-based chunk whose map answer cited it")
    why: str | None = Field(None, description="not verified: why not")
    sql: str | None = Field(None, description="query source: the SQL that produced the rows")
    rows: str | None = Field(None, description="query source: the result rows as the query returned them")


class UnreadRange(BaseModel):
    """A part of the output a partial answer did not read (a chunk or reduce group that failed)."""

    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    reason: str = ""
