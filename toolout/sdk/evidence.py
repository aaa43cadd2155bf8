"""An answer's sources as the SDK hands them out: where in the stored output it came from, each quote checked.

The job record's `evidence` (see docs/evidence.md) is a list of items; `sources_of(job)` gives them typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Source:
    """One place an answer came from: lines `start_line`-`end_line` (1-based, inclusive) and the quote taken
    from them, `verified` when the service found the quote there; a query source carries `sql` and `rows`."""

    start_line: int
    end_line: int
    quote: str = ""
    verified: bool = False
    kind: str = "answer"
    match: str = "none"
    shift: int = 0
    why: str | None = None
    start_byte: int | None = None
    end_byte: int | None = None
    sql: str | None = None
    rows: str | None = None

    @property
    def is_query(self) -> bool:
        """A query's SQL and rows rather than a place in the output."""
        return self.kind == "query"

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Source:
        """A source from one item of the job record's `evidence`."""
        return cls(
            start_line=int(item.get("start_line") or 0),
            end_line=int(item.get("end_line") or 0),
            quote=str(item.get("quote") or ""),
            verified=bool(item.get("verified")),
            kind=str(item.get("source") or "answer"),
            match=str(item.get("match") or "none"),
            shift=int(item.get("shift") or 0),
            why=item.get("why"),
            start_byte=item.get("start_byte"),
            end_byte=item.get("end_byte"),
            sql=item.get("sql"),
            rows=item.get("rows"),
        )


def sources_of(job: Mapping[str, Any]) -> tuple[Source, ...]:
    """The sources of a finished job (none for a job without evidence, or still running)."""
    return tuple(Source.from_item(item) for item in job.get("evidence") or ())
