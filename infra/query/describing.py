"""What the Schema says about a loaded table beyond its columns: how many NULLs each column holds, and
how big its arrays of arrays are — read once from the Parquet just written, so a question pays nothing.

* **NULL counts** tell the model a column has gaps (`temp DOUBLE, 1 NULL`) before it averages it.
* **Arrays of arrays** (GeoJSON's `coordinates` is `DOUBLE[][][]`) stay LIST values in their row rather
  than being exploded into millions of rows; the note says how many values each depth holds in all and
  how to reach them (`unnest(…, recursive := true)`, `flatten`), since a sample row shows only their start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import duckdb

from infra.query.engine import ident

Type = duckdb.sqltypes.DuckDBPyType


def null_counts(conn: duckdb.DuckDBPyConnection, table: str) -> tuple[tuple[str, int], ...]:
    """Each top-level column of `table` (a FROM clause: `read_parquet(…)`) holding NULLs, with how many."""
    rel = conn.sql(f"SELECT * FROM {table}")
    counts = ", ".join(f"count(*) - count({ident(name)})" for name in rel.columns)
    row = conn.execute(f"SELECT {counts} FROM {table}").fetchall()[0]
    return tuple((name, int(n)) for name, n in zip(rel.columns, row, strict=True) if n)


def nested_lists(conn: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """One sentence per column (or field of a STRUCT column) of `table` holding arrays of arrays: its sizes
    and how to reach its values."""
    rel = conn.sql(f"SELECT * FROM {table}")
    found = [f for name, typ in zip(rel.columns, rel.dtypes, strict=True) for f in _lists(name, ident(name), typ)]
    if not found:
        return []
    sums = [f"sum({_flat(expr, level)})" for _, expr, depth in found for level in range(depth)]
    row = iter(conn.execute(f"SELECT {', '.join(sums)} FROM {table}").fetchall()[0])
    return [_said(name, depth, [int(next(row) or 0) for _ in range(depth)]) for name, _, depth in found]


def _lists(name: str, expr: str, typ: Type) -> Iterator[tuple[str, str, int]]:
    """(name, SQL expression, depth) of each array of arrays in `typ`, through STRUCT fields."""
    if typ.id == "list" and typ.child.id == "list":
        yield name, expr, _depth(typ)
    elif typ.id == "struct":
        for field, child in typ.children:
            yield from _lists(f"{name}.{field}", f"({expr}).{ident(field)}", cast("Type", child))


def _depth(typ: Type) -> int:
    depth = 0
    while typ.id == "list":
        depth, typ = depth + 1, typ.child
    return depth


def _flat(expr: str, level: int) -> str:
    """How many elements `expr` holds at depth `level + 1`: len of it flattened `level` times."""
    for _ in range(level):
        expr = f"flatten({expr})"
    return f"len({expr})"


def _said(name: str, depth: int, sizes: list[int]) -> str:
    counts = " → ".join(f"{n:,}" for n in sizes)
    return (
        f"{name} holds arrays nested {depth} deep ({counts} elements by depth, all rows): "
        f"reach the values with unnest({name}, recursive := true) or flatten({name})"
    )
