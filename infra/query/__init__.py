"""The `query` strategy's engine: an output loaded into DuckDB tables, queried in a sandbox.

DuckDB lives here only (a server extra); the pure parts (tool definitions, prompts, how rows are
rendered) are in `extraction/`. `open_tables` is the entry point; `QueryTables` what tools use.

The names below are imported on first use (PEP 562): the API imports `infra.query.loaded_forms`, which
needs no DuckDB, and should not import DuckDB with it at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.query.checking import QueryRefused
    from infra.query.engine import EngineLimits, LoadFailed
    from infra.query.sandbox import Rows, Sandbox, TableFile
    from infra.query.store import Opened, QueryTables, open_tables, preload_tables, query_prefix

_WHERE = {
    "QueryRefused": "checking",
    "EngineLimits": "engine",
    "LoadFailed": "engine",
    "Rows": "sandbox",
    "Sandbox": "sandbox",
    "TableFile": "sandbox",
    "Opened": "store",
    "QueryTables": "store",
    "open_tables": "store",
    "preload_tables": "store",
    "query_prefix": "store",
}

__all__ = [
    "EngineLimits",
    "LoadFailed",
    "Opened",
    "QueryRefused",
    "QueryTables",
    "Rows",
    "Sandbox",
    "TableFile",
    "open_tables",
    "preload_tables",
    "query_prefix",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
