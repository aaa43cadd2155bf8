"""The `query` strategy's engine: an output loaded into DuckDB tables, queried in a sandbox.

DuckDB lives here only (a server extra); the pure parts (tool definitions, prompts, how rows are
rendered) are in `extraction/`. `open_tables` is the entry point; `QueryTables` what tools use.
"""

from infra.query.checking import QueryRefused
from infra.query.engine import EngineLimits, LoadFailed
from infra.query.sandbox import Rows, Sandbox, TableFile
from infra.query.store import Opened, QueryTables, open_tables, preload_tables, query_prefix

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
