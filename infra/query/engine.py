"""DuckDB connections with toolout's limits, and the one place DuckDB's errors become ours.

Every connection (the loader's and the sandbox's) is opened here with a memory limit, a private
spill directory, capped threads and extension auto-loading and auto-installing off, so neither
a big document nor a model's query can take a worker's memory or reach for the network.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from extraction.errors import ExtractionError
from infra.settings import Settings

DuckDBError = duckdb.Error


@dataclass(frozen=True)
class EngineLimits:
    """What one DuckDB connection may use (the `query_*` settings)."""

    memory_limit_mb: int = 512
    threads: int = 1
    load_threads: int = 0
    """DuckDB threads of a load (a document to Parquet); 0: one per core (`load_thread_count`)."""
    max_temp_mb: int = 8192
    statement_timeout_seconds: float = 10.0
    max_sql_chars: int = 8000
    """A longer SQL text is refused before it is parsed (1 MB of SQL parsed for 23 s)."""
    max_cell_chars: int = 1000
    """A value of unbounded size (text, list, struct) is cut to this many characters inside DuckDB."""
    max_result_bytes: int = 256 * 1024
    """Rows stop once their values add up to this many characters, whatever `max_rows` says."""
    load_timeout_seconds: float = 600.0
    """A load (document to Parquet) that runs longer is stopped: the output does not load."""
    process_memory_mb: int = 2048
    """The child process's address space (RLIMIT_AS) beyond what it had when it started."""
    process_cpu_seconds: float = 60.0
    """CPU seconds one query or load may take in the child (RLIMIT_CPU) before it is killed."""

    @classmethod
    def from_settings(cls, settings: Settings) -> EngineLimits:
        """The `query_*` settings as limits (`workers.job.query.engine_limits`)."""
        return cls(
            memory_limit_mb=settings.query_memory_limit_mb,
            threads=settings.query_threads,
            load_threads=settings.query_load_threads,
            max_temp_mb=settings.query_max_temp_mb,
            statement_timeout_seconds=settings.query_statement_timeout_seconds,
            max_sql_chars=settings.query_max_sql_chars,
            max_cell_chars=settings.query_max_cell_chars,
            max_result_bytes=settings.query_max_result_bytes,
            load_timeout_seconds=settings.query_load_timeout_seconds,
            process_memory_mb=settings.query_process_memory_mb,
            process_cpu_seconds=settings.query_process_cpu_seconds,
        )


class LoadFailed(ExtractionError):
    """The output does not load as tables: the query strategy does not apply to it."""

    code = "not_structured"


def load_thread_count(limits: EngineLimits) -> int:
    """A load's threads: `load_threads`, or one per core this process may run on (it runs alone in its child)."""
    return limits.load_threads or max(1, len(os.sched_getaffinity(0)))


def connect(limits: EngineLimits, temp_dir: Path, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory database that spills to `temp_dir`, never loads an extension by itself; `threads`
    None: `limits.threads` (a query's)."""
    temp_dir.mkdir(parents=True, exist_ok=True)
    return duckdb.connect(
        ":memory:",
        config={
            "memory_limit": f"{limits.memory_limit_mb}MB",
            "threads": max(1, limits.threads if threads is None else threads),
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


class StatementTimer:
    """Interrupts `conn`'s statements past a deadline, from one thread started with the connection.

    A thread per statement is not enough: once DuckDB's allocator holds most of the address space a
    child may use (RLIMIT_AS, `infra.query.child`), a new thread's stack no longer fits, `start()`
    raises, and every later query of that sandbox would fail. An interrupt reaches only the statement
    running at that moment (not a bind, not Python between statements), so it repeats every 50 ms
    until the block ends."""

    def __init__(self, conn: duckdb.DuckDBPyConnection) -> None:
        self._conn = conn
        self._wake = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        threading.Thread(target=self._watch, name="toolout-query-timer", daemon=True).start()

    @contextmanager
    def limit(self, seconds: float) -> Iterator[None]:
        """The block's statements are interrupted from `seconds` on."""
        self._set(time.monotonic() + seconds)
        try:
            yield
        finally:
            self._set(None)

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()

    def _set(self, deadline: float | None) -> None:
        with self._wake:
            self._deadline = deadline
            self._wake.notify()

    def _watch(self) -> None:
        with self._wake:
            while not self._closed:
                left = None if self._deadline is None else self._deadline - time.monotonic()
                if left is not None and left <= 0:
                    self._conn.interrupt()
                    left = 0.05
                self._wake.wait(left)


@contextmanager
def interrupted_after(conn: duckdb.DuckDBPyConnection, seconds: float) -> Iterator[None]:
    """`StatementTimer` for one block (a load: its process runs one and ends)."""
    timer = StatementTimer(conn)
    try:
        with timer.limit(seconds):
            yield
    finally:
        timer.close()
