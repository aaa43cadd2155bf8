"""Run every benchmark in sequence (what `make bench` calls) and summarise how each one ended.

    python bench/run_all.py [--quick] [--only stats,grep,service,variables,fanout,capacity,quality,index_walk]

Each bench runs in its own interpreter, one after the other (they would compete for the same
cores), prints its own table with targets and PASS/MISS, and is measured against a baseline taken
in its own run. Default sizes are the targets' sizes (11-12 minutes on 2 cores, of which bench_fanout
about 1.5, bench_variables about 1 and capacity about 3); `--quick` shrinks the corpora and repetitions
to check that everything still runs (about 6 minutes, most of it the service stacks) — its ratios are noisier and
not the numbers to quote.

Exit status: 0 when every bench exited 0; otherwise 1 (bench_grep, bench_service, bench_variables,
bench_fanout, capacity and index_walk exit 1 when a target is missed, quality when the query strategy gets an exact
answer wrong; any bench exits non-zero when it crashes — its output above says which).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
QUICK_GREP_LOG = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / "toolout-bench-grep-quick.log"
"""bench_grep reuses a cached log when it is big enough, so the quick run keeps its own, smaller one."""

FULL = {
    "stats": ["bench_stats.py"],
    "grep": ["bench_grep.py"],
    "service": ["bench_service.py"],
    "variables": ["bench_variables.py"],
    "fanout": ["bench_fanout.py"],
    "capacity": ["capacity.py"],
    "quality": ["quality.py"],
    "index_walk": ["index_walk.py"],
}
QUICK = {
    "stats": ["bench_stats.py", "--mb", "20", "--stream-mb", "200", "--repeat", "1"],
    "grep": ["bench_grep.py", "--mb", "20", "--runs", "2", "--path", str(QUICK_GREP_LOG)],
    "service": ["bench_service.py", "--runs", "3", "--upload-mb", "30", "--log-mb", "20"],
    "variables": ["bench_variables.py", "--mb", "20", "--runs", "1", "--small", "100"],
    "fanout": ["bench_fanout.py", "--runs-0ms", "2", "--runs-500ms", "1"],
    "capacity": ["capacity.py", "--quick"],
    "quality": ["quality.py", "--quick"],
    "index_walk": ["index_walk.py", "--jobs", "10000"],
}


def run(name: str, argv: list[str]) -> tuple[int, float]:
    """One bench in a child interpreter, its output streamed straight through; (exit status, seconds)."""
    print(f"\n{'=' * 100}\n{name}: python bench/{' '.join(argv)}\n{'=' * 100}", flush=True)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    status = subprocess.run([sys.executable, str(BENCH_DIR / argv[0]), *argv[1:]], env=env, check=False).returncode
    return status, time.perf_counter() - started


def summary(results: dict[str, tuple[int, float]]) -> str:
    lines = [f"\n{'=' * 100}\nsummary"]
    for name, (status, seconds) in results.items():
        outcome = "ok" if status == 0 else f"exit {status}: a target was missed or the bench failed (see its output)"
        lines.append(f"  {name:<8} {seconds:6.0f} s  {outcome}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repetitions: a smoke run, not numbers to quote"
    )
    parser.add_argument("--only", default=",".join(FULL), help=f"comma-separated subset of {','.join(FULL)}")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(chosen) - set(FULL)
    if unknown:
        parser.error(f"unknown bench(es) {sorted(unknown)}; choose from {','.join(FULL)}")
    plans = QUICK if args.quick else FULL
    results = {name: run(name, plans[name]) for name in chosen}
    print(summary(results))
    return 0 if all(status == 0 for status, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
