"""What the child process costs a query: `python -m tests.infra.query.measure_child` prints it.

Kept beside the tests (one of them runs it small and holds it under 50 ms) so the bench can move it.
"""

from __future__ import annotations

import json
import resource
import statistics
import tempfile
import time
from pathlib import Path

from extraction.documents.structured import StructuredKind
from infra.query import EngineLimits, QueryRefused, Sandbox, TableFile
from infra.query.loading import load_tables
from infra.query.process import ChildSandbox, take_child

LIMITS = EngineLimits(memory_limit_mb=256, threads=1, statement_timeout_seconds=5.0)
SQL = "SELECT status, count(*) AS n FROM records GROUP BY status ORDER BY status"


def tables(root: Path, rows: int = 2000) -> list[TableFile]:
    """A small output loaded as tables under `root`."""
    source = root / "content.json"
    source.write_text(json.dumps([{"id": i, "status": "paid" if i % 3 else "failed"} for i in range(rows)]))
    loaded = load_tables(source, StructuredKind.JSON, root / "out", LIMITS)
    return [TableFile(t.name, root / "out" / t.file, t.rows) for t in loaded]


def per_query_ms(box: Sandbox | ChildSandbox, n: int) -> float:
    """The median milliseconds of `SQL` on `box`, after one warm-up call."""
    box.query(SQL, 50)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        box.query(SQL, 50)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure_overhead(n: int = 200) -> dict[str, float]:
    """Per-query milliseconds in process and through a warm child; their difference is the child's cost.
    Also what opening a sandbox on a warm spare costs."""
    with tempfile.TemporaryDirectory() as tmp:
        files = tables(Path(tmp))
        take_child().close()  # leaves a warm spare behind
        time.sleep(1.0)
        started = time.perf_counter()
        child = ChildSandbox(files, LIMITS, Path(tmp) / "spill-child")
        open_ms = (time.perf_counter() - started) * 1000
        inline = Sandbox(files, LIMITS, Path(tmp) / "spill")
        try:
            here, there = per_query_ms(inline, n), per_query_ms(child, n)
        finally:
            inline.close()
            child.close()
    return {"in_process_ms": here, "child_ms": there, "overhead_ms": there - here, "open_on_spare_ms": open_ms}


def peak_rss(sql: str) -> dict[str, float | str]:
    """Peak RSS (MB) of the child and of this process for one query, and what the model read."""
    with tempfile.TemporaryDirectory() as tmp:
        box = ChildSandbox(tables(Path(tmp)), LIMITS, Path(tmp) / "spill")
        started = time.perf_counter()
        try:
            said = repr(box.query(sql, 50).rows[:1])[:80]
        except QueryRefused as exc:
            said = exc.message[:120]
        seconds = time.perf_counter() - started
        box.close()
    caller = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"child_mb": box.peak_rss_kib / 1024, "caller_mb": caller, "seconds": seconds, "said": said}


if __name__ == "__main__":
    print(measure_overhead())
    for sql in ("SELECT repeat('x', 20000000) AS s FROM range(51)", "SELECT length(repeat('x', 2000000000))"):
        print(sql, peak_rss(sql))
