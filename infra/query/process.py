"""Each output's sandbox, and each load, in a child process under OS limits, owned by the caller.

A model's SQL can make DuckDB allocate outside its `memory_limit` (string functions, fetched rows)
or spend seconds in one function call its interrupt cannot stop. So it runs in a child
(`infra.query.child`, a plain `python -m` subprocess speaking pickled requests over two pipes): the
child caps its own address space and CPU seconds, this side waits at most the wall clock and reads
at most `max_result_bytes`-ish per answer. A child that passes a limit is killed, never the caller,
and the next call gets a fresh child; the model reads a tool error naming the limit.

A child serves one output for one question (one `ChildSandbox`), never two tenants' data; what is
reused across questions is a warm spare with DuckDB already imported (`take_child`), so opening
costs no Python start. Spares belong to the process that
started them (a forked worker starts its own).
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from extraction.documents.structured import StructuredKind
from infra.query.checking import QueryRefused
from infra.query.engine import EngineLimits, LoadFailed
from infra.query.loading import LoadedTable, samplable
from infra.query.sandbox import Rows, TableFile

GRACE_SECONDS = 2.0
"""The wall clock past a statement's own timeout (its interrupt answers first, with a better message)."""
OPEN_SECONDS = 60.0
ANSWER_OVERHEAD_BYTES = 1 << 20


class ChildLimit(Exception):
    """The child passed a limit (or died) and was killed; `limit` is which: time, cpu, memory, output, crash."""

    def __init__(self, limit: str, peak_rss_kib: int) -> None:
        super().__init__(limit)
        self.limit, self.peak_rss_kib = limit, peak_rss_kib


@dataclass
class Child:
    """One child process and its two pipe ends."""

    proc: subprocess.Popen[bytes]
    to_child: Connection
    from_child: Connection
    owner: int = field(default_factory=os.getpid)
    peak_rss_kib: int = 0
    busy: bool = False
    """A request was sent and its answer not read (the caller was interrupted: a task time limit)."""

    @classmethod
    def start(cls) -> Child:
        into_r, into_w = os.pipe()
        back_r, back_w = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-m", "infra.query.child", str(into_r), str(back_w)],
            pass_fds=(into_r, back_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the worker's group is not the child's
            env=_child_environment(),
        )
        os.close(into_r)
        os.close(back_w)
        return cls(proc, Connection(into_w, readable=False), Connection(back_r, writable=False))

    def call(self, request: tuple[Any, ...], *, seconds: float, max_bytes: int) -> tuple[str, Any]:
        """The child's answer (`ok`, value) / (`refused` | `failed`, message), or `ChildLimit` (it was killed)."""
        try:
            self.busy = True
            self.to_child.send_bytes(pickle.dumps(request))
            if not self.from_child.poll(seconds):
                raise ChildLimit("time", self.kill())
            status, value, peak = pickle.loads(self.from_child.recv_bytes(max_bytes))
            self.busy = False
        except (EOFError, BrokenPipeError, ConnectionResetError):
            raise ChildLimit(self._death(), self.kill()) from None
        except OSError:  # recv_bytes: the answer is longer than max_bytes
            raise ChildLimit("output", self.kill()) from None
        self.peak_rss_kib = max(self.peak_rss_kib, peak)
        return status, value

    def _death(self) -> str:
        """Which limit ended the child: SIGXCPU is the CPU limit; an abort or a fault is most often an
        allocation that failed under RLIMIT_AS; anything else is a crash."""
        code = self.proc.wait()
        if code == -signal.SIGXCPU:
            return "cpu"
        return "memory" if code in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS) else "crash"

    def kill(self) -> int:
        """End the child now; the peak RSS in KiB it last reported (a killed child reports nothing more)."""
        if self.proc.returncode is None:
            self.peak_rss_kib = max(self.peak_rss_kib, _high_water_kib(self.proc.pid))
            self.proc.kill()
            self.proc.wait()
        self.close()
        return self.peak_rss_kib

    def close(self) -> None:
        """Close the pipes: the child reads EOF and exits (or is already gone); a busy child is killed."""
        if self.busy and self.proc.returncode is None:
            self.busy = False
            self.kill()
            return
        for end in (self.to_child, self.from_child):
            if not end.closed:
                end.close()
        if self.proc.returncode is None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


CHILD_ENVIRONMENT = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR")
"""What the child inherits of the worker's environment: enough to start Python, none of its secrets
(keys, webhook secret, cloud credentials), whatever a query might one day find a way to read."""


def _child_environment() -> dict[str, str]:
    return {name: os.environ[name] for name in CHILD_ENVIRONMENT if name in os.environ}


