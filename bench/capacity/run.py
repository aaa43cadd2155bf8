"""Capacity: what one job, one session and one upload cost, measured on a real stack, and a 10x load run.

    python -m bench.capacity.run [--quick] [--jobs 20] [--scale 10] [--chunks 6] [--sessions 20]
                             [--model-latency-ms 0] [--json out.json]

The stack is its own (`toolout.devstack.stack.start_private`): a private redis-server (so `INFO commandstats` sees only
this stack), moto's S3 server over HTTP as the blob store, the offline model, the API and two Celery
workers (8 threads each), each a process. What it measures (`bench/capacity/probe.py` says how):

  per job      full-chunked at --chunks and at 2 chunks, read-grep, truncate: --jobs jobs submitted at
               once, then waited for. Redis commands (those inside Lua included), Redis CPU, network
               bytes, memory at the peak (in flight) and after (the finished records kept for
               TOOLOUT_JOB_TTL_SECONDS), S3 requests, worker CPU per model call, API CPU per request.
  per session  --sessions sessions at once: create, store a small JSON output as variable `cfg` (inline
               in Redis), store a 1 MB log (one S3 PUT), resolve `$cfg.limits.rps`, then delete.
  per upload   one upload above the multipart threshold (S3 requests of a multipart upload).
  load run     today's largest concurrent-jobs test is R1 (tests/integration/test_faults.py): 20 jobs x
               6 chunks at once. The same job measured at --jobs and at --jobs x --scale at once; the
               per-job figures' ratio must stay within the targets (counts 1.2x, CPU 1.5x).

CPU figures are each process's own user + system time, not wall time, so other work on a shared
machine does not inflate them (it does stretch the wall times, which are printed only for context).
The figures feed the projection in `bench/capacity/model.py` (10,000 concurrent jobs, 1 M sessions a
day) and docs/scaling.md. `--quick` (about 2 minutes): 10 jobs, 5x, 8 sessions, a 20 MB multipart upload.
Exit status 1 when a load-run ratio misses its target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import BENCH_ROOT
from bench.capacity.model import Measured, print_model
from bench.capacity.probe import Cost, Meter, RequestCounter, create_bucket, moto_service
from bench.report import print_table, verdict
from bench.service.jobs import check_job, sized_log
from extraction.strategies.mapreduce import ModelLimits
from infra.redis import keys
from infra.redis.slot_index import SlotIndex
from toolout.client import ToolOutClient
from toolout.devstack import datasets, processes
from toolout.devstack.stack import SMALL_WINDOW_ENV, Stack, start_private

MB = 1_000_000
BUCKET = "toolout-capacity"
EXTRACT = datasets.POOL_INCIDENT.request
LIMITS = ModelLimits(
    int(SMALL_WINDOW_ENV["TOOLOUT_MODEL_CONTEXT_TOKENS"]), int(SMALL_WINDOW_ENV["TOOLOUT_MODEL_MAX_OUTPUT_TOKENS"])
)
COUNT_RATIO, CPU_RATIO = 1.2, 1.5
METER_COMMANDS = ("info", "scan", "memory|usage")
"""What the meter itself sends (readings, the peak sampler's key walk): left out of every count."""


# --- work ----------------------------------------------------------------------------------------
def run_jobs(meter: Meter, client: ToolOutClient, handle: str, mode: str, n: int, chunks: int | None) -> Measured:
    """`n` jobs submitted at once (16 submitters), each then waited for; what they cost, per job."""
    with ThreadPoolExecutor(16) as pool, meter.measuring(settle=lambda: settled(meter)) as cost:
        started = time.monotonic()
        ids = list(pool.map(lambda _: client.submit(handle, EXTRACT, mode, cache=False)["id"], range(n)))
        jobs = list(pool.map(lambda job_id: client.wait(job_id, timeout=600), ids))
        wall = time.monotonic() - started
    for job in jobs:
        if chunks is not None:
            check_job(job, chunks)
        elif job["status"] != "succeeded":
            raise RuntimeError(f"{mode} job {job['id']} ended {job['status']}: {job.get('error')}")
    calls = sum(job["usage"]["calls"] for job in jobs)
    return measured(f"{mode}" + (f", {chunks} chunks" if chunks else ""), cost[0], meter, n, calls, wall)


def active_jobs(client: Any) -> int:
    """Live jobs over every copy of the active-jobs index (one per cluster slot in use)."""
    return sum(int(client.zcard(key)) for key in SlotIndex(client, keys.JOBS_ACTIVE).copies())


def settled(meter: Meter, timeout: float = 60) -> None:
    """Until no job is active and the broker's queues are empty: the leftovers are what a finished job keeps."""
    client = meter.redis
    queues = ("extract", "map", "reduce", "agent", "webhooks", "unacked")
    processes.wait_for(
        lambda: active_jobs(client) == 0 and sum(client.llen(q) for q in queues[:-1]) == 0,
        timeout=timeout,
        interval=0.1,
    )
    time.sleep(1.0)


def run_sessions(meter: Meter, client: ToolOutClient, n: int, large: bytes) -> tuple[Measured, Measured]:
    """`n` sessions at once: open and fill them (measured: memory per live session), then delete them."""
    config = json.dumps({"service": "payments", "limits": {"rps": 42}, "hosts": ["a", "b"]})

    def fill(_: int) -> str:
        session = client.create_session()
        client.store(session, config, tool_name="config.get", name="cfg", content_type="application/json")
        client.store(session, large, tool_name="logs.fetch", tool_args='{"range": "1h"}')
        client.resolve(session, {"rps": "$cfg.limits.rps"})
        return session

    with ThreadPoolExecutor(8) as pool:
        with meter.measuring(settle=lambda: time.sleep(0.5)) as filled:
            started = time.monotonic()
            sessions = list(pool.map(fill, range(n)))
            fill_wall = time.monotonic() - started
        with meter.measuring(settle=lambda: time.sleep(1.0)) as deleted:
            started = time.monotonic()
            list(pool.map(client.delete_session, sessions))
            delete_wall = time.monotonic() - started
    return (
        measured("session: create, 2 stores, resolve", filled[0], meter, n, 0, fill_wall),
        measured("session: delete", deleted[0], meter, n, 0, delete_wall),
    )


def run_upload(meter: Meter, client: ToolOutClient, size: int) -> Measured:
    """One upload above the multipart threshold (16 MiB parts), streamed in 1 MiB blocks."""
    session = client.create_session()
    with meter.measuring(settle=lambda: time.sleep(0.5)) as cost:
        started = time.monotonic()
        client.store(session, datasets.service_log(size), tool_name="logs.fetch")
        wall = time.monotonic() - started
    client.delete_session(session)
    return measured(f"upload {size / MB:.0f} MB (multipart)", cost[0], meter, 1, 0, wall)


def measured(name: str, cost: Cost, meter: Meter, units: int, calls: int, wall: float) -> Measured:
    for command in METER_COMMANDS:
        cost.commands.pop(command, None)
    idle = meter.idle_commands_per_s * cost.seconds
    return Measured(name, units, calls, wall, cost, max(0.0, cost.total_commands - idle))


# --- stack ---------------------------------------------------------------------------------------
def start(root: Path, latency_ms: int) -> tuple[Stack, processes.Service, Meter, RequestCounter]:
    shutil.rmtree(root, ignore_errors=True)
    s3_port = processes.free_port()
    moto = moto_service(s3_port, root / "logs").start()
    try:
        moto.wait_ready(60)
        endpoint = f"http://127.0.0.1:{s3_port}"
        create_bucket(endpoint, BUCKET)
        s3_env = {
            "TOOLOUT_BLOB_STORE": f"s3://{BUCKET}/blobs",
            "TOOLOUT_S3_ENDPOINT_URL": endpoint,
            "TOOLOUT_S3_ACCESS_KEY_ID": "testing",
            "TOOLOUT_S3_SECRET_ACCESS_KEY": "testing",
            "TOOLOUT_MAX_CONCURRENT_JOBS_PER_TENANT": "5000",
        }
        stack = start_private(root, workers=2, model_latency_ms=latency_ms, extra=s3_env)
    except BaseException:
        moto.stop()
        raise
    counter = RequestCounter()
    meter = Meter(
        stack.redis(),
        stack.pids("api"),
        stack.pids("soak-worker"),
        moto.log_path,
        counter,
    )
    return stack, moto, meter, counter


def warm_up(client: ToolOutClient, handle: str) -> None:
    """One job of each mode: first model calls, imports, the plan cache; not measured."""
    for mode in ("full-chunked", "read-grep", "truncate"):
        client.wait(client.submit(handle, EXTRACT, mode, cache=False)["id"], timeout=300)


# --- report --------------------------------------------------------------------------------------
def ratio_rows(one: Measured, many: Measured) -> list[tuple[str, str, str, str]]:
    """Per-job figures at 1x and at the load run, and whether they hold."""
    rows = [("per job (full-chunked)", f"{one.units} jobs | {many.units} jobs", "ratio target", "result")]
    for label, get, target in (
        ("Redis commands", Measured.commands_per_unit, COUNT_RATIO),
        ("Redis keys kept after the job (B)", Measured.retained_per_unit, COUNT_RATIO),
        ("S3 requests", Measured.s3_per_unit, COUNT_RATIO),
        ("Redis CPU (ms)", Measured.redis_ms_per_unit, CPU_RATIO),
        ("worker CPU per model call (ms)", Measured.worker_ms_per_call, CPU_RATIO),
        ("API CPU per request (ms)", Measured.api_ms_per_request, CPU_RATIO),
    ):
        a, b = get(one), get(many)
        ratio = b / a if a else (1.0 if not b else float("inf"))
        rows.append((label, f"{a:,.1f} | {b:,.1f}  ({ratio:.2f}x)", f"<= {target:.1f}x", verdict(ratio <= target)))
    peak_a, peak_b = one.peak_per_unit(), many.peak_per_unit()
    rows.append(("Redis keys at the peak, in flight (B; info)", f"{peak_a:,.0f} | {peak_b:,.0f}", "", ""))
    (used_peak_a, used_a), (used_peak_b, used_b) = one.used_memory_per_unit(), many.used_memory_per_unit()
    rows.append(
        (
            "INFO used_memory growth, peak / after (B; info)",
            f"{used_peak_a:,.0f} / {used_a:,.0f} | {used_peak_b:,.0f} / {used_b:,.0f}",
            "",
            "",
        )
    )
    rows.append(("wall s (loaded shared machine; info)", f"{one.wall:.1f} | {many.wall:.1f}", "", ""))
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 jobs, 5x, 8 sessions, 20 MB upload: a smoke run")
    parser.add_argument("--jobs", type=int, default=20, help="jobs at once at 1x (R1: 20)")
    parser.add_argument("--scale", type=int, default=10, help="the load run: --jobs x --scale jobs at once")
    parser.add_argument("--chunks", type=int, default=6, help="chunks of the full-chunked job (R1: 6)")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--upload-mb", type=int, default=40, help="the multipart upload's size")
    parser.add_argument("--model-latency-ms", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every measurement here")
    args = parser.parse_args()
    if args.quick:
        args.jobs, args.scale, args.sessions, args.upload_mb = 10, 5, 8, 20
    return args


def measure_all(args: argparse.Namespace, meter: Meter, client: ToolOutClient) -> dict[str, Measured]:
    doc, small = sized_log(args.chunks, EXTRACT, LIMITS), sized_log(2, EXTRACT, LIMITS)
    handle = client.store(client.create_session(), doc, tool_name="logs.fetch")["handle"]
    small_handle = client.store(client.create_session(), small, tool_name="logs.fetch")["handle"]
    warm_up(client, handle)
    meter.learn_idle(3.0)
    large = b"".join(datasets.service_log(MB))
    filled, deleted = run_sessions(meter, client, args.sessions, large)
    out = {"session_fill": filled, "session_delete": deleted}
    out["upload"] = run_upload(meter, client, args.upload_mb * MB)
    out["full"] = run_jobs(meter, client, handle, "full-chunked", args.jobs, args.chunks)
    out["full_2"] = run_jobs(meter, client, small_handle, "full-chunked", args.jobs, 2)
    out["read_grep"] = run_jobs(meter, client, handle, "read-grep", args.jobs, None)
    out["truncate"] = run_jobs(meter, client, handle, "truncate", args.jobs, None)
    out["load"] = run_jobs(meter, client, handle, "full-chunked", args.jobs * args.scale, args.chunks)
    return out


def main() -> int:
    args = parse_args()
    root = BENCH_ROOT / "capacity"
    print(f"toolout capacity bench: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, logs in {root}")
    started = time.monotonic()
    stack, moto, meter, counter = start(root, args.model_latency_ms)
    try:
        with ToolOutClient(stack.api_url, http=counter.client(stack.api_url)) as client:
            results = measure_all(args, meter, client)
    finally:
        stack.stop()
        moto.stop()
    print(f"(measured in {time.monotonic() - started:.0f} s, idle Redis traffic {meter.idle_commands_per_s:.0f} cmd/s)")
    print_model(results, args)
    print(
        f"\nLoad run: {args.jobs} jobs x {args.chunks} chunks at once, then x{args.scale} "
        "(today's largest concurrent-jobs test, R1, is 20 jobs x 6 chunks)"
    )
    rows = ratio_rows(results["full"], results["load"])
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps({k: asdict(v) for k, v in results.items()}, indent=1, default=str))
    return 1 if any(row[3] == "MISS" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
