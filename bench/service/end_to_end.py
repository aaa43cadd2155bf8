"""P1, P2, P3, P5: the service end to end — real processes, Redis, litellm, the offline model.

    python -m bench.service.end_to_end [--only p1,p2,p3,p5] [--runs 5] [--concurrency 8,32]
                                       [--upload-mb 100] [--log-mb 50]

Every part starts its own stack (offline model, API and Celery worker as separate processes, the
Redis database of --redis-url flushed first, a local blob store under var/bench) and compares
against a baseline measured in the same run:

  P1  a 16-chunk full-chunked job at zero model latency vs a bare Celery chord of 16 no-op tasks
      + a no-op body on the same broker, backend and worker process     target <= 2.0x
      The difference is then split: the job's 17 model calls fanned out with no queue at all,
      once through a bare httpx client (the model's own serving) and once through litellm.
  P2  a 32-chunk job at 500 ms model latency vs one map (a 1-chunk job's wall) + one reduce (one
      model call through litellm), on one worker at each --concurrency  target <= 1.3x
  P3  a --upload-mb upload through the API vs raw tiktoken `encode_ordinary_batch` on the same
      bytes in this process                                             target >= 0.8x
      and the API process's peak RSS growth during the upload           target <= 64 MB
  P5  tokens a read-grep needle query sends to the model, as a share of the document's tokens
      (--log-mb service log with planted incidents)                     target <= 5%

A small model window (TOOLOUT_MODEL_CONTEXT_TOKENS=4096) makes a few hundred KB enough for 16 or
32 chunks, and the offline model answers in at most 200 bytes there, so every map output fits one
final reduce: a job is exactly one chord of maps plus one reduce, the shape the baselines price.
The offline model runs at log level WARNING (its per-request log lines are the test double's cost,
not toolout's). Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass

from bench.report import run_parts, verdict
from bench.service.harness import (
    BENCH_ROOT,
    SHORT_ANSWERS,
    SMALL_WINDOW,
    running_stack,
    start_worker,
    worker_names,
)
from bench.service.jobs import (
    check_job,
    chord_seconds,
    fan_out_seconds,
    job_requests,
    litellm_client,
    median_seconds,
    raw_http_client,
    sized_log,
    small_limits,
    timed,
    timed_job,
    upload,
)
from bench.service.upload_grep import p3, p5
from toolout.client import ToolOutClient
from toolout.devstack import datasets, processes
from toolout.devstack.stack import Stack

MB = 1_000_000
PARTS = ("p1", "p2", "p3", "p5")
TARGET_P1 = 2.0
TARGET_P2 = 1.3
P2_LATENCY_S = 0.5


# --- P1 ----------------------------------------------------------------------------------------------
@dataclass
class P1Result:
    doc_bytes: int
    jobs: list[float]
    chords: list[float]
    records: list[dict]
    floor_http: float
    floor_litellm: float


def p1(args) -> list[tuple[str, str, str, str]]:
    extract, limits = datasets.POOL_INCIDENT.request, small_limits()
    doc = sized_log(16, extract, limits)
    with (
        running_stack(
            args.redis_url,
            model={"TOOLOUT_OFFLINE_LATENCY_MS": "0", **SHORT_ANSWERS},
            worker={"concurrency": 8, "app": "bench.service.celery_noop"},
            extra=SMALL_WINDOW,
        ) as stack,
        stack.client() as client,
    ):
        handle = upload(client, doc)["handle"]
        jobs, chords, records = measure_p1(client, handle, extract, args.runs)
        maps, reduce = job_requests(doc, extract, limits, 16)
        llm = litellm_client(stack)
        via_litellm = lambda messages: llm.complete(messages, max_tokens=limits.max_output_tokens)  # noqa: E731
        via_http = raw_http_client(stack, limits.max_output_tokens)
        floor_http = median_seconds(lambda: fan_out_seconds(via_http, maps, reduce, 8), args.runs)
        floor_litellm = median_seconds(lambda: fan_out_seconds(via_litellm, maps, reduce, 8), args.runs)
    return p1_rows(P1Result(len(doc), jobs, chords, records, floor_http, floor_litellm))


def measure_p1(
    client: ToolOutClient, handle: str, extract: str, runs: int
) -> tuple[list[float], list[float], list[dict]]:
    """Jobs and chords interleaved (so drift hits both), after one warm-up of each."""
    timed_job(client, handle, extract, "full-chunked")
    chord_seconds(16)
    jobs, chords, records = [], [], []
    for _ in range(runs):
        seconds, job = timed_job(client, handle, extract, "full-chunked")
        check_job(job, 16)
        jobs.append(seconds)
        records.append(job)
        chords.append(chord_seconds(16))
    return jobs, chords, records


def p1_rows(r: P1Result) -> list[tuple[str, str, str, str]]:
    job_s, chord_s = statistics.median(r.jobs), statistics.median(r.chords)
    ratio = job_s / chord_s
    queued_ms = statistics.median(((j["started_at"] or j["created_at"]) - j["created_at"]) * 1000 for j in r.records)
    server_ms = statistics.median(((j["finished_at"] or 0) - j["created_at"]) * 1000 for j in r.records)
    calls = r.records[-1]["usage"]["calls"]
    rest_ms = (job_s - chord_s - r.floor_litellm) * 1000
    return [
        ("measure", "value", "target", "result"),
        (
            f"bare chord: 16 no-op tasks + no-op body (median of {len(r.chords)})",
            f"{chord_s * 1000:.0f} ms",
            "baseline",
            "",
        ),
        (
            f"16-chunk job, {r.doc_bytes / 1000:.0f} KB, model latency 0 (median of {len(r.jobs)})",
            f"{job_s * 1000:.0f} ms",
            "",
            "",
        ),
        ("    ratio job / chord", f"{ratio:.2f}x", f"<= {TARGET_P1:.1f}x", verdict(ratio <= TARGET_P1)),
        ("    server side: created -> started / -> finished", f"{queued_ms:.0f} ms / {server_ms:.0f} ms", "", ""),
        (f"where job - chord = {(job_s - chord_s) * 1000:.0f} ms goes ({calls} model calls):", "", "", ""),
        (
            "    the job's calls, bare httpx, 8 threads, no queue",
            f"{r.floor_http * 1000:.0f} ms (offline model serving)",
            "",
            "",
        ),
        (
            "    the job's calls via litellm, 8 threads, no queue",
            f"{r.floor_litellm * 1000:.0f} ms (+{(r.floor_litellm - r.floor_http) * 1000:.0f} ms litellm client)",
            "",
            "",
        ),
        ("    rest: start step, per-task Redis, contention", f"{rest_ms:.0f} ms", "", ""),
    ]


# --- P2 ----------------------------------------------------------------------------------------------
def p2(args) -> list[tuple[str, str, str, str]]:
    extract, limits = datasets.POOL_INCIDENT.request, small_limits()
    big, one = sized_log(32, extract, limits), sized_log(1, extract, limits)
    runs = max(3, args.runs - 2)
    model = {"TOOLOUT_OFFLINE_LATENCY_MS": str(int(P2_LATENCY_S * 1000)), **SHORT_ANSWERS}
    first, *others = args.concurrency
    with (
        running_stack(args.redis_url, model=model, worker={"concurrency": first}, extra=SMALL_WINDOW) as stack,
        stack.client() as client,
    ):
        big_handle, one_handle = upload(client, big)["handle"], upload(client, one)["handle"]
        timed_job(client, one_handle, extract, "full-chunked")  # warm-up
        one_map = statistics.median(job_walls(client, one_handle, extract, 1, runs))
        maps, reduce = job_requests(big, extract, limits, 32)
        llm = litellm_client(stack)
        complete = lambda messages: llm.complete(messages, max_tokens=limits.max_output_tokens)  # noqa: E731
        one_reduce = median_seconds(lambda: timed(lambda: complete(reduce)), runs)
        walls = {first: statistics.median(job_walls(client, big_handle, extract, 32, runs))}
        for concurrency in others:
            walls[concurrency] = restarted_worker_wall(
                stack, client, (big_handle, one_handle), extract, concurrency, runs
            )
        floor = median_seconds(lambda: fan_out_seconds(complete, maps, reduce, 32), runs)
    return p2_rows(one_map, one_reduce, walls, floor, runs)


def restarted_worker_wall(
    stack: Stack, client: ToolOutClient, handles: tuple[str, str], extract: str, concurrency: int, runs: int
) -> float:
    """Replace the stack's worker with one of `concurrency` threads; the median 32-chunk wall on it."""
    for name in worker_names(stack):
        stack.stop_worker(name)
    start_worker(stack, f"bench-worker-{concurrency}", concurrency=concurrency)
    timed_job(client, handles[1], extract, "full-chunked")  # warm-up: the new process's first model calls
    return statistics.median(job_walls(client, handles[0], extract, 32, runs))