def _high_water_kib(pid: int) -> int:
    """A live process's peak RSS (VmHWM), read just before it is killed; 0 when it is already gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmHWM:")), 0)
    except OSError:
        return 0


_spares: list[Child] = []
_spares_lock = threading.Lock()


def take_child() -> Child:
    """A started child (a warm spare when there is one), and a new spare starting behind it."""
    with _spares_lock:
        mine = [c for c in _spares if c.owner == os.getpid() and c.proc.poll() is None]
        _spares[:] = mine[1:]
        _spares.append(Child.start())
    return mine[0] if mine else Child.start()


def start_spare() -> None:
    """A warm spare for this process's first `take_child`, unless it has one: a child is slow to start
    (Python, DuckDB, its function list), which the worker pays when it is ready instead of in its first load."""
    with _spares_lock:
        if not any(c.owner == os.getpid() and c.proc.poll() is None for c in _spares):
            _spares.append(Child.start())


@atexit.register
def _close_spares() -> None:
    with _spares_lock:
        for child in _spares:
            if child.owner == os.getpid():
                child.close()
        _spares.clear()


NARROW = (
    "Filter earlier (WHERE), select fewer columns, aggregate, and avoid building huge values "
    "(repeat, string_agg over everything, joining a big table with itself)."
)
NOT_LOADABLE = "The output is not queried as tables."


def limit_message(exc: ChildLimit, limits: EngineLimits, what: str, seconds: float, advice: str = NARROW) -> str:
    """What the model (or the job's reason) reads when `what` passed a limit: which, and how to narrow."""
    said = {
        "time": f"{what} ran longer than {seconds:g} s",
        "cpu": f"{what} used more than {limits.process_cpu_seconds:g} CPU seconds",
        "memory": f"{what} needed more memory than the {limits.process_memory_mb} MB its process may add",
        "output": f"{what}'s result was larger than {limits.max_result_bytes} bytes",
        "crash": f"{what}'s process ended unexpectedly",
    }[exc.limit]
    return f"{said} and its process was stopped. {advice}"


@dataclass
class ChildSandbox:
    """`Sandbox`'s interface, each call answered by a child process (module docstring)."""

    tables: list[TableFile]
    limits: EngineLimits
    temp_dir: Path
    _child: Child | None = field(default=None, init=False, repr=False)
    peak_rss_kib: int = field(default=0, init=False)
    """The highest RSS any of this sandbox's children reached (for tests and the bench)."""

    def __post_init__(self) -> None:
        self._open()

    @property
    def names(self) -> set[str]:
        return {t.name for t in self.tables}

    def columns(self, table: str) -> list[tuple[str, str]]:
        return list(self._ask(("columns", table)))

    def sample(self, table: str, n: int) -> Rows:
        return self._ask(("sample", table, n))  # type: ignore[no-any-return]

    def query(self, sql: str, max_rows: int) -> Rows:
        return self._ask(("query", sql, max_rows))  # type: ignore[no-any-return]

    @property
    def pid(self) -> int | None:
        return None if self._child is None else self._child.proc.pid

    def _open(self) -> Child:
        child = take_child()
        tables = [(t.name, t.path, t.rows) for t in self.tables]
        try:
            status, value = child.call(
                ("open", tables, self.limits, self.temp_dir), seconds=OPEN_SECONDS, max_bytes=1 << 16
            )
        except ChildLimit as exc:
            raise LoadFailed(limit_message(exc, self.limits, "opening the tables", OPEN_SECONDS, NOT_LOADABLE)) from exc
        if status != "ok":
            child.close()
            raise LoadFailed(f"the output's tables do not open: {value}")
        self._child = child
        return child

    def _ask(self, request: tuple[Any, ...]) -> Any:
        child = self._child or self._open()
        seconds = self.limits.statement_timeout_seconds + GRACE_SECONDS
        try:
            status, value = child.call(request, seconds=seconds, max_bytes=self._max_answer())
        except ChildLimit as exc:
            self._child = None  # the next call opens a fresh child
            raise QueryRefused(limit_message(exc, self.limits, "the query", seconds)) from exc
        finally:
            self.peak_rss_kib = max(self.peak_rss_kib, child.peak_rss_kib)
        if status == "fault":
            self.close()  # the next call opens a fresh child (`child.Answer`)
        if status != "ok":
            raise QueryRefused(str(value))
        return value

    def _max_answer(self) -> int:
        return 4 * self.limits.max_result_bytes + ANSWER_OVERHEAD_BYTES  # characters → UTF-8 bytes, pickling

    def close(self) -> None:
        if self._child is not None:
            self._child.close()
            self._child = None


def load_in_child(source: Path, kind: StructuredKind, out_dir: Path, limits: EngineLimits) -> list[LoadedTable]:
    """`loading.load_tables` in a child of its own under the same limits, within `load_timeout_seconds` in all,
    the tables checked to open there (`infra.query.child`): sampled first (`loading.samplable` documents),
    and when that does not hold, with every row inferred in a fresh child (the first one's threads and
    buffers would count against the second's address space)."""
    deadline = time.monotonic() + limits.load_timeout_seconds
    if samplable(source, kind):
        tables = _load_once(source, kind, out_dir, limits, sampled=True)
        if tables is not None:
            return tables
        left = deadline - time.monotonic()
        if left <= 0:
            raise LoadFailed(f"loading took longer than {limits.load_timeout_seconds:g} s and was stopped")
        limits = replace(limits, load_timeout_seconds=left)
    return _load_once(source, kind, out_dir, limits, sampled=False) or []


def _load_once(
    source: Path, kind: StructuredKind, out_dir: Path, limits: EngineLimits, *, sampled: bool
) -> list[LoadedTable] | None:
    child = take_child()
    try:
        status, value = child.call(
            ("load", str(source), kind.value, str(out_dir), limits, sampled),
            seconds=limits.load_timeout_seconds + GRACE_SECONDS,
            max_bytes=ANSWER_OVERHEAD_BYTES,
        )
    except ChildLimit as exc:
        if sampled:
            return None  # over a limit on every core: every row inferred, on `threads`, may still fit
        raise LoadFailed(
            limit_message(exc, limits, "loading the output", limits.load_timeout_seconds, NOT_LOADABLE)
        ) from exc
    finally:
        child.close()
    if status != "ok":
        if sampled:
            return None
        raise LoadFailed(str(value))
    return None if value is None else list(value)
