"""The parsers a model, an agent or an uploaded file feeds, as fuzz targets: bytes in, invariants checked.

Each target turns one input into a call of a parser that meets untrusted text, and lets through only the
typed input errors that parser documents (`allowed`): any other exception is a bug, and so is a broken
invariant it states (a round trip, a streaming decision that changes, a result of the wrong type). The
time bound per input is the runner's (`tests/fuzz/run.py`). Inputs are plain files, so a seed or a crash
reads as what it is: two-part inputs put their first part on the first line (`split_first_line`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from extraction.buffers.ops import execute_buffer_op
from extraction.buffers.store import MemoryBufferStore
from extraction.directives.syntax import format_directives, parse_directives
from extraction.documents.kinds import ContentKind, sniff_kind
from extraction.errors import InvalidInput
from extraction.texts.report import FinalReport, ReportFailure, clean_content, parse_final_report
from extraction.variables.refs import find_refs, format_ref, parse_ref, whole_ref
from infra.outputs.grep_engine import compile_matcher
from infra.outputs.html_text import markdown_blocks
from infra.query.checking import QueryRefused
from infra.query.engine import EngineLimits
from infra.query.sandbox import Sandbox, TableFile

NONCE = "0a1b2c3d4e5f6789"
"""The job's nonce in the report target: seeds carry wrappers with it and with forged ones."""
TODAY = dt.date(2026, 1, 1)


@dataclass(frozen=True)
class Target:
    name: str
    run: Callable[[bytes], object]
    allowed: tuple[type[Exception], ...] = ()
    """The typed input errors the parser raises on purpose: a rejection, not a crash."""

    def check(self, data: bytes) -> None:
        """One input through the parser: an allowed error is fine, anything else propagates (a finding)."""
        with contextlib.suppress(self.allowed):
            self.run(data)


def text_of(data: bytes) -> str:
    """The input as text; an invalid byte becomes a lone surrogate, which JSON's `\\ud800` also lets a caller send."""
    return data.decode("utf-8", "surrogateescape")


def split_first_line(data: bytes) -> tuple[str, bytes]:
    head, _, rest = data.partition(b"\n")
    return text_of(head), rest


def final_report(data: bytes) -> None:
    text = text_of(data)
    result = parse_final_report(text, NONCE)
    assert isinstance(result, FinalReport | ReportFailure), result
    clean_content(text)


def refs(data: bytes) -> None:
    """Every reference found reads back whole from its own span and from its canonical text, and a stream
    that stops at the undecided tail decides every earlier reference as the whole text does."""
    text = text_of(data)
    spans, end = find_refs(text)
    assert end == len(text)
    for span in spans:
        assert span.start < span.end <= len(text) and text[span.start] == "$"
        assert whole_ref(text[span.start : span.end]) == span.ref, (text[span.start : span.end], span.ref)
        assert parse_ref(format_ref(span.ref)) == span.ref
    streamed, held = find_refs(text, final=False)
    assert streamed == [span for span in spans if span.end <= held], (streamed, held, spans)
    parse_ref(text)


def directives(data: bytes) -> None:
    """A routing spec prints as text that parses back to the same spec (the printer's documented promise)."""
    spec = parse_directives(text_of(data))
    printed = format_directives(spec)
    assert parse_directives(printed) == spec, printed


def buffer_ops(data: bytes) -> None:
    """First line: the call's JSON arguments; the rest: a buffer's text. The model's mistakes come back as
    `Error: …` text, so no exception at all may escape."""
    args, content = split_first_line(data)
    store = MemoryBufferStore(clock=lambda: dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    store.write("notes", content.decode("utf-8", "replace"), source="tool web_search")  # stored text is UTF-8
    store.write("data", '{"rows": [1, 2, 3]}', content_type="application/json")
    answer = execute_buffer_op(args, store, compile_pattern=compile_matcher, today=TODAY)
    assert isinstance(answer, str)


def content_kind(data: bytes) -> None:
    """First line: the declared Content-Type; the rest: the content's first bytes."""
    declared, head = split_first_line(data)
    assert isinstance(sniff_kind(declared, head), ContentKind)


def html_text(data: bytes) -> None:
    """The page in two blocks, converted in pieces as small as its first byte says (so cuts happen)."""
    piece_chars = 16 + (data[0] if data else 0) * 4
    half = len(data) // 2
    for piece in markdown_blocks([data[1:half], data[half:]], piece_chars=piece_chars):
        piece.decode("utf-8")


@functools.cache
def _sandbox() -> Sandbox:
    """A sandbox over one small table (what a model's query would see), made once per process."""
    root = Path(tempfile.mkdtemp(prefix="fuzz-sql-"))
    table = root / "orders.parquet"
    duckdb.sql(f"COPY (SELECT range AS id, 'item ' || range AS name FROM range(3)) TO '{table}' (FORMAT parquet)")
    limits = EngineLimits(memory_limit_mb=128, threads=1, statement_timeout_seconds=1.0)
    return Sandbox([TableFile("orders", table, 3)], limits, root / "spill")


def sql_check(data: bytes) -> None:
    """The checks a model's SQL passes before it runs (the text is checked, never executed)."""
    _sandbox().check(text_of(data))


TARGETS = {
    target.name: target
    for target in (
        Target("final_report", final_report),
        Target("refs", refs, (InvalidInput,)),
        Target("directives", directives, (InvalidInput,)),
        Target("buffer_ops", buffer_ops),
        Target("content_kind", content_kind),
        Target("html_text", html_text),
        Target("sql_check", sql_check, (QueryRefused,)),
    )
}
