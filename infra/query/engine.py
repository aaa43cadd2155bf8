"""DuckDB connections with toolout's limits, and the one place DuckDB's errors become ours.

Every connection (the loader's and the sandbox's) is opened here with a memory limit, a private
spill directory, capped threads and extension auto-loading and auto-installing off, so neither
a big document nor a model's query can take a worker's memory or reach for the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from extraction.errors import ExtractionError

DuckDBError = duckdb.Error


@dataclass(frozen=True)
class EngineLimits:
    """What one DuckDB connection may use (the `query_*` settings)."""

    memory_limit_mb: int = 512
    threads: int = 1
    max_temp_mb: int = 8192
    statement_timeout_seconds: float = 10.0


class LoadFailed(ExtractionError):
    """The output does not load as tables: the query strategy does not apply to it."""

    code = "not_structured"


def connect(limits: EngineLimits, temp_dir: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory database that spills to `temp_dir`, never loads an extension by itself."""
    temp_dir.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(
        ":memory:",
        config={
            "memory_limit": f"{limits.memory_limit_mb}MB",
            "threads": max(1, limits.threads),
            "temp_directory": str(temp_dir),
            "max_temp_directory_size": f"{limits.max_temp_mb}MB",
            "autoload_known_extensions": False,
            "autoinstall_known_extensions": False,
            "preserve_insertion_order": False,
        },
    )


def first_line(exc: BaseException) -> str:
    """DuckDB's message without its caret diagram: what a model or a log needs."""
    text = str(exc).strip()
    return text.split("\n\n", 1)[0].strip() or type(exc).__name__


def ident(name: str) -> str:
    """`name` as a quoted SQL identifier (table names may hold dots: `"data.results"`)."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
