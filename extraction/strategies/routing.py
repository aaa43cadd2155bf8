"""Which extraction strategy runs (docs/spec/tool-output.md §Mode choice), with the reason kept for logs and results.

auto picks full-chunked when the document fits `max_chunks_for_full` chunks (one call reads it all).
A bigger document that looks like structured data (`structured`: JSON, NDJSON, CSV/TSV, sniffed from
its first bytes) goes to `query` — SQL answers lookups and counts exactly for a few thousand tokens;
if it then does not load, the query step chooses again as for text. Otherwise, when its lines
are so long on average (minified JSON, base64) that reading and grepping by line cannot work;
in that second case full-chunked runs with as many chunks as the document needs. Otherwise
auto picks read-grep. An explicit mode is always obeyed.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel

from extraction.errors import InvalidInput


class Mode(StrEnum):
    AUTO = "auto"
    FULL_CHUNKED = "full-chunked"
    READ_GREP = "read-grep"
    TRUNCATE = "truncate"
    QUERY = "query"

    @classmethod
    def parse(cls, value: str | Mode) -> Mode:
        """The mode named by `value` (case and `_`/`-` forgiven); `InvalidInput` lists the allowed ones."""
        if isinstance(value, Mode):
            return value
        normalized = str(value).strip().lower().replace("_", "-")
        try:
            return cls(normalized)
        except ValueError:
            allowed = ", ".join(mode.value for mode in cls)
            raise InvalidInput(
                f"unknown mode {value!r}; allowed: {allowed}", mode=value, allowed=[m.value for m in cls]
            ) from None


class RoutingDecision(BaseModel):
    """The strategy to run and a sentence saying why."""

    mode: Mode
    reason: str


def route(
    requested: Mode | str,
    *,
    chunk_count: int,
    avg_line_bytes: float,
    max_chunks_for_full: int = 1,
    long_line_bytes: int = 1000,
    structured: str | None = None,
) -> RoutingDecision:
    """The strategy for `chunk_count` chunks, `avg_line_bytes` per line, in a `structured` form (sniffed) or None."""
    mode = Mode.parse(requested)
    _check_thresholds(chunk_count, avg_line_bytes, max_chunks_for_full, long_line_bytes)
    if mode is not Mode.AUTO:
        return RoutingDecision(mode=mode, reason=f"requested: {mode.value}")
    if chunk_count <= max_chunks_for_full:
        return RoutingDecision(
            mode=Mode.FULL_CHUNKED,
            reason=f"auto: {_chunks(chunk_count)} ≤ max_chunks_for_full_mode={max_chunks_for_full}",
        )
    if structured:
        return RoutingDecision(
            mode=Mode.QUERY,
            reason=f"auto: structured data ({structured}) in {_chunks(chunk_count)} > "
            f"max_chunks_for_full_mode={max_chunks_for_full}",
        )
    if avg_line_bytes > long_line_bytes:
        return RoutingDecision(
            mode=Mode.FULL_CHUNKED,
            reason=(
                f"auto: avg line {_number(avg_line_bytes)} bytes > {long_line_bytes} "
                f"({_chunks(chunk_count)}, no chunk cap)"
            ),
        )
    return RoutingDecision(
        mode=Mode.READ_GREP,
        reason=f"auto: {_chunks(chunk_count)} > max_chunks_for_full_mode={max_chunks_for_full}"
        f" and avg line {_number(avg_line_bytes)} bytes ≤ {long_line_bytes}",
    )


def _check_thresholds(chunk_count: int, avg_line_bytes: float, max_chunks_for_full: int, long_line_bytes: int) -> None:
    if chunk_count < 0 or avg_line_bytes < 0:
        raise InvalidInput(
            "chunk_count and avg_line_bytes must not be negative",
            chunk_count=chunk_count,
            avg_line_bytes=avg_line_bytes,
        )
    if max_chunks_for_full < 0 or long_line_bytes < 0:
        raise InvalidInput(
            "max_chunks_for_full and long_line_bytes must not be negative",
            max_chunks_for_full=max_chunks_for_full,
            long_line_bytes=long_line_bytes,
        )


def _chunks(count: int) -> str:
    return f"{count} chunk" if count == 1 else f"{count} chunks"


def _number(value: float) -> str:
    """Whole numbers without decimals; otherwise one decimal, so 1000.4 never prints as 1000."""
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
