"""An output on local disk → one Parquet file per table, with DuckDB's own streaming readers.

* a top-level JSON array, NDJSON, CSV/TSV → one table, `records` (a CSV's missing-value markers,
  `NA` and the like, read as NULL: `infra.query.csv_reading`);
* a JSON object → a table per array and per object keyed by id reachable through objects, named by its
  path (`items`, `data.results`, `events`), and `root` for the top level's other fields
  (`infra.query.json_shapes`).

Every table's note says how it was made, which columns hold arrays of arrays and how big they are, and
each column's NULL count is kept (`infra.query.describing`): the Schema shows them.

Rows keep their shape: nested objects are STRUCT columns (`customer.email`), arrays inside a row
stay LIST (`UNNEST` works). Nothing is parsed in Python: NDJSON, CSV and arrays stream from the
file to Parquet (`COPY (SELECT …) TO`), spilling to the connection's temp directory, so a 1 GB
NDJSON loads within `memory_limit`. An NDJSON's or an array's columns are first inferred from its
first `SAMPLE_ROWS` rows and loaded on every core (`load_tables(sampled=True)`: one pass over the
bytes); when a later row does not fit them (a key or a type the sample lacked, a row too long to
read at `SAMPLED_ROW_BYTES`: DuckDB stops) or the sample left a type open (`NULL`, `JSON`), it is
loaded again with every row inferred, as every document was before (a pass to infer the columns,
then the load, on `threads`), in a fresh process (`infra.query.process.load_in_child`). A JSON
*object* is read as one row first (DuckDB cannot split one value), which is fine for API responses
and bounded by the memory limit for anything else. The columns the notes name are read off the
Parquet written, not off the document (binding a `read_json` with every row inferred is a pass over
the bytes of its own).

The document is untrusted, so a load either gives tables every question can open or raises
`LoadFailed` (whatever went wrong): names are unique ignoring case (`{"root": […], "total": 5}`
gives `root` and `root_2`; `{"a.b": …, "a": {"b": …}}` gives `a.b` and `a.b_2`), each such name and
each column DuckDB renamed is explained in a note the Schema shows, a document whose keys repeat is
rewritten once (`infra.query.normalizing`), and the load is interrupted after `load_timeout_seconds`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import duckdb

from extraction.documents.structured import StructuredKind
from infra.query.csv_reading import csv_select
from infra.query.describing import nested_lists, null_counts
from infra.query.engine import (
    DuckDBError,
    EngineLimits,
    LoadFailed,
    connect,
    first_line,
    interrupted_after,
    literal,
    load_thread_count,
)
from infra.query.json_shapes import Planned, object_plans
from infra.query.normalizing import rewrite

Connection = duckdb.DuckDBPyConnection
T = TypeVar("T")
TOP_TABLE = "records"
SAMPLE_ROWS = 20480
"""Rows an NDJSON's or array's columns are inferred from first (DuckDB's default sample; module docstring)."""
EVERY_ROW = -1
SAMPLED_ROW_BYTES = 16 << 20
"""`maximum_object_size` of a sampled load (DuckDB's default): its reader's buffers are sized from it, per
thread (the whole file's size, as a load with every row inferred gives it, failed to allocate 1.8 GiB for a
1 GB NDJSON under a 512 MB memory limit). A row DuckDB will not read at this size fails the sampled load, and
the load with every row inferred takes a value up to the whole file, on `threads` (one) as it always did."""
_OPEN_TYPES = ('"NULL"', "JSON")
"""A type the sample could not settle: a column NULL in every sampled row, an empty array (`JSON[]`), mixed values."""
_RENAMED_COLUMN = re.compile(r"^(.+)_\d+$")
_REWRITE_WHEN = ("duplicate key", "duplicate name")


@dataclass(frozen=True)
class LoadedTable:
    name: str
    file: str
    """The Parquet file's name inside the load directory (`t0.parquet`, …)."""
    rows: int
    note: str = ""
    """How the table, its name or a column was made (the Schema shows it)."""
    nulls: tuple[tuple[str, int], ...] = ()
    """Each top-level column holding NULLs, with how many."""


class NotSampled(Exception):
    """A sampled load does not hold for this document: load it with every row inferred, in a fresh process
    (the failed attempt's threads and buffers stay in this one's address space, which RLIMIT_AS counts)."""


def load_tables(
    source: Path, kind: StructuredKind, out_dir: Path, limits: EngineLimits, *, sampled: bool = False
) -> list[LoadedTable]:
    """Write `source` as Parquet tables into `out_dir`; `LoadFailed` when it does not load, for any reason.
    `sampled`: with the columns of the first `SAMPLE_ROWS` rows (`samplable` documents), `NotSampled` when
    that does not hold; else with every row inferred."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if sampled:
        return _load_sampled(source, kind, out_dir, limits)
    try:
        return _load(source, kind, out_dir, limits, {})
    except LoadFailed:
        raise
    except DuckDBError as exc:
        if kind in (StructuredKind.CSV, StructuredKind.TSV) or not _rewrite_helps(exc):
            raise LoadFailed(f"the output does not load as {kind.value}: {_said(exc, out_dir)}") from exc
        return _load_rewritten(source, kind, out_dir, limits)
    except Exception as exc:
        raise LoadFailed(f"the output does not load as {kind.value} ({type(exc).__name__})") from exc


def _said(exc: BaseException, work: Path) -> str:
    """DuckDB's message without the work directory's path (it goes on the job, which the tenant reads)."""
    return first_line(exc).replace(str(work / "content"), "<output>").replace(str(work), "<work>")


def _rewrite_helps(exc: BaseException) -> bool:
    return any(words in str(exc).lower() for words in _REWRITE_WHEN)


def _load_rewritten(source: Path, kind: StructuredKind, out_dir: Path, limits: EngineLimits) -> list[LoadedTable]:
    rewritten = out_dir / "rewritten.json"
    try:
        renamed = rewrite(source, kind, rewritten)
        return _load(rewritten, kind, out_dir, limits, renamed)
    except LoadFailed:
        raise
    except Exception as exc:
        raise LoadFailed(f"the output does not load as {kind.value}: {_said(exc, out_dir)}") from exc
    finally:
        rewritten.unlink(missing_ok=True)


def _load(
    source: Path, kind: StructuredKind, out: Path, limits: EngineLimits, renamed: dict[str, str]
) -> list[LoadedTable]:
    """With every row inferred, on `threads` (one): a value may be the whole file, and its buffers are per thread."""
    deadline = time.monotonic() + limits.load_timeout_seconds
    try:
        threads = limits.threads
        return _connected(limits, threads, out, deadline, lambda c: _write(c, _plans(c, source, kind), out, renamed))
    except duckdb.InterruptException as exc:
        raise LoadFailed(f"loading took longer than {limits.load_timeout_seconds:g} s and was stopped") from exc


def _load_sampled(source: Path, kind: StructuredKind, out: Path, limits: EngineLimits) -> list[LoadedTable]:
    deadline, threads = time.monotonic() + limits.load_timeout_seconds, load_thread_count(limits)
    try:
        tables = _connected(limits, threads, out, deadline, lambda c: _sampled(c, source, kind, out))
    except duckdb.InterruptException as exc:
        raise LoadFailed(f"loading took longer than {limits.load_timeout_seconds:g} s and was stopped") from exc
    if tables is None:
        raise NotSampled
    return tables


def _connected(limits: EngineLimits, threads: int, out: Path, deadline: float, work: Callable[[Connection], T]) -> T:
    """`work` on a connection of its own (an attempt that failed may leave its database unusable: an
    internal error invalidates it), interrupted at `deadline`."""
    conn = connect(limits, out / "spill", threads=threads)
    try:
        with interrupted_after(conn, max(0.0, deadline - time.monotonic())):
            return work(conn)
    finally:
        conn.close()


def _write(conn: Connection, plans: list[Planned], out: Path, renamed: dict[str, str]) -> list[LoadedTable]:
    return [_copy(conn, plan, out, i, renamed) for i, plan in enumerate(plans)]


def samplable(source: Path, kind: StructuredKind) -> bool:
    """An NDJSON or a top-level array: rows whose columns a sample can infer (`load_tables(sampled=True)`)."""
    return kind is StructuredKind.NDJSON or (kind is StructuredKind.JSON and _first_char(source) == "[")


def _sampled(conn: Connection, source: Path, kind: StructuredKind, out: Path) -> list[LoadedTable] | None:
    """The tables with the columns inferred from the first `SAMPLE_ROWS` rows; None when that does not hold
    (a type the sample left open, a later row that does not fit): infer from every row."""
    try:
        plans = _plans(conn, source, kind, SAMPLE_ROWS)
        if any(_open_type(conn, plan) for plan in plans):
            return None
        return _write(conn, plans, out, {})
    except duckdb.InterruptException:
        raise
    except DuckDBError:
        return None  # a row the sample did not foresee (or too long to read): load it again, every row inferred


def _open_type(conn: Connection, plan: Planned) -> bool:
    return any(word in str(dtype) for dtype in conn.sql(plan.select).dtypes for word in _OPEN_TYPES)


def _plans(
    conn: duckdb.DuckDBPyConnection, source: Path, kind: StructuredKind, sample: int = EVERY_ROW
) -> list[Planned]:
    path = literal(str(source))
    size = source.stat().st_size + 1 if sample == EVERY_ROW else SAMPLED_ROW_BYTES  # one value: the whole file
    whole = f"sample_size={sample}, maximum_object_size={size}"
    if kind is StructuredKind.NDJSON:
        read = f"SELECT * FROM read_json({path}, format='newline_delimited', {whole})"
        return [Planned(TOP_TABLE, read, "one row per line")]
    if kind in (StructuredKind.CSV, StructuredKind.TSV):
        return [Planned(TOP_TABLE, *csv_select(conn, path, "'\\t'" if kind is StructuredKind.TSV else "','"))]
    if _first_char(source) == "[":
        read = f"SELECT * FROM read_json({path}, format='array', {whole})"
        return [Planned(TOP_TABLE, read, "one row per element of the top-level array")]
    return _object_plans(conn, source)


def _object_plans(conn: duckdb.DuckDBPyConnection, source: Path) -> list[Planned]:
    size = source.stat().st_size + 1
    conn.execute(
        f"CREATE TEMP TABLE __doc AS SELECT * FROM read_json({literal(str(source))}, format='unstructured', "
        f"records=true, sample_size=-1, maximum_object_size={size})"
    )
    doc = conn.table("__doc")
    keys = {name: _case_base(name, doc.columns) or name for name in doc.columns}  # DuckDB renamed `Items` `items_1`
    return object_plans(conn, doc, keys)


def _copy(
    conn: duckdb.DuckDBPyConnection, plan: Planned, out: Path, index: int, renamed: dict[str, str]
) -> LoadedTable:
    file = f"t{index}.parquet"
    rows = conn.execute(f"COPY ({plan.select}) TO {literal(str(out / file))} (FORMAT parquet)").fetchall()
    written = f"read_parquet({literal(str(out / file))})"
    rel = conn.sql(f"SELECT * FROM {written}")
    shape = " ".join([*rel.columns, *map(str, rel.dtypes)])
    rewritten = [_case_note(key, name) for name, key in renamed.items() if name in shape]
    notes = (plan.note, *_case_notes(rel.columns), *rewritten, *nested_lists(conn, written))
    said = dict.fromkeys(note for note in notes if note)
    count = int(rows[0][0]) if rows else 0
    return LoadedTable(plan.name, file, count, note="; ".join(said), nulls=null_counts(conn, written))


def _case_note(key: str, column: str) -> str:
    return f"the key {key!r} is the column {column!r} (another key differs from it only in case)"


def _case_notes(columns: list[str]) -> list[str]:
    """Columns DuckDB renamed because their keys differ from another only in case (`Name` → `Name_1`)."""
    return [_case_note(base, column) for column in columns if (base := _case_base(column, columns))]


def _case_base(column: str, columns: list[str]) -> str | None:
    """The key `column` was renamed from (`Name_1` → `Name`) when another column differs from it only in case."""
    match = _RENAMED_COLUMN.match(column)
    base = match.group(1) if match else None
    return base if base and any(o != base and o.lower() == base.lower() for o in columns) else None


def _first_char(source: Path) -> str:
    """The document's first character that is not whitespace (or a BOM), however much whitespace comes first."""
    with source.open("rb") as f:
        while block := f.read(65536):
            head = block.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
            if head:
                return head[:1]
    return ""
