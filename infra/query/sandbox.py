"""The connection a model's SQL runs on: one output's tables, read-only, bounded, locked.

Both the document (it may hold prompt injections) and the SQL (the model writes it) are
untrusted. After the tables are attached as views over their Parquet files, the connection
is locked: `enable_external_access=false` (no file, URL or database outside `allowed_paths`,
which lists only those Parquet files), `lock_configuration=true` (no `SET` can undo that),
extension auto-loading off. Each call must then be exactly one SELECT (or WITH … SELECT),
checked on DuckDB's own parse (`infra.query.checking`). What runs is the checked statement as a
subquery, each of its columns cut inside DuckDB (`left(CAST(col AS VARCHAR), max_cell_chars)`
for anything not of a fixed size) and `LIMIT max_rows + 1`; rows are fetched one at a time until
`max_result_bytes`. The timer interrupts it (`conn.interrupt()`) where DuckDB can stop; the child
process it runs in (`infra.query.child`) is what bounds one long function call and its memory.
A rule broken is a `QueryRefused` whose message tells the model what to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from infra.query.checking import QueryRefused, check_tree, one_select
from infra.query.engine import DuckDBError, EngineLimits, StatementTimer, connect, first_line, ident, literal

_FIXED_SIZE_TYPES = frozenset(
    {
        "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
        "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE",
        "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIME WITH TIME ZONE", "INTERVAL", "UUID", '"NULL"',
    }
)  # fmt: skip


@dataclass(frozen=True)
class TableFile:
    name: str
    path: Path
    rows: int


@dataclass
class Rows:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]
    more: bool
    """True when the statement returned more rows than were fetched (or than `max_result_bytes` held)."""


@dataclass
class Sandbox:
    """One output's tables behind a locked connection; `query` runs one checked SELECT."""

    tables: list[TableFile]
    limits: EngineLimits
    temp_dir: Path
    _conn: duckdb.DuckDBPyConnection = field(init=False, repr=False)
    _timer: StatementTimer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._conn = connect(self.limits, self.temp_dir)
        self._timer = StatementTimer(self._conn)
        for table in self.tables:
            self._conn.execute(
                f"CREATE VIEW {ident(table.name)} AS SELECT * FROM read_parquet({literal(str(table.path))})"
            )
        paths = ", ".join(literal(str(t.path)) for t in self.tables)
        self._conn.execute(f"SET allowed_paths = [{paths}]")
        self._conn.execute("SET enable_external_access = false")
        self._conn.execute("SET lock_configuration = true")

    @property
    def names(self) -> set[str]:
        return {t.name for t in self.tables}

    def columns(self, table: str) -> list[tuple[str, str]]:
        rel = self._conn.table(ident(table))
        return [(name, str(typ)) for name, typ in zip(rel.columns, rel.dtypes, strict=True)]

    def sample(self, table: str, n: int) -> Rows:
        return self._bounded(f"SELECT * FROM {ident(table)}", n)

    def query(self, sql: str, max_rows: int) -> Rows:
        """Check `sql` against the rules, then run it, fetching at most `max_rows` rows."""
        return self._bounded(self.check(sql), max_rows)

    def check(self, sql: str) -> str:
        """`sql`'s one SELECT as the subquery that runs (`QueryRefused`: which rule it breaks).

        The tree checked is the wrapped text's, so what runs is exactly what was checked; the newline
        before `)` ends a trailing `-- comment`."""
        inner = f"SELECT * FROM (\n{one_select(sql, self.limits.max_sql_chars)}\n) AS __q"
        check_tree(self._serialize(inner), self.names)
        return inner

    def _serialize(self, sql: str) -> str:
        row = self._conn.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
        return str(row[0]) if row else "{}"

    def _bounded(self, inner: str, max_rows: int) -> Rows:
        with self._timer.limit(self.limits.statement_timeout_seconds):
            rel = self._guard(lambda: self._conn.sql(inner))
            types = [str(t) for t in rel.dtypes]
            cut = ", ".join(self._cut(name, typ) for name, typ in zip(rel.columns, types, strict=True))
            sql = f"SELECT {cut or '*'} FROM ({inner}) AS __b LIMIT {int(max_rows) + 1}"
            cursor = self._guard(lambda: self._conn.execute(sql))
            fetched, more = self._guard(lambda: self._fetch(cursor, max_rows))
        return Rows(columns=list(rel.columns), types=types, rows=fetched, more=more)

    def _cut(self, name: str, typ: str) -> str:
        """One column of the result, bounded inside DuckDB: a value of unbounded size becomes at most
        `max_cell_chars` characters of text before it leaves the engine."""
        col = f"__b.{ident(name)}"
        if typ in _FIXED_SIZE_TYPES or typ.startswith("DECIMAL"):
            return f"{col} AS {ident(name)}"
        text = col if typ == "VARCHAR" else f"CAST({col} AS VARCHAR)"
        return f"left({text}, {int(self.limits.max_cell_chars)}) AS {ident(name)}"

    def _fetch(self, cursor: duckdb.DuckDBPyConnection, max_rows: int) -> tuple[list[tuple[Any, ...]], bool]:
        """Up to `max_rows` rows and `max_result_bytes` of them; whether there were more."""
        rows: list[tuple[Any, ...]] = []
        spent = 0
        while (row := cursor.fetchone()) is not None:
            spent += sum(len(str(v)) for v in row)
            if len(rows) >= max_rows or (spent > self.limits.max_result_bytes and rows):
                return rows, True
            rows.append(tuple(row))
        return rows, False

    def _guard(self, run: Any) -> Any:
        """`run()` with DuckDB's errors as the tool errors the model sees."""
        try:
            return run()
        except duckdb.InterruptException as exc:
            raise QueryRefused(
                f"the query ran longer than {self.limits.statement_timeout_seconds:g} s and was stopped. "
                "Filter earlier (WHERE), avoid joining a big table with itself, or aggregate."
            ) from exc
        except duckdb.OutOfMemoryException as exc:
            raise QueryRefused(
                f"the query needs more memory than it may use (DuckDB's {self.limits.memory_limit_mb} MB, its "
                f"process's {self.limits.process_memory_mb} MB): select fewer columns, filter first, aggregate, "
                "or avoid building huge values."
            ) from exc
        except DuckDBError as exc:
            raise QueryRefused(self._scrub(first_line(exc))) from exc

    def _scrub(self, text: str) -> str:
        """`text` without the directories of the tables' files (the worker's paths are not the model's to see)."""
        for folder in {str(t.path.parent) for t in self.tables} | {str(self.temp_dir)}:
            text = text.replace(folder, "<work>")
        return text

    def close(self) -> None:
        self._timer.close()
        self._conn.close()
