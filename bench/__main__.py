"""Run the benchmarks with targets in sequence (what `make bench` calls) and summarise how each one ended.

    python -m bench [--quick] [--only NAME …] [--list] [--redis-url URL]

Each bench runs in its own interpreter (`python -m bench.<group>.<name>`), one after the other (they
would compete for the same cores), prints its own table with targets and PASS/MISS, and is measured
against a baseline taken in its own run. Default sizes are the targets' sizes (11-12 minutes on 2 cores,
of which fanout about 1.5, variables about 1 and capacity about 3); `--quick` shrinks the corpora and
repetitions to check that everything still runs (about 6 minutes, most of it the service stacks) — its
ratios are noisier and not the numbers to quote. `--list` prints each bench's name and module.
`--redis-url` goes to every bench that takes one (each flushes that database: never one with data).

Exit status: 0 when every bench exited 0; otherwise 1 (grep, query_child, index_walk, service, variables, fanout and
capacity exit 1 when a target is missed — stats prints its MISS lines but exits 0 —, quality when the
query strategy gets an exact answer wrong; any bench exits non-zero when it crashes — its output above
says which).

Not run here: the benches that need something this runner cannot assume (RabbitMQ: service.brokers;
deepagents: service.deepagents), the long ones (service.provider_limits, soak.run, soak.bursts,
soak.upload_burst) and the one-off probes of bench/profiles/; each says how to run it in its docstring.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import REPO_ROOT

QUICK_GREP_LOG = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / "toolout-bench-grep-quick.log"
"""The grep bench reuses a cached log when it is big enough, so the quick run keeps its own, smaller one."""


@dataclass(frozen=True)
class Bench:
    """One bench: its module, and the arguments of its quick form (a smoke run, not numbers to quote)."""

    module: str
    quick: tuple[str, ...] = ()
    redis: bool = False
    """Whether it takes `--redis-url` (a database it flushes)."""


BENCHES = {
    "stats": Bench("bench.micro.stats", ("--mb", "20", "--stream-mb", "200", "--repeat", "1")),
    "ingest": Bench("bench.micro.ingest", ("--mb", "50", "--check-mb", "5"), redis=True),
    "grep": Bench("bench.micro.grep", ("--mb", "20", "--runs", "2", "--path", str(QUICK_GREP_LOG))),
    "query_child": Bench("bench.micro.query_child", ("--queries", "30")),
    "html_view": Bench("bench.micro.html_view", ("--mb", "10")),
    "index_walk": Bench("bench.micro.index_walk", ("--jobs", "10000"), redis=True),
    "s3": Bench("bench.micro.s3", ("--mb", "16", "--reads", "50", "--runs", "1")),
    "service": Bench("bench.service.end_to_end", ("--runs", "3", "--upload-mb", "30", "--log-mb", "20"), True),
    "variables": Bench("bench.service.variables", ("--mb", "20", "--runs", "1", "--small", "100"), True),
    "fanout": Bench("bench.service.fanout", ("--runs-0ms", "2", "--runs-500ms", "1"), True),
    "capacity": Bench("bench.capacity.run", ("--quick",)),
    "quality": Bench("bench.quality.run", ("--quick",)),
}


def run(name: str, bench: Bench, args: argparse.Namespace) -> tuple[int, float]:
    """One bench in a child interpreter, its output streamed straight through; (exit status, seconds)."""
    redis = ["--redis-url", args.redis_url] if args.redis_url and bench.redis else []
    argv = ["-m", bench.module, *(bench.quick if args.quick else ()), *redis]
    print(f"\n{'=' * 100}\n{name}: python {' '.join(argv)}\n{'=' * 100}", flush=True)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    status = subprocess.run([sys.executable, *argv], env=env, cwd=REPO_ROOT, check=False).returncode
    return status, time.perf_counter() - started


def summary(results: dict[str, tuple[int, float]]) -> str:
    lines = [f"\n{'=' * 100}\nsummary"]
    for name, (status, seconds) in results.items():
        outcome = "ok" if status == 0 else f"exit {status}: a target was missed or the bench failed (see its output)"
        lines.append(f"  {name:<10} {seconds:6.0f} s  {outcome}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few repetitions: a smoke run, not numbers to quote"
    )
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"a subset of {', '.join(BENCHES)}")
    parser.add_argument("--list", action="store_true", help="print each bench's name and module, run nothing")
    parser.add_argument("--redis-url", help="a Redis database the benches may flush (default: each bench's own)")
    args = parser.parse_args(argv)
    args.only = [n for names in (args.only or list(BENCHES)) for n in names.split(",") if n]
    if unknown := sorted(set(args.only) - set(BENCHES)):
        parser.error(f"unknown bench(es) {unknown}; choose from {', '.join(BENCHES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print("\n".join(f"{name:<10} python -m {BENCHES[name].module}" for name in args.only))
        return 0
    results = {name: run(name, BENCHES[name], args) for name in args.only}
    print(summary(results))
    return 0 if all(status == 0 for status, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
