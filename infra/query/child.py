"""The process a model's SQL and a document's load run in: `python -m infra.query.child <in_fd> <out_fd>`.

Started by `infra.query.process`, it reads pickled requests from the parent on one pipe and writes
pickled answers on the other, one at a time. Before each request it sets its own OS limits: its
address space (RLIMIT_AS) may grow by `process_memory_mb` over what it had at start, so an allocation
past it fails inside DuckDB (an out-of-memory error the model reads) instead of growing a worker; the
CPU seconds (RLIMIT_CPU) of this request are capped, and the kernel ends the process past them. The
parent kills it on its wall clock. Errors that are the model's or the document's come back as
messages; anything else as its type only (its text may hold paths), never as a traceback.
"""

from __future__ import annotations

import math
import pickle
import resource
import sys
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import duckdb

from extraction.documents.structured import StructuredKind
from infra.query.checking import QueryRefused, builtin_functions
from infra.query.engine import EngineLimits, LoadFailed
from infra.query.loading import NotSampled, load_tables
from infra.query.sandbox import Sandbox, TableFile

Answer = tuple[str, Any, int]
"""(`ok` | `refused` | `failed` | `fault`, the value or the message, peak RSS in KiB). A `fault` is a
query's unexpected error: the parent answers it as a tool error and replaces this process, whose state
(a DuckDB connection past a fatal error, an address space near its limit) it no longer trusts."""


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _baseline() -> int:
    """The address space with one DuckDB database open, before any limit: each database reserves
    far more address space up front than it keeps resident, which RLIMIT_AS must leave room for. The function
    allow-list is read here too, so no second database is opened under the limit."""
    builtin_functions()
    conn = duckdb.connect(":memory:", config={"threads": 1})
    try:
        return _address_space()
    finally:
        conn.close()


@dataclass
class _Server:
    base_bytes: int = field(default_factory=_baseline)
    box: Sandbox | None = None

    def answer(self, request: tuple[Any, ...]) -> Answer:
        op, *args = request
        try:
            value = self._run(op, args)
        except QueryRefused as exc:
            return "refused", exc.message, _peak_kib()
        except LoadFailed as exc:
            return "failed", exc.message, _peak_kib()
        except MemoryError:
            return (*_fault(op, "it needed more memory than its process may use"), _peak_kib())
        except Exception as exc:  # noqa: BLE001 - any failure is an answer: the parent must not hang or crash
            return (*_fault(op, f"it failed ({type(exc).__name__})"), _peak_kib())
        return "ok", value, _peak_kib()

    def _run(self, op: str, args: list[Any]) -> Any:
        if op == "load":
            return self._load(*args)
        if op == "open":
            tables, limits, temp_dir = args
            self._limit(limits)
            self.box = Sandbox([TableFile(*t) for t in tables], limits, Path(temp_dir))
            return None
        if self.box is None:
            raise QueryRefused("no tables are open")
        self._limit(self.box.limits)
        return getattr(self.box, op)(*args)

    def _load(self, source: str, kind: str, out_dir: str, limits: EngineLimits, sampled: bool) -> Any:
        """The tables, checked to open as a sandbox would (what is kept must open); None: not sampled."""
        self._limit(limits)
        out = Path(out_dir)
        try:
            tables = load_tables(Path(source), StructuredKind(kind), out, limits, sampled=sampled)
        except NotSampled:
            return None  # the parent loads it again, with every row inferred, in a fresh child
        Sandbox([TableFile(t.name, out / t.file, t.rows) for t in tables], limits, out / "spill").close()
        return tables

    def _limit(self, limits: EngineLimits) -> None:
        """This request's memory and CPU allowance (the hard limits stay open: each request sets its own).
        The memory is `process_memory_mb` over one open database (`_baseline`): a load opens one, a sandbox one."""
        memory = self.base_bytes + limits.process_memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (memory, resource.RLIM_INFINITY))
        used = resource.getrusage(resource.RUSAGE_SELF)
        cpu = math.ceil(used.ru_utime + used.ru_stime + limits.process_cpu_seconds)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, resource.RLIM_INFINITY))


def _fault(op: str, what: str) -> tuple[str, str]:
    """An unexpected error as an answer: a load's is `LoadFailed` (the fallback), a query's a `fault`."""
    return ("failed" if op in ("load", "open") else "fault"), f"the {op} stopped: {what}"


def _peak_kib() -> int:
    """This process's peak RSS since it started (VmHWM: `ru_maxrss` would count the parent's, from the fork)."""
    with open("/proc/self/status") as f:
        return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)


def serve(inbox: Connection, outbox: Connection) -> None:
    """Answer requests until the parent closes its end (it exited, or is done with this process)."""
    server = _Server()
    while True:
        try:
            request = pickle.loads(inbox.recv_bytes())
        except EOFError:
            return
        outbox.send_bytes(pickle.dumps(server.answer(request)))


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a process the kernel ends for CPU leaves no core file
    serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
