"""A JSON *object* document → the tables to make of it, found on the type DuckDB inferred (never the data).

The object is read as one row (`__doc`) and its type walked through nested objects:

* an **array** becomes a table named by its path (`items`, `data.results`): one row per element, the
  element's fields as columns; an array of scalars gives a `value` column, an array of arrays an
  `index` and a `value` column (the inner array stays a LIST);
* an **object keyed by id** (`{"events": {"138586341": {…}, …}}`, `extraction.documents.keyed`, or a
  MAP DuckDB inferred itself for an object of many same-shaped keys) becomes a table with one row per
  key: a `key` column, then the values' fields. The values are cut apart with `json_each` and typed
  with the structure of all of them (`json_group_structure`), so values that lack a field or hold it
  as another type still fit one table;
* the top level's other fields make `root` (a keyed object at the top level is left out of it: its
  table holds it).

Every table's note says how it was made (the Schema shows it), and a name already taken ignoring case
gets `_2`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import cast

import duckdb

from extraction.documents.keyed import is_keyed
from infra.query.engine import LoadFailed, ident, literal

ROOT_TABLE = "root"
KEY_COLUMNS = ("key", "_key", "key_")
"""The keyed table's key column: the first name its values do not already use."""

Type = duckdb.sqltypes.DuckDBPyType


@dataclass(frozen=True)
class Planned:
    """One table to write: its unique name, the rows' SELECT, how it was made (the Schema shows it)."""

    name: str
    select: str
    note: str = ""


@dataclass(frozen=True)
class _Found:
    """A table's source inside the document: its default name, JSON path, SQL expression and type."""

    path: str
    origin: str
    expr: str
    typ: Type
    keyed: bool


def object_plans(conn: duckdb.DuckDBPyConnection, doc: duckdb.DuckDBPyRelation, keys: dict[str, str]) -> list[Planned]:
    """The tables of the object read as `__doc` (`keys`: each column's JSON key, where DuckDB renamed it)."""
    fields = list(zip(doc.columns, doc.dtypes, strict=True))
    found = [f for name, typ in fields for f in _sources(name, "$" + step(keys[name]), ident(name), typ)]
    if not found:
        raise LoadFailed("the JSON object holds no array or keyed object to make a table of")
    keyed_columns = {f.expr for f in found if f.keyed}
    scalars = [ident(n) for n, t in fields if t.id != "list" and ident(n) not in keyed_columns]
    taken: set[str] = set()
    plans = [_plan(conn, f, taken) for f in found]
    if scalars:
        plans.append(
            _named(ROOT_TABLE, taken, f"SELECT {', '.join(scalars)} FROM __doc", "", "the top level's other fields")
        )
    return plans


def _sources(path: str, origin: str, expr: str, typ: Type) -> Iterator[_Found]:
    """Each array and each keyed object reachable from `expr` through objects (not through either)."""
    if typ.id == "list":
        yield _Found(path, origin, expr, typ.child, keyed=False)
    elif _keyed_type(typ):
        yield _Found(path, origin, expr, typ, keyed=True)
    elif typ.id == "struct":
        for name, child in typ.children:
            child_type = cast("Type", child)
            yield from _sources(f"{path}.{name}", origin + step(name), f"({expr}).{ident(name)}", child_type)


def _keyed_type(typ: Type) -> bool:
    """A MAP of objects (DuckDB's own call for many same-shaped keys), or a STRUCT `is_keyed` calls keyed."""
    if typ.id == "map":
        return cast("Type", typ.children[1][1]).id == "struct"
    if typ.id != "struct":
        return False
    children = [(name, cast("Type", child)) for name, child in typ.children]
    shapes = [frozenset(n for n, _ in c.children) if c.id == "struct" else None for _, c in children]
    return is_keyed([name for name, _ in children], shapes)


def _plan(conn: duckdb.DuckDBPyConnection, found: _Found, taken: set[str]) -> Planned:
    if found.keyed:
        select, count = _keyed_rows(conn, found.expr)
        return _named(found.path, taken, select, found.origin, f"one row per key of {found.origin} ({count} keys)")
    element = found.typ
    if element.id == "struct":
        select, made = f"SELECT u.* FROM (SELECT unnest({found.expr}) AS u FROM __doc)", "one row per element"
    elif element.id == "list":
        select = f'SELECT generate_subscripts({found.expr}, 1) AS "index", unnest({found.expr}) AS value FROM __doc'
        made = "one row per inner array (`index` from 1, the array in `value`)"
    else:
        select, made = f"SELECT unnest({found.expr}) AS value FROM __doc", "one row per element (`value`)"
    return _named(found.path, taken, select, found.origin, f"{made} of {found.origin}")


def _keyed_rows(conn: duckdb.DuckDBPyConnection, expr: str) -> tuple[str, int]:
    """The keyed object's rows — its key, then its values' fields typed by all the values — and how many."""
    entries = f"FROM __doc, json_each(to_json({expr})) AS __e"
    row = conn.execute(f"SELECT json_group_structure(__e.value), count(*) {entries}").fetchall()[0]
    structure = str(row[0])
    names = {name.lower() for name in json.loads(structure)}
    key = next((k for k in KEY_COLUMNS if k not in names), f"key_{len(names)}")
    typed = f'SELECT __e.key AS __k, json_transform(__e.value, {literal(structure)}) AS __v, __e."id" AS __i {entries}'
    return f"SELECT __k AS {ident(key)}, __v.* FROM ({typed}) ORDER BY __i", int(row[1])


def _named(name: str, taken: set[str], select: str, origin: str, made: str) -> Planned:
    """A table named `name` unless taken; its note says how it was made and, when its name is not its
    path, where it comes from (`origin`, a JSON path; empty: the top level's other fields)."""
    unique = _unique(name, taken)
    if not origin:
        return Planned(unique, select, made)
    moved = "" if origin == f"$.{unique}" else f"{unique!r} is {origin}; "
    return Planned(unique, select, moved + made)


def _unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_<n>` when a table already has it (DuckDB's names ignore case)."""
    found, n = name, 1
    while found.lower() in taken:
        n += 1
        found = f"{name}_{n}"
    taken.add(found.lower())
    return found


def step(key: str) -> str:
    """One step of a JSON path: `.key`, or `["a.b"]` for a key that is not a plain name."""
    return f".{key}" if key.isidentifier() else f"[{json.dumps(key)}]"
