"""The connection a model's SQL runs on: one output's tables, read-only, bounded, locked.

Both the document (it may hold prompt injections) and the SQL (the model writes it) are
untrusted. After the tables are attached as views over their Parquet files, the connection
is locked: `enable_external_access=false` (no file, URL or database outside `allowed_paths`,
which lists only those Parquet files), `lock_configuration=true` (no `SET` can undo that),
extension auto-loading off. Each call must then be exactly one SELECT (or WITH … SELECT),
checked on DuckDB's own parse (`extract_statements`, `json_serialize_sql`), reading only this
output's tables and the harmless table functions (`unnest`, `range`, …), with no system or
settings function; it runs under a timer that interrupts it (`conn.interrupt()`) and the
memory limit. A rule broken is a `QueryRefused` whose message tells the model what to change.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from extraction.errors import InvalidInput
from infra.query.engine import DuckDBError, EngineLimits, connect, first_line, ident, literal

SAFE_TABLE_FUNCTIONS = frozenset({"unnest", "range", "generate_series", "json_each", "json_tree"})
_FORBIDDEN_PREFIXES = (
    "duckdb_",
    "pragma_",
    "read_",
    "parquet_",
    "sniff_",
    "json_execute",
    "load_",
    "iceberg",
    "delta_",
)
_FORBIDDEN_FUNCTIONS = frozenset(
    {
        "current_setting",
        "getenv",
        "glob",
        "query",
        "query_table",
        "which_secret",
        "json_deserialize_sql",
        "icu_calendar_names",
    }
)
_ONE_SELECT = "Use exactly one read-only SELECT (or WITH … SELECT) statement over the tables Schema lists."


class QueryRefused(InvalidInput):
    """The model's SQL breaks a sandbox rule or fails; the message is the tool error it sees."""

    code = "query_refused"


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
    """True when the statement returned more rows than were fetched."""


@dataclass
class Sandbox:
    """One output's tables behind a locked connection; `query` runs one checked SELECT."""

    tables: list[TableFile]
    limits: EngineLimits
    temp_dir: Path
    _conn: duckdb.DuckDBPyConnection = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._conn = connect(self.limits, self.temp_dir)
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
        return self._run(f"SELECT * FROM {ident(table)} LIMIT {int(n)}", n)

    def query(self, sql: str, max_rows: int) -> Rows:
        """Check `sql` against the rules, then run it, fetching at most `max_rows` rows."""
        statement = self.check(sql)
        return self._run(f"SELECT * FROM ({statement}) AS __q LIMIT {int(max_rows) + 1}", max_rows)

    def check(self, sql: str) -> str:
        """The one SELECT in `sql`, without its trailing `;`, or `QueryRefused` saying which rule it breaks."""
        statements = self._statements(sql)
        if len(statements) != 1:
            raise QueryRefused(f"{len(statements)} statements in one call. {_ONE_SELECT}")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise QueryRefused(f"{statements[0].type.name} statements are not allowed. {_ONE_SELECT}")
        text = str(statements[0].query).strip().rstrip(";").strip()
        self._check_tree(text)
        return text

    def _statements(self, sql: str) -> list[Any]:
        try:
            return [s for s in duckdb.extract_statements(sql) if s.query.strip().strip(";").strip()]
        except DuckDBError as exc:
            raise QueryRefused(f"the SQL does not parse: {first_line(exc)}") from exc

    def _check_tree(self, sql: str) -> None:
        tree = json.loads(self._fetch_one("SELECT json_serialize_sql(?)", [sql]))
        if tree.get("error"):
            raise QueryRefused(f"the SQL does not parse: {tree.get('error_message', 'syntax error')}")
        allowed = self.names | set(_cte_names(tree))
        for node in _nodes(tree):
            _check_node(node, allowed)

    def _fetch_one(self, sql: str, params: list[Any]) -> str:
        row = self._conn.execute(sql, params).fetchone()
        return str(row[0]) if row else "{}"

    def _run(self, sql: str, max_rows: int) -> Rows:
        timer = threading.Timer(self.limits.statement_timeout_seconds, self._conn.interrupt)
        timer.start()
        try:
            cursor = self._conn.execute(sql)
            fetched = cursor.fetchmany(max_rows + 1)
            description = cursor.description or []
        except duckdb.InterruptException as exc:
            raise QueryRefused(
                f"the query ran longer than {self.limits.statement_timeout_seconds:g} s and was stopped. "
                "Filter earlier (WHERE), avoid joining a big table with itself, or aggregate."
            ) from exc
        except duckdb.OutOfMemoryException as exc:
            raise QueryRefused(
                f"the query needs more than the {self.limits.memory_limit_mb} MB it may use: "
                "select fewer columns, filter first, or aggregate."
            ) from exc
        except DuckDBError as exc:
            raise QueryRefused(first_line(exc)) from exc
        finally:
            timer.cancel()
        return Rows(
            columns=[d[0] for d in description],
            types=[str(d[1]) for d in description],
            rows=[tuple(r) for r in fetched[:max_rows]],
            more=len(fetched) > max_rows,
        )

    def close(self) -> None:
        self._conn.close()


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    """Every object in the parse tree."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from _nodes(child)
    elif isinstance(value, list):
        for child in value:
            yield from _nodes(child)


def _cte_names(tree: Any) -> Iterator[str]:
    for node in _nodes(tree):
        for entry in node.get("cte_map", {}).get("map", []) if isinstance(node.get("cte_map"), dict) else []:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                yield entry["key"]


def _check_node(node: dict[str, Any], tables: set[str]) -> None:
    kind = node.get("type")
    if kind == "BASE_TABLE":
        _check_table(node, tables)
    elif kind == "TABLE_FUNCTION":
        name = str((node.get("function") or {}).get("function_name", "")).lower()
        if name not in SAFE_TABLE_FUNCTIONS:
            raise QueryRefused(f"the table function {name}() is not available here. {_ONE_SELECT}")
    elif node.get("class") == "FUNCTION":
        _check_function(str(node.get("function_name", "")).lower())


def _check_table(node: dict[str, Any], tables: set[str]) -> None:
    name = str(node.get("table_name", ""))
    qualified = node.get("catalog_name") or node.get("schema_name")
    if qualified or name not in tables:
        known = ", ".join(ident(t) for t in sorted(tables))
        raise QueryRefused(f"unknown table {name!r}: only this output's tables can be read ({known}).")


def _check_function(name: str) -> None:
    if name in _FORBIDDEN_FUNCTIONS or name.startswith(_FORBIDDEN_PREFIXES):
        raise QueryRefused(f"the function {name}() is not available here: only this output's data can be read.")
