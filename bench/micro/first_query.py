"""The first `query` question on a big NDJSON: how soon after its upload it answers, and the memory it takes.

    python -m bench.micro.first_query [--mb 200] [--redis-url URL] [--no-parts]

One run, one file (`bench.micro.ingest`'s NDJSON, generated under the temp dir, deleted at the end):
  stack     offline model, API and one Celery worker (`bench.service.harness.running_stack`, local blob store);
  upload    the file stored through the API (streamed in 8 MB blocks), which queues its preload;
  question  at once, a `query` job: how many rows have status `timeout` (counted while generating);
  memory    peak RSS of the API, of the worker and of its DuckDB children, and of the worker with its
            children together (`/proc`, sampled every 0.1 s; VmHWM where the process is still there).

Prints the upload's seconds and MB/s, the seconds from the upload's return to the answer, whether the answer
is exact, the job's `query_load` / `query_load_seconds` (`reused`: it found the preload's tables, no second
load), model calls and tokens, the peaks, and the parts: receive + count and store (the API's log line),
the preload's fetch / DuckDB / check / keep (the worker's), then DuckDB's parse vs Parquet write, measured
in this process on the same file after the stack is gone (operator timings of one profiled COPY, with a
load's threads and memory limit), beside the pass a load inferring the columns from every row adds.

Targets (issue 30): the answer <= 10 s after the upload returns; API and worker peak RSS <= 1 GB each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.micro.ingest import MB, blocks, wait_idle, write_ndjson
from bench.report import print_table, verdict

TARGET_SECONDS = 10.0
TARGET_RSS_MB = 1000.0
STATUS = "timeout"
QUESTION = f"How many records have status {STATUS}?"
DUCKDB_CHILD = "infra.query.child"


class Peaks:
    """Peak RSS (MB) of the API, the worker's own processes, its DuckDB children, and the worker's tree in
    total, polled from /proc by a thread (a child that lives 0.1 s may be missed: its VmHWM went with it)."""

    def __init__(self, api: int, worker: int) -> None:
        self.api, self.worker = api, worker
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> Peaks:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.wait(0.1):
            self.sample()

    def sample(self) -> None:
        self._note("api", _status_mb(self.api, "VmHWM"))
        tree = [self.worker, *_descendants(self.worker)]
        sizes = {pid: _status_mb(pid, "VmRSS") for pid in tree}
        self._note("worker tree", sum(sizes.values()))
        for pid, size in sizes.items():
            self._note(
                "duckdb child" if DUCKDB_CHILD in _cmdline(pid) else "worker", max(size, _status_mb(pid, "VmHWM"))
            )

    def _note(self, name: str, mb: float) -> None:
        self.peak[name] = max(self.peak.get(name, 0.0), mb)


def _status_mb(pid: int, field: str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = [int(c) for c in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
            except OSError:
                continue
            found += children
            todo += children
    return found


def ask(path: Path, redis_url: str) -> dict[str, Any]:
    """Upload, then the question at once; the numbers, the job and the stack's log lines."""
    from bench.service.harness import running_stack
    from toolout.devstack.processes import ensure_redis

    ensure_redis(redis_url)
    json_logs = {"TOOLOUT_LOG_FORMAT": "json"}  # the API's own INFO lines too (text logs keep only uvicorn's)
    with (
        running_stack(redis_url, model={}, worker={"concurrency": 4}, extra=json_logs) as stack,
        stack.client() as client,
    ):
        session = client.create_session()
        client.store(session, iter([b'{"warm": "up"}\n' * 1000]))  # the API's counter is loaded and run once
        wait_idle(stack.pid("api"))
        with Peaks(stack.pid("api"), stack.pid("bench-worker")) as peaks:
            started = time.perf_counter()
            meta = client.store(session, blocks(path), tool_name="bench.ndjson", content_type="application/x-ndjson")
            returned, returned_at = time.perf_counter(), time.time()
            job = client.submit(meta["handle"], QUESTION, mode="query", cache=False)
            job = client.wait(job["id"], timeout=900)
            answered = time.perf_counter()
            time.sleep(0.5)  # the preload's keeping and the job's last writes are over: their peaks count
        logs = {s.name: s.log_path.read_text(errors="replace") for s in stack.services}
    return {
        "meta": meta,
        "job": job,
        "upload_s": returned - started,
        "answer_s": answered - returned,
        "finished_after_s": (job.get("finished_at") or 0) - returned_at,
        "peaks": dict(peaks.peak),
        "logs": logs,
    }


