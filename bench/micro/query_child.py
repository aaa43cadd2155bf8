"""What the query child process costs a query, against DuckDB in this process, in one run.

    python -m bench.micro.query_child [--queries 200] [--bound-ms 50] [--rss]

Loads a small output (2,000 rows) as tables, then runs the same GROUP BY `--queries` times on a `Sandbox` in
this process and on a warm `ChildSandbox` (every query a round trip to `python -m infra.query.child`): the
median milliseconds of each, their difference (the child's cost per query) and what opening a sandbox on the
warm spare child costs. `--rss` also prints the child's and this process's peak RSS for two huge-value queries.

Exit status 1 when the per-query overhead is over `--bound-ms` (issue 28: under 50 ms on a warm child).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200, help="queries timed on each sandbox")
    parser.add_argument("--bound-ms", type=float, default=50.0, help="the child's per-query overhead target")
    parser.add_argument("--rss", action="store_true", help="also the peak RSS of two huge-value queries")
    args = parser.parse_args(argv)
    measured = measure_overhead(args.queries)
    ok = measured["overhead_ms"] < args.bound_ms
    print(f"query child, {args.queries} queries each (median ms per query)")
    print(f"  in process        {measured['in_process_ms']:8.2f}")
    print(f"  warm child        {measured['child_ms']:8.2f}")
    print(
        f"  overhead          {measured['overhead_ms']:8.2f}   target < {args.bound_ms:g}   {'PASS' if ok else 'MISS'}"
    )
    print(f"  open on a spare   {measured['open_on_spare_ms']:8.2f}")
    if args.rss:
        for sql in ("SELECT repeat('x', 20000000) AS s FROM range(51)", "SELECT length(repeat('x', 2000000000))"):
            print(sql, peak_rss(sql))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
