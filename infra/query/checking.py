"""The rules a model's SQL must pass before it runs, checked on DuckDB's own parse.

Every way the check can fail is a `QueryRefused` (the tool error the model sees), never another
exception: text that is not valid Unicode or too long, SQL DuckDB cannot split or whose statement
type the Python client does not know (`UPDATE EXTENSIONS`), a parse tree deeper than Python's JSON
reader goes. The tree is walked without recursion, keeping the CTE names of each query node for that
node's body only (a CTE's own definition sees the CTEs before it), so a CTE named like a catalog view
(`pg_settings`) hides it only where DuckDB would bind the name to the CTE. What may be read is an
allow-list: this output's tables, the CTEs in scope, the table functions in `SAFE_TABLE_FUNCTIONS`
and the table reference kinds in `_TABLE_REF_KINDS` (no `SHOW`, `DESCRIBE` or `SUMMARIZE`: the
Schema tool answers those); scalar and aggregate functions must be DuckDB's own (schema `main` of
a fresh connection: not `pg_catalog`'s macros, which read the catalog, e.g. `pg_get_viewdef`), less
a deny-list of those that read settings, the environment or files — on top of a locked connection
that has no file access at all.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import duckdb

from extraction.errors import InvalidInput
from infra.query.engine import DuckDBError, first_line, ident

SAFE_TABLE_FUNCTIONS = frozenset({"unnest", "range", "generate_series", "json_each", "json_tree"})
_SPECIAL_FUNCTIONS = frozenset({"unnest", "unlist", "grouping", "grouping_id"})
"""Functions the binder handles itself, so `duckdb_functions()` does not list them."""
_TABLE_REF_KINDS = frozenset({"BASE_TABLE", "TABLE_FUNCTION", "SUBQUERY", "JOIN", "EMPTY", "EXPRESSION_LIST"})
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
ONE_SELECT = "Use exactly one read-only SELECT (or WITH … SELECT) statement over the tables Schema lists."

Scope = frozenset[str]


class QueryRefused(InvalidInput):
    """The model's SQL breaks a sandbox rule or fails; the message is the tool error it sees."""

    code = "query_refused"


def one_select(sql: str, max_chars: int) -> str:
    """The one SELECT in `sql`, without its trailing `;`, or `QueryRefused` saying which rule it breaks."""
    check_text(sql, max_chars)
    statements = _statements(sql)
    if len(statements) != 1:
        raise QueryRefused(f"{len(statements)} statements in one call. {ONE_SELECT}")
    kind, text = statements[0]
    if kind != duckdb.StatementType.SELECT:
        raise QueryRefused(f"{kind.name} statements are not allowed. {ONE_SELECT}")
    return text


def check_text(sql: str, max_chars: int) -> None:
    """SQL the parser can take whole: not too long, valid Unicode (no lone surrogate), no NUL."""
    if len(sql) > max_chars:
        raise QueryRefused(f"the SQL is {len(sql)} characters; at most {max_chars}. Write a shorter query.")
    if "\x00" in sql:
        raise QueryRefused("the SQL holds a NUL character; remove it.")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryRefused(f"the SQL is not valid Unicode text ({exc.reason} at {exc.start}); remove it.") from exc


def _statements(sql: str) -> list[tuple[duckdb.StatementType, str]]:
    """(type, text without its `;`) of each non-empty statement in `sql`."""
    try:
        found = [(s.type, _without_final_semicolons(str(s.query))) for s in duckdb.extract_statements(sql)]
        return [(kind, text) for kind, text in found if text]
    except DuckDBError as exc:
        raise QueryRefused(f"the SQL does not parse: {first_line(exc)}") from exc
    except (ValueError, TypeError) as exc:  # a type the client cannot name (`UPDATE EXTENSIONS`)
        raise QueryRefused(f"a statement of a kind that is not allowed here. {ONE_SELECT}") from exc


def _without_final_semicolons(text: str) -> str:
    """`text` cut before its final `;` (and the comments after it), found by DuckDB's tokenizer, so
    neither a `;` inside a string nor one after `--` is mistaken for the end. The tokenizer's positions
    count UTF-8 bytes, not characters, so the cut is made in the encoded text."""
    data = text.encode("utf-8")
    end = len(data)
    for start, kind in reversed(duckdb.tokenize(text)):
        if kind == duckdb.token_type.comment:
            continue
        if kind != duckdb.token_type.operator or data[start : start + 1] != b";":
            break
        end = start
    return data[:end].decode("utf-8").strip()