def log_parts(logs: dict[str, str], handle: str, size: int) -> list[tuple[str, str]]:
    """The API's line on this upload and the worker's on its preload (JSON logs), as (part, what it says)."""
    found = []
    api = re.findall(rf"upload of {size} bytes: received and measured in ([\d.]+)s, stored in ([\d.]+)s", logs["api"])
    if api:
        found += [("API: receive + count (spool, Meter)", f"{api[-1][0]} s")]
        found += [("API: store (blob put, record, preload queued)", f"{api[-1][1]} s")]
    for pattern, name in (
        (rf"{handle}: (\d+) bytes loaded as tables in ([^\"]+)", "preload: fetch, DuckDB (in its child)"),
        (rf"{handle}: preload (\w+) in ([^\"]+)", "preload: in all"),
    ):
        lines = re.findall(pattern, logs["bench-worker"])
        if lines:
            found.append((name, f"{lines[-1][1]} ({lines[-1][0]})"))
    return found


def duckdb_parts(path: Path) -> list[tuple[str, str]]:
    """DuckDB's parse vs Parquet write on the file, as a sampled load runs them (its threads, memory limit
    and row size), and the pass a load with every row inferred adds (one thread, as that load runs)."""
    from infra.query.engine import EngineLimits, connect, literal, load_thread_count
    from infra.query.loading import SAMPLE_ROWS, SAMPLED_ROW_BYTES

    limits, work = EngineLimits(), Path(tempfile.mkdtemp(prefix="toolout-bench-duckdb-"))
    source = f"read_json({literal(str(path))}, format='newline_delimited', maximum_object_size={SAMPLED_ROW_BYTES}"
    threads, profile = load_thread_count(limits), work / "profile.json"
    conn = connect(limits, work / "spill", threads=threads)
    try:
        conn.execute(f"PRAGMA enable_profiling='json'; PRAGMA profiling_output={literal(str(profile))}")
        started = time.perf_counter()
        conn.execute(f"COPY (SELECT * FROM {source}, sample_size={SAMPLE_ROWS})) TO '{work / 't.parquet'}'")
        copy = time.perf_counter() - started
        conn.execute("PRAGMA disable_profiling")
        timings, parquet_mb = (
            _operator_seconds(json.loads(profile.read_text())),
            (work / "t.parquet").stat().st_size / MB,
        )
        conn.close()
        conn = connect(limits, work / "spill", threads=limits.threads)
        started = time.perf_counter()
        conn.sql(f"SELECT * FROM {source}, sample_size=-1)")
        infer = time.perf_counter() - started
    finally:
        conn.close()
        shutil.rmtree(work, ignore_errors=True)
    return [
        (
            f"DuckDB: one COPY to Parquet ({threads} threads, sampled)",
            f"{copy:.2f} s wall ({parquet_mb:.0f} MB Parquet)",
        ),
        ("    parse (READ_JSON operator, thread-seconds)", f"{timings.get('READ_JSON', 0):.2f} s"),
        ("    Parquet write (COPY_TO_FILE operator, thread-seconds)", f"{timings.get('COPY_TO_FILE', 0):.2f} s"),
        (f"DuckDB: columns inferred from every row ({limits.threads} thread)", f"{infer:.2f} s wall"),
    ]


def _operator_seconds(node: dict[str, Any]) -> dict[str, float]:
    """Each operator's `timing` in a DuckDB JSON profile (a table scan by its function's name)."""
    seconds: dict[str, float] = {}
    for child in node.get("operator", node.get("children", [])):
        name = child.get("extra_info", {}).get("Function") or child.get("name", "")
        seconds[name] = seconds.get(name, 0.0) + float(child.get("timing", 0.0))
        for below, spent in _operator_seconds(child).items():
            seconds[below] = seconds.get(below, 0.0) + spent
    return seconds