def job_walls(client: ToolOutClient, handle: str, extract: str, chunks: int, runs: int) -> list[float]:
    walls = []
    for _ in range(runs):
        seconds, job = timed_job(client, handle, extract, "full-chunked")
        check_job(job, chunks)
        walls.append(seconds)
    return walls


def p2_rows(
    one_map: float, one_reduce: float, walls: dict[int, float], floor: float, runs: int
) -> list[tuple[str, str, str, str]]:
    ideal = one_map + one_reduce
    rows = [
        ("measure", "value", "target", "result"),
        (f"one map: 1-chunk job wall (median of {runs})", f"{one_map * 1000:.0f} ms", "", ""),
        ("one reduce: one model call via litellm", f"{one_reduce * 1000:.0f} ms", "", ""),
        ("    one map + one reduce", f"{ideal * 1000:.0f} ms", "baseline", ""),
    ]
    for concurrency, wall in walls.items():
        waves = -(-32 // concurrency)
        ratio = wall / ideal
        rows.append(
            (
                f"32-chunk job, worker concurrency {concurrency}: {waves} map wave{'s' * (waves > 1)}",
                f"{wall * 1000:.0f} ms = {ratio:.2f}x",
                f"<= {TARGET_P2:.1f}x",
                verdict(ratio <= TARGET_P2),
            )
        )
        if waves > 1 and waves * P2_LATENCY_S > TARGET_P2 * ideal:
            rows.append(
                (
                    f"    missed by construction: {waves} waves x {P2_LATENCY_S * 1000:.0f} ms",
                    f"{waves * P2_LATENCY_S * 1000:.0f} ms of maps alone",
                    "",
                    "",
                )
            )
    rows.append(
        (
            "    info: its 33 calls via litellm, 32 threads, no queue",
            f"{floor * 1000:.0f} ms = {floor / ideal:.2f}x",
            "",
            "",
        )
    )
    return rows


# --- report --------------------------------------------------------------------------------------------


TITLES = {
    "p1": "P1 orchestration overhead: 16-chunk job at zero model latency vs a bare Celery chord",
    "p2": "P2 map parallelism: 32 chunks at 500 ms model latency vs one map + one reduce",
    "p3": "P3 upload: throughput vs raw tiktoken, API memory",
    "p5": "P5 read-grep: tokens sent to the model for a needle query",
}
RUNNERS = {"p1": p1, "p2": p2, "p3": p3, "p5": p5}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(PARTS), help="comma-separated parts to run (p1,p2,p3,p5)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per P1 measure (P2 uses max(3, runs - 2))")
    parser.add_argument("--upload-mb", type=int, default=100, help="P3 upload size, MB")
    parser.add_argument("--log-mb", type=int, default=50, help="P5 service log size, MB")
    parser.add_argument(
        "--concurrency", default="8,32", help="P2 worker thread counts, one worker process each, in turn"
    )
    parser.add_argument(
        "--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database this bench may flush"
    )
    args = parser.parse_args()
    args.only = [p.strip().lower() for p in args.only.split(",") if p.strip()]
    args.concurrency = [int(c) for c in args.concurrency.split(",") if c.strip()]
    unknown = set(args.only) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}; choose from {','.join(PARTS)}")
    return args


def main() -> int:
    args = parse_args()
    os.environ["TOOLOUT_REDIS_URL"] = args.redis_url  # this process's Celery app (chords, pings): the stack's broker
    processes.ensure_redis(args.redis_url)
    print(f"toolout service bench: {os.cpu_count()} cores, Redis {args.redis_url}, logs in {BENCH_ROOT / 'logs'}\n")
    return run_parts(args.only, RUNNERS, TITLES, args)


if __name__ == "__main__":
    sys.exit(main())
