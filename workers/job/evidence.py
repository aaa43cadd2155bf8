"""A job's evidence, gathered where its answer is made and checked against the stored output before it is kept.

Every strategy knows what it showed the model: a map call its chunk's lines, a sub-agent the lines its
Read and Grep calls returned and the rows of each query, truncate the head and tail it keeps. The
answer's citations are checked against exactly those (`extraction.evidence.verify`), by ranged reads of
the output (`infra.outputs.evidence`); a reduce keeps its inputs' citations, since the job gathers the
map answers' own with the final answer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from extraction.documents.chunking import Chunk
from extraction.evidence.citations import Citation, parse_citations, unique
from extraction.evidence.model import EvidenceItem, SourceKind, UnreadRange
from extraction.evidence.seen import as_ranges, inside, join_runs, seen_lines
from extraction.evidence.summary import sources_line, unverified_warning
from extraction.strategies.agent import ToolExecutor
from extraction.texts.query import QUERY_NAME
from extraction.texts.tools import SUB_AGENT_GREP_NAME, SUB_AGENT_READ_NAME
from infra.outputs.evidence import OutputLines
from infra.stores.jobs import JobRecord
from infra.stores.records import OutputRecord
from workers.job.runtime import Runtime

MAX_ROWS_CHARS = 2_000
SHOWN_GAP = 20
"""Runs of shown lines this close are one item: a grep's hits with their context read as one place."""
MAX_SHOWN_RUNS = 50
"""A query item keeps the head of its rows: enough to read the numbers behind an answer."""


@dataclass(frozen=True)
class Evidence:
    """What an answer came from, each quote checked, and what a partial answer did not read."""

    items: list[EvidenceItem] = field(default_factory=list)
    unread: list[UnreadRange] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """The job record's fields for it."""
        return {"evidence": self.items, "unread": self.unread}

    def framed(self, body: str) -> str:
        """The answer's text with a WARNING for unverified quotes first and the sources line last."""
        warning, sources = unverified_warning(self.items), sources_line(self.items, self.unread)
        return "\n\n".join(part for part in (warning, body, sources) if part)


def output_lines(rt: Runtime, output: OutputRecord) -> OutputLines:
    return OutputLines(rt.blobs, output, block_size=rt.settings.blob_read_block_bytes)


# --- full-chunked --------------------------------------------------------------------------------
def for_chunks(rt: Runtime, job: JobRecord, output: OutputRecord, answer: str, chunks: Sequence[Chunk]) -> Evidence:
    """The map answers' citations, each bound to its own chunk's lines, then the final answer's."""
    lines = output_lines(rt, output)
    outputs = rt.jobs.fanin.chunk_outputs(job.id)
    cited: list[Citation] = []
    read: list[tuple[int, int]] = []
    for chunk in chunks:
        text = outputs.get(chunk.index)
        if text is not None:
            read.append(lines.lines_of(chunk.start, chunk.end))
            cited += parse_citations(text, source=SourceKind.CHUNK, chunk=chunk.index + 1, allowed=read[-1:])
    cited += parse_citations(answer)
    items = lines.verify(unique(cited)) or shown_items(lines, read)
    return Evidence(items, lines.unread(job.failed_ranges))


# --- sub-agents ----------------------------------------------------------------------------------
@dataclass
class ToolLog:
    """The sub-agent's tool calls as they ran: the lines each Read and Grep returned, each query and its rows."""

    read: list[int] = field(default_factory=list)
    grep: list[int] = field(default_factory=list)
    queries: list[EvidenceItem] = field(default_factory=list)

    def recording(self, execute: ToolExecutor) -> ToolExecutor:
        """`execute`, each result noted here on its way back to the model."""

        def run(name: str, arguments: dict[str, Any]) -> str:
            result = execute(name, arguments)
            self.note(name, arguments, result)
            return result

        return run

    def note(self, name: str, arguments: dict[str, Any], result: str) -> None:
        if name == SUB_AGENT_READ_NAME:
            self.read += seen_lines(result)
        elif name == SUB_AGENT_GREP_NAME:
            self.grep += seen_lines(result)
        elif name == QUERY_NAME:
            self.queries.append(query_item(str(arguments.get("sql", "")), result))


def query_item(sql: str, rows: str) -> EvidenceItem:
    """A query behind an answer: its SQL and the rows it returned. Only a query that ran is noted (a failing one
    raises before its result comes back), so its rows are what the sandbox really returned: verified."""
    return EvidenceItem(
        start_line=0, end_line=0, source=SourceKind.QUERY, sql=sql, rows=rows[:MAX_ROWS_CHARS], verified=True
    )


def for_agent(rt: Runtime, output: OutputRecord, answer: str, log: ToolLog) -> Evidence:
    """The answer's citations, checked against the lines the sub-agent's tools returned, then its queries."""
    lines = output_lines(rt, output)
    seen = as_ranges(log.read + log.grep)
    grepped = as_ranges(log.grep)
    cited = [
        citation.model_copy(update={"source": _tool_source(citation, grepped)})
        for citation in parse_citations(answer, source=SourceKind.READ, allowed=seen)
    ]
    items = [*lines.verify(unique(cited)), *log.queries]
    return Evidence(items or shown_items(lines, seen))


def shown_items(lines: OutputLines, ranges: Sequence[tuple[int, int]]) -> list[EvidenceItem]:
    """An answer that quotes nothing (NO RELEVANT DATA FOUND) still came from somewhere: the lines its model was
    shown, as runs (nearby runs joined, so a grep's scattered hits stay a few items)."""
    runs = join_runs(ranges, SHOWN_GAP)[:MAX_SHOWN_RUNS]
    return [_lines_item(lines, first, last) for first, last in runs]


def _lines_item(lines: OutputLines, first: int, last: int) -> EvidenceItem:
    window_start, window_end = lines.byte_range(first, last)
    return EvidenceItem(
        start_line=first,
        end_line=last,
        start_byte=window_start,
        end_byte=window_end,
        source=SourceKind.SHOWN,
        verified=True,
    )


def _tool_source(citation: Citation, grepped: list[tuple[int, int]]) -> SourceKind:
    return SourceKind.GREP if inside(citation.start_line, citation.end_line, grepped) else SourceKind.READ


# --- truncate --------------------------------------------------------------------------------------
def for_view(rt: Runtime, output: OutputRecord, shown: Sequence[tuple[int, int]]) -> Evidence:
    """A truncated view: the byte ranges it shows as they are, and the middle it leaves out as unread."""
    lines = output_lines(rt, output)
    items = [_shown(lines, start, end) for start, end in shown if end > start]
    gaps = [(a_end, b_start) for (_, a_end), (b_start, _) in pairwise(shown) if b_start > a_end]
    unread = [_gap(lines, start, end) for start, end in gaps]
    return Evidence(items, unread)


def _shown(lines: OutputLines, start: int, end: int) -> EvidenceItem:
    first, last = lines.lines_of(start, end)
    return EvidenceItem(
        start_line=first, end_line=last, start_byte=start, end_byte=end, source=SourceKind.SHOWN, verified=True
    )


def _gap(lines: OutputLines, start: int, end: int) -> UnreadRange:
    first, last = lines.lines_of(start, end)
    return UnreadRange(start_line=first, end_line=last, start_byte=start, end_byte=end, reason="cut by truncation")