def check_tree(serialized: str, tables: set[str]) -> None:
    """`serialized` (`json_serialize_sql`'s answer) reads only `tables`, CTEs in scope and allowed functions."""
    try:
        tree = json.loads(serialized)
    except RecursionError as exc:
        raise QueryRefused(
            "the SQL is nested too deeply (an expression hundreds of levels deep); simplify it."
        ) from exc
    if tree.get("error"):
        raise QueryRefused(f"the SQL does not parse: {tree.get('error_message', 'syntax error')}")
    for node, scope in _scoped_nodes(tree, frozenset(tables)):
        _check_node(node, scope, tables)


def _scoped_nodes(tree: Any, top: Scope) -> Iterator[tuple[dict[str, Any], Scope]]:
    """Every object in the parse tree with the table names visible there, depth first, without recursion."""
    stack: list[tuple[Any, Scope]] = [(tree, top)]
    while stack:
        value, scope = stack.pop()
        if isinstance(value, dict):
            yield value, scope
            stack.extend(_children(value, scope))
        elif isinstance(value, list):
            stack.extend((child, scope) for child in value)


def _children(node: dict[str, Any], scope: Scope) -> Iterator[tuple[Any, Scope]]:
    """A node's children and what each sees. A query node's CTEs are visible in its body; each CTE's own
    definition sees only the CTEs before it (DuckDB binds `WITH pg_settings AS (SELECT * FROM
    pg_settings)` to the catalog inside), and a recursive CTE's recursive part sees its own name."""
    entries = _cte_entries(node)
    names = [name for name, _ in entries]
    for i, (_, definition) in enumerate(entries):
        yield definition, scope | frozenset(names[:i])
    if node.get("type") == "RECURSIVE_CTE_NODE" and isinstance(node.get("cte_name"), str):
        yield node.get("right"), scope | {node["cte_name"]}
        yield from ((child, scope) for key, child in node.items() if key != "right")
        return
    inner = scope | frozenset(names)
    yield from ((child, inner) for key, child in node.items() if key != "cte_map")


def _cte_entries(node: dict[str, Any]) -> list[tuple[str, Any]]:
    """The (name, definition) of each CTE a query node defines, in order."""
    cte_map = node.get("cte_map")
    entries = cte_map.get("map", []) if isinstance(cte_map, dict) else []
    return [(e["key"], e.get("value")) for e in entries if isinstance(e, dict) and isinstance(e.get("key"), str)]


def _check_node(node: dict[str, Any], scope: Scope, tables: set[str]) -> None:
    if node.get("class") == "FUNCTION":
        _check_function(str(node.get("function_name", "")).lower())
    elif _is_table_ref(node):
        _check_table_ref(node, scope, tables)


def _is_table_ref(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return "sample" in node and "class" not in node and isinstance(kind, str) and not kind.endswith("_NODE")


def _check_table_ref(node: dict[str, Any], scope: Scope, tables: set[str]) -> None:
    kind = node.get("type")
    if kind == "BASE_TABLE":
        _check_table(node, scope, tables)
    elif kind == "TABLE_FUNCTION":
        name = str((node.get("function") or {}).get("function_name", "")).lower()
        if name not in SAFE_TABLE_FUNCTIONS:
            raise QueryRefused(f"the table function {name}() is not available here. {ONE_SELECT}")
    elif kind == "SHOW_REF":
        raise QueryRefused("SHOW, DESCRIBE and SUMMARIZE are not available here: the Schema tool lists the tables.")
    elif kind not in _TABLE_REF_KINDS:
        raise QueryRefused(f"reading from a {str(kind).lower()} is not available here. {ONE_SELECT}")


def _check_table(node: dict[str, Any], scope: Scope, tables: set[str]) -> None:
    name = str(node.get("table_name", ""))
    qualified = node.get("catalog_name") or node.get("schema_name")
    if qualified or name not in scope:
        known = ", ".join(ident(t) for t in sorted(tables))
        raise QueryRefused(f"unknown table {name!r}: only this output's tables can be read ({known}).")


def _check_function(name: str) -> None:
    if name in _FORBIDDEN_FUNCTIONS or name.startswith(_FORBIDDEN_PREFIXES) or name not in builtin_functions():
        raise QueryRefused(f"the function {name}() is not available here: only this output's data can be read.")


@functools.cache
def builtin_functions() -> frozenset[str]:
    """DuckDB's own scalar, aggregate and macro functions (schema `main`), read once from a fresh connection."""
    conn = duckdb.connect(
        ":memory:", config={"autoload_known_extensions": False, "autoinstall_known_extensions": False}
    )
    try:
        rows = conn.execute(
            "SELECT DISTINCT lower(function_name) FROM duckdb_functions() "
            "WHERE schema_name = 'main' AND function_type IN ('scalar', 'aggregate', 'macro')"
        ).fetchall()
    finally:
        conn.close()
    return frozenset(str(r[0]) for r in rows) | _SPECIAL_FUNCTIONS
