"""F1: fan-out — a toolout full-chunked job vs a plain asyncio.gather of the same litellm calls.

    python -m bench.service.fanout [--chunks 32,128] [--latencies 0,500] [--runs-0ms 5] [--runs-500ms 3]
                                 [--concurrency 32] [--redis-url redis://127.0.0.1:6379/10]
                                 [--tail-fraction 0.05 --tail-multiplier 10 --runs-tail 20]

Then the tail case (`bench/service/fanout_tails.py`, issue 30): 32 chunks @ 500 ms with 5 % of calls 10x
slow, toolout (hedged calls) vs gather vs LCEL, median and p95 over 20 jobs a side (`--tail-fraction 0`
skips it).

One stack per model latency (offline model at TOOLOUT_OFFLINE_LATENCY_MS, API, and ONE Celery
worker process of --concurrency threads: one process with 32 calls in flight is the layout of the
baseline, one event loop under a 32-slot semaphore). For each chunk count, a service log sized
so that the worker's chunk planner cuts it into that many chunks (the service benches' small window
and 200-byte answers), uploaded through the API. Chunk budgets no longer depend on the job's
nonce (they are measured with the widest one), so every job plans the same chunks; `plan_like`
still checks that the baseline plans the job's count. Then, alternating after one warm-up each:

  toolout   POST /v1/extractions (full-chunked, "cache": false: every run is a real job) until a GET
            shows it terminal (polled every 10 ms)
  baseline  in this process, with no queue: every map call at once under asyncio.Semaphore(32),
            then the reduce tree toolout's pipeline builds from those answers (plan_reduce_groups
            level after level: groups reduced in parallel, a one-output group passed through, one
            final reduce). Each call is `litellm.acompletion` with the exact keyword arguments the
            worker's client sends (LiteLLMClient._request), prompts from extraction.texts.prompts, chunks
            from the same planner, answers parsed by the same final-report parser.

Runs alternate, after one warm-up of each, and each waits until the stack's processes and this
one are idle (`settle`: litellm's background logging of one side must not land in the other's).
The job and the baseline must map the same chunks (the bench stops otherwise); their calls, reduce
levels and input tokens are printed side by side (each did its own reduce tree).
Targets (medians): 32 chunks @ 500 ms <= 1.05x and 33 calls (32 maps + one reduce),
128 chunks @ 500 ms <= 1.10x with the baseline doing the same two levels and <= 135 calls, 32 chunks
@ 0 ms <= 1.4x; 128 chunks @ 0 ms is printed for information. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.report import print_table, verdict
from bench.service.fanout_baseline import Gather, GatherRun, check_same_work, ms
from bench.service.fanout_docs import EVERY_CHUNK_REQUEST, plan_like, sized_doc
from bench.service.harness import SHORT_ANSWERS, SMALL_WINDOW, running_stack
from bench.service.idle import settle, stack_pids
from bench.service.jobs import Plan, small_limits, timed_job, upload
from toolout.client import ToolOutClient
from toolout.devstack import datasets, processes
from toolout.devstack.stack import Stack

TARGETS = {(32, 500): 1.05, (128, 500): 1.10, (32, 0): 1.4}
"""(chunks, model latency ms) -> the highest toolout / baseline ratio accepted."""
CALL_TARGETS = {(32, 500): (33, 33), (128, 500): (0, 135)}
"""(chunks, model latency ms) -> the fewest and most model calls the job may make."""


# --- one case: a chunk count at a latency ------------------------------------------------------------
@dataclass
class Case:
    chunks: int
    latency_ms: int
    doc_bytes: int
    toolout: list[float]
    gather: list[GatherRun]
    records: list[dict[str, Any]]

    @property
    def ratio(self) -> float:
        return statistics.median(self.toolout) / statistics.median(g.seconds for g in self.gather)


def measure_case(
    stack: Stack, client: ToolOutClient, gather: Gather, chunks: int, latency_ms: int, runs: int, extract: str
) -> Case:
    limits = small_limits()
    doc = sized_doc(chunks, extract, limits)
    handle = upload(client, doc)["handle"]
    plans: dict[int, Plan] = {}
    case = Case(chunks, latency_ms, len(doc), [], [], [])
    pids = stack_pids(stack)
    for run in range(runs + 1):  # run 0 warms both sides up and is discarded
        settle(pids)
        seconds, job = timed_job(client, handle, extract, "full-chunked")
        total = job["chunks_total"]
        plan = plans.get(total) or plans.setdefault(total, plan_like(doc, extract, limits, total))
        settle(pids)
        baseline = gather.run(doc, plan)
        check_same_work(job, baseline, len(plan.chunks))
        if run:
            case.toolout.append(seconds)
            case.records.append(job)
            case.gather.append(baseline)
    return case


def run_latency(args: argparse.Namespace, loop: asyncio.AbstractEventLoop, latency_ms: int) -> list[Case]:
    runs = args.runs_0ms if latency_ms == 0 else args.runs_500ms
    model = {"TOOLOUT_OFFLINE_LATENCY_MS": str(latency_ms), **SHORT_ANSWERS}
    extract = datasets.POOL_INCIDENT.request if args.incident else EVERY_CHUNK_REQUEST
    with (
        running_stack(args.redis_url, model=model, worker={"concurrency": args.concurrency}, extra=SMALL_WINDOW) as st,
        st.client() as client,
    ):
        gather = Gather(loop, st, small_limits(), args.concurrency)
        return [measure_case(st, client, gather, n, latency_ms, runs, extract) for n in args.chunks]


# --- report ------------------------------------------------------------------------------------------
def case_rows(case: Case, concurrency: int) -> list[tuple[str, str, str, str]]:
    base = statistics.median(g.seconds for g in case.gather)
    wall = statistics.median(case.toolout)
    job, gathered = case.records[-1], case.gather[-1]
    target = TARGETS.get((case.chunks, case.latency_ms))
    maps, level = job["chunks_total"], job["reduce_level"]
    waves = -(-maps // concurrency)
    return [
        (f"{case.chunks} chunks @ {case.latency_ms} ms ({case.doc_bytes / 1000:.0f} KB)", "", "", ""),
        (
            f"    baseline: asyncio.gather, semaphore {concurrency} (median of {len(case.gather)}); last run "
            f"{work(gathered.calls, maps, gathered.reduce_level, gathered.input_tokens, gathered.output_tokens)}",
            ms(base),
            "",
            "",
        ),
        (
            f"    toolout job, 1 worker x {concurrency} threads (median of {len(case.toolout)}); last run "
            f"{work(job['usage']['calls'], maps, level, job['usage']['input_tokens'], job['usage']['output_tokens'])},"
            f" reduce tree {job.get('reduce_tree')}",
            f"{ms(wall)} = {case.ratio:.2f}x",
            f"<= {target:.2f}x" if target else "(info)",
            verdict(case.ratio <= target) if target else "",
        ),
        *case_call_rows(case),
        ("        server side: created -> started / -> finished", server_side(case.records), "", ""),
        (
            f"    floor: {waves} map wave{'s' * (waves > 1)} + {level + 1} reduce round{'s' * (level > 0)}",
            ms((waves + level + 1) * case.latency_ms / 1000) if case.latency_ms else "(no model latency)",
            "",
            "",
        ),
    ]


def work(calls: int, maps: int, levels: int, input_tokens: int, output_tokens: int) -> str:
    return (
        f"{calls} calls ({maps} maps + {calls - maps} reduces, {levels} level{'s' * (levels != 1)} of groups), "
        f"{input_tokens:,} in / {output_tokens:,} out tokens"
    )


def case_call_rows(case: Case) -> list[tuple[str, str, str, str]]:
    """The calls the job made against their bounds, and (128 chunks) that the baseline did the same levels."""
    bounds = CALL_TARGETS.get((case.chunks, case.latency_ms))
    if bounds is None:
        return []
    calls = sorted({job["usage"]["calls"] for job in case.records})
    rows = [
        (
            "        toolout calls (every measured run)",
            "/".join(map(str, calls)),
            f"{bounds[0]}-{bounds[1]}" if bounds[0] else f"<= {bounds[1]}",
            verdict(calls_ok(case)),
        )
    ]
    if case.chunks == 128:
        levels = (case.records[-1]["reduce_level"], case.gather[-1].reduce_level)
        rows.append(
            (
                "        levels of groups: toolout / baseline",
                f"{levels[0]} / {levels[1]}",
                "same",
                verdict(levels[0] == levels[1]),
            )
        )
    return rows


def calls_ok(case: Case) -> bool:
    low, high = CALL_TARGETS.get((case.chunks, case.latency_ms), (0, 10**9))
    levels_same = case.chunks != 128 or case.records[-1]["reduce_level"] == case.gather[-1].reduce_level
    return levels_same and all(low <= job["usage"]["calls"] <= high for job in case.records)


def passed(case: Case) -> bool | None:
    target = TARGETS.get((case.chunks, case.latency_ms))
    return None if target is None else case.ratio <= target and calls_ok(case)


def server_side(records: list[dict[str, Any]]) -> str:
    queued = statistics.median((j["started_at"] - j["created_at"]) for j in records)
    total = statistics.median((j["finished_at"] - j["created_at"]) for j in records)
    return f"{ms(queued)} / {ms(total)}"


def summary_rows(cases: list[Case]) -> list[tuple[str, str, str, str, str, str]]:
    rows = [("case", "toolout / baseline", "calls", "input tokens", "target", "result")]
    for case in sorted(cases, key=lambda c: (c.latency_ms, c.chunks)):
        target, ok = TARGETS.get((case.chunks, case.latency_ms)), passed(case)
        job, gathered = case.records[-1], case.gather[-1]
        rows.append(
            (
                f"{case.chunks} chunks @ {case.latency_ms} ms",
                f"{case.ratio:.2f}x",
                f"{job['usage']['calls']} / {gathered.calls}",
                f"{job['usage']['input_tokens']:,} / {gathered.input_tokens:,}",
                f"<= {target:.2f}x" if target else "(info)",
                "" if ok is None else verdict(ok),
            )
        )
    return rows


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    numbers: Callable[[str], list[int]] = lambda text: [int(x) for x in text.split(",") if x.strip()]  # noqa: E731
    parser.add_argument("--chunks", type=numbers, default=[32, 128], help="chunk counts (comma-separated)")
    parser.add_argument("--latencies", type=numbers, default=[0, 500], help="model latencies in ms (comma-separated)")
    parser.add_argument("--runs-0ms", type=int, default=5, help="timed runs per case at 0 ms (median)")
    parser.add_argument("--runs-500ms", type=int, default=3, help="timed runs per case at any other latency (median)")
    parser.add_argument("--concurrency", type=int, default=32, help="worker threads = the baseline's semaphore")
    parser.add_argument(
        "--incident",
        action="store_true",
        help="ask for the log's one incident instead of its WARN lines: every chunk but one says NO RELEVANT DATA "
        "FOUND, which toolout leaves out of the reduce (the targets assume the WARN request)",
    )
    parser.add_argument(
        "--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database this bench may flush"
    )
    parser.add_argument("--tail-fraction", type=float, default=0.05, help="the tail case's slow calls (0: no case)")
    parser.add_argument("--tail-multiplier", type=float, default=10.0, help="a slow call, in base latencies")
    parser.add_argument("--runs-tail", type=int, default=20, help="timed jobs a side in the tail case (median, p95)")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    os.environ["TOOLOUT_REDIS_URL"] = args.redis_url  # this process's Celery app pings the stack's worker
    processes.ensure_redis(args.redis_url)
    print(f"toolout fan-out bench: {os.cpu_count()} cores, Redis {args.redis_url}\n", flush=True)
    cases: list[Case] = []
    loop = asyncio.new_event_loop()  # one loop for the whole bench: litellm binds its async clients and logger to it
    for latency_ms in args.latencies:
        started = time.perf_counter()
        found = run_latency(args, loop, latency_ms)
        print(f"F1 fan-out at {latency_ms} ms per model call  ({time.perf_counter() - started:.0f} s)")
        print_table(
            [("measure", "value", "target", "result")] + [r for c in found for r in case_rows(c, args.concurrency)]
        )
        print(flush=True)
        cases += found
    print("F1 summary: toolout's job wall over the gather baseline's (medians)")
    print_table(summary_rows(cases))
    tails_ok = True
    if args.tail_fraction > 0:
        from bench.service import fanout_tails

        print()
        tails = fanout_tails.run_tails(
            args.redis_url, loop, args.runs_tail, args.tail_fraction, args.tail_multiplier, args.concurrency
        )
        fanout_tails.report(tails, args.tail_fraction, args.tail_multiplier)
        tails_ok = fanout_tails.passed(tails)
    return 1 if any(passed(case) is False for case in cases) or not tails_ok else 0


if __name__ == "__main__":
    sys.exit(main())
