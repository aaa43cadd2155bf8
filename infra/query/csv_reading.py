"""A CSV/TSV export → the SELECT that reads it, with the markers people write for a missing value as NULL.

Spreadsheets, R, pandas and databases export a missing value as `NA`, `N/A`, `n/a`, `NULL`, `null` or
an empty field; DuckDB's reader would make the whole column text for one `NA`, so `avg(temp)` fails.
Those markers are NULL in every column (as pandas reads them), so a numeric or date column gets its
type. `-` is different: it is also a real value in text (`-` as "no middle name", a range, a score), so
it is NULL only in a column whose every other value is a number, a date or a timestamp — that column
then gets that type; in a text column `-` stays `-`. The note says which columns were made so.
"""

from __future__ import annotations

import duckdb

from infra.query.engine import ident, literal

NULL_MARKERS = ("NA", "N/A", "n/a", "NULL", "null", "")
DASH = "-"
DASH_TYPES = ("BIGINT", "DOUBLE", "DATE", "TIMESTAMP")
"""What a text column holding `-` may become, in order of preference."""


def csv_select(conn: duckdb.DuckDBPyConnection, path: str, delim: str) -> tuple[str, str]:
    """The rows' SELECT over the file at `path` (a SQL literal) and how missing values were read."""
    markers = ", ".join(literal(m) for m in NULL_MARKERS)
    reader = f"read_csv({path}, delim={delim}, header=true, sample_size=-1, nullstr=[{markers}])"
    rel = conn.sql(f"SELECT * FROM {reader}")
    texts = [name for name, typ in zip(rel.columns, rel.dtypes, strict=True) if str(typ) == "VARCHAR"]
    dashed = _dash_columns(conn, reader, texts)
    columns = ", ".join(_column(name, dashed.get(name)) for name in rel.columns)
    made = "one row per CSV row; NA, N/A, n/a, NULL, null and empty fields are NULL"
    if dashed:
        made += "; '-' is NULL in " + ", ".join(f"{name} ({typ})" for name, typ in dashed.items())
    return f"SELECT {columns} FROM {reader}", made


def _column(name: str, typ: str | None) -> str:
    col = ident(name)
    return col if typ is None else f"TRY_CAST(NULLIF({col}, {literal(DASH)}) AS {typ}) AS {col}"


def _dash_columns(conn: duckdb.DuckDBPyConnection, reader: str, texts: list[str]) -> dict[str, str]:
    """The text columns holding `-` whose other values all read as one of `DASH_TYPES`, with that type
    (one pass over the file for all of them)."""
    if not texts:
        return {}
    checks = [_checks(ident(name)) for name in texts]
    row = conn.execute(f"SELECT {', '.join(c for group in checks for c in group)} FROM {reader}").fetchall()[0]
    width = len(DASH_TYPES) + 1
    found: dict[str, str] = {}
    for i, name in enumerate(texts):
        dash, *fits = row[i * width : (i + 1) * width]
        typ = next((t for t, fit in zip(DASH_TYPES, fits, strict=True) if fit), None)
        if dash and typ is not None:
            found[name] = typ
    return found


def _checks(col: str) -> list[str]:
    """Whether `col` holds `-` beside some other value, then whether every other value casts to each type."""
    dash = f"(bool_or({col} = {literal(DASH)}) AND bool_or({col} <> {literal(DASH)}))"
    fits = [
        f"coalesce(bool_and({col} = {literal(DASH)} OR TRY_CAST({col} AS {t}) IS NOT NULL), false)" for t in DASH_TYPES
    ]
    return [dash, *fits]