def report(path: Path, statuses: Counter[str], args: argparse.Namespace) -> int:
    size, expected = os.path.getsize(path), statuses[STATUS]
    load = os.getloadavg()
    print(
        f"first-query bench: {size / MB:.0f} MB NDJSON, {sum(statuses.values()):,} rows, {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}\nquestion: {QUESTION} (exact: {expected:,})\n"
    )
    run = ask(path, args.redis_url)
    job, meta, peaks = run["job"], run["meta"], run["peaks"]
    usage = job.get("usage") or {}
    right = job.get("status") == "succeeded" and _mentions(job.get("result") or "", expected)
    once = job.get("query_load") != "loaded"
    in_time = run["answer_s"] <= TARGET_SECONDS and right
    rss = f"<= {TARGET_RSS_MB:.0f} MB"
    rows = [
        ("measure", "value", "target", "result"),
        (
            "upload through the API",
            f"{run['upload_s']:.2f} s, {size / MB / run['upload_s']:.1f} MB/s",
            ">= 25 MB/s",
            verdict(size / MB / run["upload_s"] >= 25),
        ),
        (
            "upload return → answer",
            f"{run['answer_s']:.2f} s (finished_at: {run['finished_after_s']:.2f} s)",
            f"<= {TARGET_SECONDS:.0f} s",
            verdict(in_time),
        ),
        (
            "answer exact",
            f"{'yes' if right else 'NO'} ({job.get('status')}, {job.get('mode_used')})",
            "exact",
            verdict(right),
        ),
        (
            "query_load, query_load_seconds",
            f"{job.get('query_load')}, {job.get('query_load_seconds')}",
            "not loaded twice",
            verdict(once),
        ),
        (
            "model calls, tokens in / out",
            f"{usage.get('calls')}, {usage.get('input_tokens')} / {usage.get('output_tokens')}",
            "",
            "",
        ),
        ("peak RSS: API", f"{peaks.get('api', 0):.0f} MB", rss, verdict(peaks.get("api", 0) <= TARGET_RSS_MB)),
        (
            "peak RSS: worker (its own processes)",
            f"{peaks.get('worker', 0):.0f} MB",
            rss,
            verdict(peaks.get("worker", 0) <= TARGET_RSS_MB),
        ),
        (
            "peak RSS: a DuckDB child of the worker",
            f"{peaks.get('duckdb child', 0):.0f} MB",
            rss,
            verdict(peaks.get("duckdb child", 0) <= TARGET_RSS_MB),
        ),
        ("peak RSS: worker + children, summed", f"{peaks.get('worker tree', 0):.0f} MB", "", ""),
        ("tokens counted at store time", f"{meta['tokens']:,}", "", ""),
    ]
    rows += [(name, value, "", "") for name, value in log_parts(run["logs"], meta["handle"], size)]
    if args.parts:
        rows += [(name, value, "", "") for name, value in duckdb_parts(path)]
    print_table(rows)
    if not right:
        print(f"\nthe job's answer: {(job.get('result') or job.get('error') or '')[:600]}")
    return 0 if all(row[3] != "MISS" for row in rows) else 1


def _mentions(text: str, number: int) -> bool:
    plain = re.sub(r"(?<=\d)[, _](?=\d{3}\b)", "", text)
    return re.search(rf"(?<![\d.]){number}(?![\d.])", plain) is not None


def main() -> int:
    args = parse_args()
    directory = Path(tempfile.mkdtemp(prefix="toolout-first-query-"))
    path = directory / "bench.ndjson"
    try:
        statuses = write_ndjson(path, args.mb * MB)
        return report(path, statuses, args)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=200, help="size of the generated NDJSON file, MB")
    parser.add_argument("--no-parts", dest="parts", action="store_false", help="skip DuckDB's parts in this process")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database it may flush")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
