"""An output on local disk → one Parquet file per table, with DuckDB's own streaming readers.

* a top-level JSON array, NDJSON, CSV/TSV → one table, `records`;
* a JSON object → a table per array reachable through objects, named by its path (`items`,
  `data.results`), and `root` for the top level's other fields.

Rows keep their shape: nested objects are STRUCT columns (`customer.email`), arrays inside a row
stay LIST (`UNNEST` works). Nothing is parsed in Python: NDJSON, CSV and arrays stream from the
file to Parquet (`COPY (SELECT …) TO`), spilling to the connection's temp directory, so a 1 GB
NDJSON loads within `memory_limit`. A JSON *object* is read as one row first (DuckDB cannot split
one value), which is fine for API responses and bounded by the memory limit for anything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import duckdb

from extraction.documents.structured import StructuredKind
from infra.query.engine import DuckDBError, EngineLimits, LoadFailed, connect, first_line, ident, literal

TOP_TABLE = "records"
ROOT_TABLE = "root"


@dataclass(frozen=True)
class LoadedTable:
    name: str
    file: str
    """The Parquet file's name inside the load directory (`t0.parquet`, …)."""
    rows: int


def load_tables(source: Path, kind: StructuredKind, out_dir: Path, limits: EngineLimits) -> list[LoadedTable]:
    """Write `source` as Parquet tables into `out_dir`; `LoadFailed` when it is not what `kind` says."""
    out_dir.mkdir(parents=True, exist_ok=True)
    conn = connect(limits, out_dir / "spill")
    try:
        return list(_tables(conn, source, kind, out_dir))
    except DuckDBError as exc:
        raise LoadFailed(f"the output does not load as {kind.value}: {first_line(exc)}") from exc
    finally:
        conn.close()


def _tables(conn: duckdb.DuckDBPyConnection, source: Path, kind: StructuredKind, out: Path) -> Iterator[LoadedTable]:
    path = literal(str(source))
    if kind is StructuredKind.NDJSON:
        yield _copy(
            conn, TOP_TABLE, f"SELECT * FROM read_json({path}, format='newline_delimited', sample_size=-1)", out, 0
        )
    elif kind in (StructuredKind.CSV, StructuredKind.TSV):
        delim = "'\\t'" if kind is StructuredKind.TSV else "','"
        yield _copy(
            conn, TOP_TABLE, f"SELECT * FROM read_csv({path}, delim={delim}, header=true, sample_size=-1)", out, 0
        )
    elif _first_char(source) == "[":
        yield _copy(conn, TOP_TABLE, f"SELECT * FROM read_json({path}, format='array', sample_size=-1)", out, 0)
    else:
        yield from _object_tables(conn, source, out)


def _object_tables(conn: duckdb.DuckDBPyConnection, source: Path, out: Path) -> Iterator[LoadedTable]:
    size = source.stat().st_size + 1
    conn.execute(
        f"CREATE TEMP TABLE __doc AS SELECT * FROM read_json({literal(str(source))}, format='unstructured', "
        f"records=true, sample_size=-1, maximum_object_size={size})"
    )
    doc = conn.table("__doc")
    arrays = [
        found for name, typ in zip(doc.columns, doc.dtypes, strict=True) for found in _arrays(name, ident(name), typ)
    ]
    scalars = [ident(n) for n, t in zip(doc.columns, doc.dtypes, strict=True) if t.id != "list"]
    if not arrays:
        raise LoadFailed("the JSON object holds no array to make a table of")
    for i, (path, expr, element) in enumerate(arrays):
        rows = (
            f"SELECT u.* FROM (SELECT unnest({expr}) AS u FROM __doc)"
            if element.id == "struct"
            else (f"SELECT unnest({expr}) AS value FROM __doc")
        )
        yield _copy(conn, path, rows, out, i)
    if scalars:
        yield _copy(conn, ROOT_TABLE, f"SELECT {', '.join(scalars)} FROM __doc", out, len(arrays))


def _arrays(
    path: str, expr: str, typ: duckdb.sqltypes.DuckDBPyType
) -> Iterator[tuple[str, str, duckdb.sqltypes.DuckDBPyType]]:
    """(table name, SQL expression, element type) of each array reachable from `expr` through objects."""
    if typ.id == "list":
        yield path, expr, typ.child
    elif typ.id == "struct":
        for name, child in typ.children:
            yield from _arrays(f"{path}.{name}", f"({expr}).{ident(name)}", cast("duckdb.sqltypes.DuckDBPyType", child))


def _copy(conn: duckdb.DuckDBPyConnection, name: str, select: str, out: Path, index: int) -> LoadedTable:
    file = f"t{index}.parquet"
    row = conn.execute(f"COPY ({select}) TO {literal(str(out / file))} (FORMAT parquet)").fetchone()
    return LoadedTable(name=name, file=file, rows=int(row[0]) if row else 0)


def _first_char(source: Path) -> str:
    with source.open("rb") as f:
        head = f.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    return head[:1]
