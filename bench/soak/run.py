"""Soak: N agents doing what agents do, for M minutes, against a real stack with two workers.

    python -m bench.soak.run [--agents 16] [--minutes 10] [--deleters 0.5] [--rss-bound-mb 30] [--json out.json]

The stack is its own (`toolout.devstack.stack.start_private`): a private redis, the offline model, the API and two
Celery workers as processes. Each agent loops: open a session, store a log output and a small JSON one,
resolve a `$ref` into the JSON, grep the log, submit an extraction (full-chunked, read-grep, truncate or
auto, in turn), sometimes cancel it, then end its session. Half the agents (`--deleters`) delete their
session while the job still runs (0.1-0.6 s after submitting it); the others wait for the job's end first.

It prints each operation's count, error rate, p50 and p99, the RSS of the API and of each worker (with
their children) every `--sample-seconds`, and the Redis keys before and after, and exits 1 when:
- any request failed (a 5xx, a connection error, or a 4xx an agent did not expect),
- any log (API, workers, offline model) holds a traceback or an ERROR line,
- a process's RSS at the end is more than `--rss-bound-mb` above its value after the warm-up
  (`--warmup-minutes`, the first minute by default),
- Redis holds keys that were not there before the run, once the stack has had `--drain-seconds` to settle.

`--snapshots` makes the API trace its allocations (`PYTHONTRACEMALLOC=1`, which slows it and adds to its RSS, so
the API's RSS bound and slope are not judged then) and prints what grew in it from the end of the warm-up to the end
of the run: the source lines by bytes gained, then the object types by count gained (`infra.process.snapshots`).
`--snapshot-workers` does the same for each worker and the API (no bound or slope is judged then).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.soak import variables
from bench.soak.snapshots import Snapshots
from bench.soak.stats import Stats
from infra.process.late_imports import PREFIX
from toolout.client import TERMINAL, ToolOutClient
from toolout.devstack.stack import Stack, start_private
from toolout.devstack.stack_watch import (
    LogWatch,
    key_names,
    leftovers,
    memory_parts,
    own_rss_mb,
    rss_growth,
    rss_mb,
    slopes,
    wait_for_baseline,
)

MODES = ("full-chunked", "read-grep", "truncate", "auto")
CANCEL_SHARE = 0.15
TOOL_ARGS = '{"service": "payments", "range": "1h"}'


def log_document(rng: random.Random) -> bytes:
    """A service log of 20-120 KB (2-12 chunks at the stack's 4k window) with a few planted errors."""
    lines = []
    for i in range(rng.randint(250, 1500)):
        level = "ERROR" if rng.random() < 0.01 else "INFO"
        lines.append(f"2026-11-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z {level} payments[{i % 7}] batch {i} settled ok")
    return ("\n".join(lines) + "\n").encode()


def agent_loop(url: str, n: int, stop_at: float, delete_mid_job: bool, stats: Stats, shape: str = "mixed") -> None:
    """One agent's conversations, one after another, until `stop_at` (the last one ends its session too)."""
    rng = random.Random(n)
    turn = n
    with ToolOutClient(url, timeout=120) as client:
        while time.monotonic() < stop_at:
            conversation(client, rng, MODES[turn % len(MODES)], delete_mid_job, stats, shape)
            turn += 1


def conversation(
    client: ToolOutClient, rng: random.Random, mode: str, delete_mid_job: bool, stats: Stats, shape: str = "mixed"
) -> None:
    """Open a session, do one conversation of `shape` in it, delete it whatever happened."""
    session = stats.timed("create_session", client.create_session)
    if not isinstance(session, str):
        return
    with stats.lock:
        stats.sessions += 1
    stats.own(session)
    try:
        if shape == "variables":
            variables.work(client, rng, session, stats)
        else:
            work(client, rng, session, mode, delete_mid_job, stats)
    finally:
        stats.timed("delete_session", lambda: client.delete_session(session))


def work(client: ToolOutClient, rng: random.Random, session: str, mode: str, mid_job: bool, stats: Stats) -> None:
    config = json.dumps({"service": "payments", "limits": {"rps": rng.randint(1, 99)}, "hosts": ["a", "b"]})
    stats.own(stats.timed("store", lambda: client.store(session, config, tool_name="config.get", name="cfg")))
    stored = stats.timed(
        "store", lambda: client.store(session, log_document(rng), tool_name="logs.fetch", tool_args=TOOL_ARGS)
    )
    stats.own(stored)
    stats.timed("resolve", lambda: client.resolve(session, {"rps": "$cfg.limits.rps", "host": "$cfg.hosts[-1]"}))
    if not isinstance(stored, dict):
        return
    handle = stored["handle"]
    stats.timed("grep", lambda: client.grep(handle, r"ERROR .*batch \d+", regex=True, max_matches=20))
    job = stats.timed(
        "submit", lambda: client.submit(handle, "the failed settlement batches", mode, cache=rng.random() < 0.3)
    )
    if not isinstance(job, dict):
        return
    if rng.random() < CANCEL_SHARE:
        time.sleep(rng.uniform(0.05, 0.4))
        stats.timed("cancel", lambda: client.cancel(job["id"]), expected=(409,))
    if mid_job:
        time.sleep(rng.uniform(0.1, 0.6))
        with stats.lock:
            stats.deleted_mid_job += 1
        return
    ended = stats.timed("wait", lambda: client.wait(job["id"], timeout=300))
    if isinstance(ended, dict) and ended["status"] not in TERMINAL:
        stats.error("wait", f"job {job['id']} still {ended['status']} after 300 s")


# --- the run -------------------------------------------------------------------------------------
@dataclass
class Sample:
    at: float
    api_mb: float
    workers_mb: list[float]
    """Each worker with its children (the DuckDB sandboxes of the loads and questions running then)."""
    keys: int
    workers_own_mb: list[float] = field(default_factory=list)
    """Each worker process alone: what its slope is judged on."""
    api_parts: dict[str, float] = field(default_factory=dict)
    """The API process's heap, mapped files, threads, fds and children (`toolout.devstack.stack_watch.memory_parts`):
    what tells a step in its RSS from a climb."""
    workers_parts: list[dict[str, float]] = field(default_factory=list)
    """The same for each worker process."""


def sampler(stack: Stack, every: float, samples: list[Sample], done: threading.Event, t0: float) -> None:
    client = stack.redis()
    while True:
        pids = stack.pids("soak-worker")
        workers, own = [rss_mb([pid]) for pid in pids], [own_rss_mb(pid) for pid in pids]
        api = stack.pids("api")
        parts = memory_parts(api[0]) if api else {}
        workers_parts = [memory_parts(pid) for pid in pids]
        samples.append(Sample(time.monotonic() - t0, rss_mb(api), workers, client.dbsize(), own, parts, workers_parts))
        if done.wait(every):
            return


def warm_up(stack: Stack, shape: str) -> None:
    """One conversation of each mode, waited for: the store-wide keys exist before the baseline is taken."""
    stats = Stats()
    with ToolOutClient(stack.api_url, timeout=120) as client:
        for mode in MODES:
            conversation(client, random.Random(0), mode, False, stats, shape)
    if stats.errors:
        raise RuntimeError(f"the warm-up failed: {dict(stats.errors)}")


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    snapshots = root / "snapshots"
    traced = {"PYTHONTRACEMALLOC": "1", "TOOLOUT_MEMORY_SNAPSHOT_DIR": str(snapshots)}
    api_extra = traced if args.snapshots else {}
    extra = traced if args.snapshot_workers else {}
    stack = start_private(root, workers=2, model_latency_ms=args.model_latency_ms, extra=extra, api_extra=api_extra)
    try:
        warm_up(stack, args.shape)
        redis = stack.redis()
        time.sleep(2)
        baseline = key_names(redis)
        logs = LogWatch(stack.logs())
        stats, samples, done = Stats(), list[Sample](), threading.Event()
        t0 = time.monotonic()
        watcher = threading.Thread(target=sampler, args=(stack, args.sample_seconds, samples, done, t0), daemon=True)
        watcher.start()
        deleters = round(args.agents * args.deleters)
        stop_at = t0 + args.minutes * 60
        agents = [
            threading.Thread(target=agent_loop, args=(stack.api_url, n, stop_at, n < deleters, stats, args.shape))
            for n in range(args.agents)
        ]
        for agent in agents:
            agent.start()
        snap = (
            Snapshots(snapshot_pids(stack, args), snapshots, args.warmup_minutes * 60 + t0)
            if traced_names(args)
            else None
        )
        for agent in agents:
            agent.join()
        wall = time.monotonic() - t0
        grown = snap.grown() if snap else {}
        left, settle = wait_for_baseline(redis, baseline, timeout=args.drain_seconds)
        kinds = leftovers(redis, left, stats.owners)
        time.sleep(args.sample_seconds)  # one sample after the drain: RSS at rest
        done.set()
        watcher.join()
        result = report(args, stats, samples, baseline, (left, kinds), settle, logs, wall, deleters)
        return result | {"grown": grown.pop("api", []), "grown_workers": grown}
    finally:
        stack.stop()


def traced_names(args: argparse.Namespace) -> set[str]:
    """The processes whose allocations are traced (the workers' tracing reaches the API too, `start_private`'s
    `extra`): their RSS bound and slope are not judged."""
    workers = {"worker-1", "worker-2"} if args.snapshot_workers else set()
    return ({"api"} if args.snapshots or workers else set()) | workers


def snapshot_pids(stack: Stack, args: argparse.Namespace) -> dict[str, int]:
    workers = {f"worker-{n}": pid for n, pid in enumerate(stack.pids("soak-worker"), start=1)}
    return {name: pid for name, pid in ({"api": stack.pids("api")[0]} | workers).items() if name in traced_names(args)}


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def report(args, stats, samples, baseline, leftover, settle, logs, wall, deleters) -> dict[str, Any]:
    left, kinds = leftover
    ops = {
        op: {
            "count": len(times),
            "errors": len(stats.errors.get(op, [])),
            "p50_ms": round(percentile(times, 50) * 1000, 1),
            "p99_ms": round(percentile(times, 99) * 1000, 1),
        }
        for op, times in sorted(stats.latencies.items())
    }
    total = sum(op["count"] for op in ops.values())
    errors = sum(op["errors"] for op in ops.values())
    warm = next((s for s in samples if s.at >= args.warmup_minutes * 60), samples[0])
    end = samples[-1]
    growth = rss_growth(warm, end)
    problems = logs.problems()
    failures = []
    if errors:
        failures.append(f"{errors} failed request(s)")
    if problems:
        failures.append(f"{sum(map(len, problems.values()))} traceback/ERROR line(s) in {sorted(problems)}")
    traced = traced_names(args)  # tracemalloc's own tables grow with what it traces
    bounded = {name: mb for name, mb in growth.items() if not name.endswith("+children") and name not in traced}
    if over := {name: round(mb, 1) for name, mb in bounded.items() if mb > args.rss_bound_mb}:
        failures.append(f"RSS grew past +{args.rss_bound_mb} MB after warm-up: {over}")
    if left:
        failures.append(f"{len(left)} Redis key(s) left behind: {sorted(left)[:10]}")
    slope = slopes(samples, args.warmup_minutes * 60, wall)
    judged = {name: mb for name, mb in slope.items() if not name.endswith("+children") and name not in traced}
    if args.max_slope is not None and (steep := {n: mb for n, mb in judged.items() if mb > args.max_slope}):
        failures.append(f"RSS slope after warm-up past {args.max_slope} MB/min: {steep}")
    return {
        "agents": args.agents,
        "deleting_mid_job": deleters,
        "minutes": args.minutes,
        "wall_seconds": round(wall, 1),
        "sessions": stats.sessions,
        "deleted_mid_job": stats.deleted_mid_job,
        "requests": total,
        "errors": errors,
        "error_rate": errors / total if total else 0.0,
        "operations": ops,
        "error_samples": {op: what[:3] for op, what in stats.errors.items()},
        "rss": [
            {
                "t": round(s.at),
                "api": round(s.api_mb, 1),
                "workers": [round(w, 1) for w in s.workers_mb],
                "workers_own": [round(w, 1) for w in s.workers_own_mb],
                "keys": s.keys,
                "api_parts": {name: round(value, 1) for name, value in s.api_parts.items()},
                "workers_parts": [{name: round(value, 1) for name, value in p.items()} for p in s.workers_parts],
            }
            for s in samples
        ],
        "rss_growth_after_warmup_mb": {name: round(mb, 1) for name, mb in growth.items()},
        "rss_slope_mb_per_min": slope,
        "keys_before": len(baseline),
        "keys_left_behind": sorted(left),
        "keys_left_without_ttl": kinds["without_ttl"],
        "keys_left_with_ttl_of_deleted": kinds["ttl_of_deleted"],
        "keys_settled_seconds": round(settle, 1),
        "quiet_task_stops": logs.count(r"stopped, the job was canceled or deleted"),
        "log_problems": {name: lines[:5] for name, lines in problems.items()},
        "late_imports": late_imports(logs.paths),
        "failures": failures,
    }


def late_imports(paths: list[Path]) -> dict[str, list[str]]:
    """Per log, the modules its process imported after its warm-up (`infra.process.late_imports`), whole logs read:
    each is an import to move into the warm-up, or a one-off RSS step the slope then shows."""
    found = {}
    for path in paths:
        text = path.read_text(errors="replace") if path.exists() else ""
        lines = [line.split(PREFIX, 1)[1].rstrip('"}') for line in text.splitlines() if PREFIX in line]
        if lines:
            found[path.name] = lines
    return found


def print_report(result: dict[str, Any]) -> None:
    print(
        f"\nsoak: {result['agents']} agents ({result['deleting_mid_job']} delete their session mid-job) for "
        f"{result['minutes']} min ({result['wall_seconds']} s wall): {result['sessions']} sessions, "
        f"{result['deleted_mid_job']} deleted mid-job, {result['requests']} requests, {result['errors']} errors "
        f"({result['error_rate']:.3%}); {result['quiet_task_stops']} task(s) stopped quietly on an ended job"
    )
    print(f"\n{'operation':<16}{'count':>8}{'errors':>8}{'p50 ms':>10}{'p99 ms':>10}")
    for op, row in result["operations"].items():
        print(f"{op:<16}{row['count']:>8}{row['errors']:>8}{row['p50_ms']:>10}{row['p99_ms']:>10}")
    print(f"\n{'t (s)':>6}{'API MB':>9}  {'API anon/file/threads/fds/children':<36}{'workers MB (own)':<18}", end="")
    print(f"{'(with children)':<20}keys  workers anon/file/threads/fds/children")
    for sample in result["rss"]:
        own, tree, api = sample["workers_own"], sample["workers"], _parts(sample["api_parts"])
        workers = "  ".join(_parts(p) for p in sample.get("workers_parts", []))
        print(f"{sample['t']:>6}{sample['api']:>9}  {api:<36}{own!s:<18}{tree!s:<20}{sample['keys']:>5}  {workers}")
    print(
        f"\nRSS growth after warm-up (MB): {result['rss_growth_after_warmup_mb']}\nRSS slope after warm-up (MB/min): "
        f"{result['rss_slope_mb_per_min']}\nRedis keys: {result['keys_before']} before, "
        f"{len(result['keys_left_behind'])} left behind (settled in {result['keys_settled_seconds']} s): "
        f"{len(result['keys_left_without_ttl'])} without a TTL, {len(result['keys_left_with_ttl_of_deleted'])} with "
        "a TTL of a deleted session or output"
    )
    for name, grown in {"the API": result.get("grown", []), **result.get("grown_workers", {})}.items():
        if grown:
            print(f"\nwhat grew in {name} after the warm-up (tracemalloc, then gc's objects by type):")
            print("\n".join(f"  {line}" for line in grown))
    for op, what in result["error_samples"].items():
        print(f"errors in {op}: {what}")
    for name, lines in result["log_problems"].items():
        print(f"{name}: {lines}")
    for name, modules in result.get("late_imports", {}).items():
        print(f"{name}: {len(modules)} late import(s): " + "; ".join(modules[:40]))
    print("\nFAIL: " + "; ".join(result["failures"]) if result["failures"] else "\nPASS")


def _parts(parts: dict[str, float]) -> str:
    return "/".join(f"{parts.get(k, 0):g}" for k in ("anon_mb", "file_mb", "threads", "fds", "children"))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=16)
    parser.add_argument("--shape", choices=("mixed", "variables"), default="mixed", help="what a conversation does")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--deleters", type=float, default=0.5, help="share of agents deleting their session mid-job")
    parser.add_argument("--rss-bound-mb", type=float, default=30)
    parser.add_argument("--warmup-minutes", type=float, default=1)
    parser.add_argument(
        "--max-slope", type=float, help="fail when a process's RSS slope after warm-up passes this MB/min"
    )
    parser.add_argument("--sample-seconds", type=float, default=10)
    parser.add_argument("--drain-seconds", type=float, default=30, help="how long Redis may take to settle")
    parser.add_argument("--model-latency-ms", type=int, default=50)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument(
        "--snapshots", action="store_true", help="trace the API's allocations; print what grew after the warm-up"
    )
    parser.add_argument(
        "--snapshot-workers", action="store_true", help="the same for each worker (slows them: judge no slope)"
    )
    parser.add_argument("--keep-logs", type=Path, help="copy the stack's logs (API, workers, model) here at the end")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="toolout-soak-") as root:
        try:
            result = run(args, Path(root))
        finally:
            if args.keep_logs:  # the stack's logs go with its temp dir: keep them to read a failure's tracebacks
                shutil.copytree(Path(root) / "logs", args.keep_logs, dirs_exist_ok=True)
    print_report(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
