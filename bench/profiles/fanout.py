"""Where a full-chunked job's time goes, from POST /v1/extractions to the report (docs/performance.md).

    python -m bench.profiles.fanout [--chunks 32,128] [--latencies 0,500] [--runs 3] [--redis-url ...]
                                   [--no-redis-pass] [--no-py-spy]

The stacks of F1, `bench.service.fanout` (offline model, API, ONE worker of 32 threads, small window, 200-byte
answers), but the worker runs `bench.profiles.fanout_probe`: toolout's own app, unchanged, writing a
timestamp for every task start and end, every task it publishes, every model call and the start
step's parts. Per latency and chunk count, after a warm-up job, `--runs` jobs give (medians; each job is
sent with "cache": false through bench.service.jobs.timed_job, so none is answered from the result cache):

  timeline   POST -> job created -> start task -> maps published -> maps started -> maps ended ->
             reduce stages -> finished_at -> the client sees it (polling every 10 ms)
  per map    task time, model call time, and the rest (load, gate, stores, ack) around the call

Then, unless switched off:
  --redis-pass  a stack whose worker counts every redis-py round trip per task (and after it: the
                ack and result-backend work in the same pool thread), while `redis-cli monitor`
                records every command of every client (API, worker, this process), one job per
                chunk count at 0 ms
  --py-spy      `py-spy record --gil` on the worker through jobs at 0 ms: which code holds the GIL
                (the worker is one process; at 0 ms its 32 threads share one core's worth of Python)

Prints tables; findings and proposed fixes are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench import BENCH_ROOT
from bench.profiles.redis_monitor import monitor_rows, monitored, round_trip_rows, socket_owners
from bench.report import print_table
from bench.service.fanout_docs import EVERY_CHUNK_REQUEST, sized_doc
from bench.service.harness import SHORT_ANSWERS, SMALL_WINDOW, running_stack
from bench.service.idle import settle, stack_pids
from bench.service.jobs import small_limits, timed_job, upload
from toolout.client import ToolOutClient
from toolout.devstack import datasets, processes
from toolout.devstack.stack import Stack

PROBE_DIR = BENCH_ROOT / "probe"
Event = dict[str, Any]


# --- running jobs and collecting their events ---------------------------------------------------------
def probe_stack(args: argparse.Namespace, latency_ms: int, events: Path, *, trace_redis: bool) -> Any:
    model = {"TOOLOUT_OFFLINE_LATENCY_MS": str(latency_ms), **SHORT_ANSWERS}
    extra = {**SMALL_WINDOW, "FANOUT_PROBE_LOG": str(events), "FANOUT_PROBE_REDIS": "1" if trace_redis else "0"}
    worker = {"concurrency": args.concurrency, "app": "bench.profiles.fanout_probe"}
    return running_stack(args.redis_url, model=model, worker=worker, extra=extra)


def read_events(path: Path) -> list[Event]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_job(stack: Stack, client: ToolOutClient, handle: str, extract: str) -> tuple[float, float, dict[str, Any]]:
    """(wall clock at POST, wall clock when the client saw it terminal, the job record), the stack idle first."""
    settle(stack_pids(stack))
    posted = time.time()
    _, job = timed_job(client, handle, extract, "full-chunked")
    return posted, time.time(), job


# --- one job's timeline ---------------------------------------------------------------------------------
def timeline(events: list[Event], posted: float, seen: float, job: dict[str, Any]) -> dict[str, float]:
    """Named intervals (ms) of one job from its probe events and record."""
    mine = [e for e in events if e.get("job") == job["id"]]

    def first(ev: str, task: str, **match: Any) -> float:
        return min(float(e["t"]) for e in select(mine, ev, task, **match))

    def last(ev: str, task: str, **match: Any) -> float:
        return max(float(e["t"]) for e in select(mine, ev, task, **match))

    steps = {
        e["step"]: (e["t"] - e["start"]) * 1000 for e in mine if e["ev"] == "step" and e["task"] == "start_extraction"
    }
    maps_started, maps_ended = last("prerun", "map_chunk"), last("postrun", "map_chunk")
    out = {
        "POST -> job created (API)": job["created_at"] - posted,
        "job created -> start task runs": first("prerun", "start_extraction") - job["created_at"],
        "start task (prerun -> postrun)": first("postrun", "start_extraction") - first("prerun", "start_extraction"),
        "first map published -> last map published": last("publish", "map_chunk") - first("publish", "map_chunk"),
        "start task runs -> first map runs": first("prerun", "map_chunk") - first("prerun", "start_extraction"),
        "first map runs -> last map runs": maps_started - first("prerun", "map_chunk"),
        "POST -> last map runs": maps_started - posted,
        "last map ends -> finished_at": job["finished_at"] - maps_ended,
        "finished_at -> client sees it": seen - job["finished_at"],
        "POST -> client sees it": seen - posted,
    }
    if select_any(mine, "prerun", "reduce_stage", arg=0):  # a stage sent as a task (now it runs in the map)
        out["last map ends -> reduce_stage(0) runs"] = first("prerun", "reduce_stage", arg=0) - maps_ended
    out.update(model_gap(mine, job))
    out = {k: v * 1000 for k, v in out.items()}
    out.update({f"    start: {name}": ms for name, ms in steps.items()})
    out.update(map_costs(mine))
    out.update(reduce_steps(mine))
    return out


def select_any(events: Iterable[Event], ev: str, task: str, **match: Any) -> bool:
    return any(e["ev"] == ev and e.get("task") == task and all(e.get(k) == v for k, v in match.items()) for e in events)


def reduce_steps(mine: list[Event]) -> dict[str, float]:
    """The reduce stages' timed steps (ms, summed per job), in whichever task ran them: what lies between the
    last map and the reduce's call."""
    names = ("level_outputs", "plan_reduce_groups", "reduce_chunk_outputs", "_finish_single")
    found: dict[str, float] = {}
    for e in mine:
        if e["ev"] == "step" and e["step"] in names:
            key = f"    reduce: {e['task']}: {e['step']}"
            found[key] = found.get(key, 0.0) + (e["t"] - e["start"]) * 1000
    return found


def model_gap(mine: list[Event], job: dict[str, Any]) -> dict[str, float]:
    """From the last map's model answer to the first reduce's model call (s): the time the fan-in costs.

    Told apart by order, not by task name, so a reduce run in the map task that completed the level counts too.
    """
    calls = sorted((e for e in mine if e["ev"] == "step" and e["step"] == "llm"), key=lambda e: float(e["start"]))
    maps, reduces = calls[: job["chunks_total"]], calls[job["chunks_total"] :]
    if not maps or not reduces:
        return {}
    last_answer = max(float(e["t"]) for e in maps)
    return {
        "last map's model answer -> first reduce's model call": float(reduces[0]["start"]) - last_answer,
        "last reduce's model answer -> finished_at": job["finished_at"] - max(float(e["t"]) for e in reduces),
    }


def select(events: Iterable[Event], ev: str, task: str, **match: Any) -> list[Event]:
    found = [
        e for e in events if e["ev"] == ev and e.get("task") == task and all(e.get(k) == v for k, v in match.items())
    ]
    if not found:
        raise RuntimeError(f"no {ev} event of {task} {match or ''} for this job")
    return found


def map_costs(mine: list[Event]) -> dict[str, float]:
    """Median per map task: its time, the model call's, and what the task spends around the call."""
    runs = {(e["arg"], e["th"]): e for e in mine if e["ev"] == "prerun" and e["task"] == "map_chunk"}
    ends = {(e["arg"], e["th"]): e for e in mine if e["ev"] == "postrun" and e["task"] == "map_chunk"}
    calls = {e["arg"]: e for e in mine if e["ev"] == "step" and e["step"] == "llm" and e["task"] == "map_chunk"}
    task, llm, before, after = [], [], [], []
    gaps = pickup_gaps(mine)
    for (index, thread), began in runs.items():
        ended, call = ends.get((index, thread)), calls.get(index)
        if ended is None or call is None:
            continue
        task.append(ended["t"] - began["t"])
        llm.append(call["t"] - call["start"])
        before.append(call["start"] - began["t"])
        after.append(ended["t"] - call["t"])
    costs = {
        "per map: task (prerun -> postrun)": statistics.median(task) * 1000,
        "per map: model call (litellm complete)": statistics.median(llm) * 1000,
        "per map: prerun -> model call (load, gate)": statistics.median(before) * 1000,
        "per map: model call -> postrun (store part)": statistics.median(after) * 1000,
    }
    if gaps:  # none when every map had a thread of its own
        costs["per thread: a map's postrun -> its next map's prerun"] = statistics.median(gaps) * 1000
    return costs


def pickup_gaps(mine: list[Event]) -> list[float]:
    """On each pool thread, the time from one map's end to the start of the next map it runs (ack, fetch, dispatch)."""
    by_thread: dict[int, list[Event]] = collections.defaultdict(list)
    for e in mine:
        if e["ev"] in ("prerun", "postrun") and e["task"] == "map_chunk":
            by_thread[e["th"]].append(e)
    gaps = []
    for events in by_thread.values():
        events.sort(key=lambda e: e["t"])
        pairs = itertools.pairwise(events)
        gaps += [b["t"] - a["t"] for a, b in pairs if a["ev"] == "postrun" and b["ev"] == "prerun"]
    return gaps


def reduce_tree(events: list[Event], job: dict[str, Any]) -> dict[str, float]:
    """For a job with a level of group reduces: how long each step of the tree took (ms)."""
    mine = [e for e in events if e.get("job") == job["id"]]
    if job["reduce_level"] == 0 or not select_any(events, "prerun", "reduce_stage", arg=1, job=job["id"]):
        return {}
    stage0 = select(mine, "prerun", "reduce_stage", arg=0)[0]["t"]
    groups_start = [e["t"] for e in select(mine, "prerun", "reduce_group")]
    groups_end = max(e["t"] for e in select(mine, "postrun", "reduce_group"))
    stage1 = select(mine, "prerun", "reduce_stage", arg=1)[0]["t"]
    return {
        "reduce_stage(0) runs -> first group reduce runs": (min(groups_start) - stage0) * 1000,
        "first group reduce runs -> last runs": (max(groups_start) - min(groups_start)) * 1000,
        "last group reduce ends -> reduce_stage(1) runs": (stage1 - groups_end) * 1000,
        "reduce_stage(1) runs -> finished_at": (job["finished_at"] - stage1) * 1000,
    }


def timing_pass(args: argparse.Namespace, latency_ms: int) -> dict[int, list[dict[str, float]]]:
    """Per chunk count, one timeline per run (after a warm-up), and py-spy at 0 ms when asked."""
    events_path = PROBE_DIR / f"events-{latency_ms}ms.jsonl"
    events_path.unlink(missing_ok=True)
    extract = EVERY_CHUNK_REQUEST
    found: dict[int, list[dict[str, float]]] = {}
    with probe_stack(args, latency_ms, events_path, trace_redis=False) as stack, stack.client() as client:
        for chunks in args.chunks:
            handle = upload(client, sized_doc(chunks, extract, small_limits()))["handle"]
            run_job(stack, client, handle, extract)  # warm-up
            jobs = [run_job(stack, client, handle, extract) for _ in range(args.runs)]
            events = read_events(events_path)
            found[chunks] = [{**timeline(events, p, s, j), **reduce_tree(events, j)} for p, s, j in jobs]
            if args.py_spy and latency_ms == 0:
                print_py_spy(profile_worker(stack, client, handle, extract, chunks))
        if latency_ms == 0:
            client_cost(stack)
    return found


# --- Redis round trips --------------------------------------------------------------------------------
def redis_pass(args: argparse.Namespace) -> None:
    """One job per chunk count at 0 ms with every redis-py round trip of the worker counted, and monitored."""
    events_path = PROBE_DIR / "events-redis.jsonl"
    events_path.unlink(missing_ok=True)
    extract = datasets.POOL_INCIDENT.request
    with probe_stack(args, 0, events_path, trace_redis=True) as stack, stack.client() as client:
        for chunks in args.chunks:
            handle = upload(client, sized_doc(chunks, extract, small_limits()))["handle"]
            run_job(stack, client, handle, extract)  # warm-up
            with monitored(args.redis_url, PROBE_DIR / "monitor.log") as monitor_log:
                _, _, job = run_job(stack, client, handle, extract)
                time.sleep(0.5)  # the last acks
                owners = socket_owners(stack)
            calls = job["usage"]["calls"]
            print(f"Redis round trips, one {chunks}-chunk job ({calls} calls), worker's redis-py, per task")
            print_table(round_trip_rows([e for e in read_events(events_path) if e.get("job") == job["id"]]))
            print(f"\nredis-cli monitor, the same job: commands by client process and kind ({chunks} chunks)")
            print_table(monitor_rows(monitor_log.read_text(), owners, db=int(args.redis_url.rsplit("/", 1)[1])))
            print(flush=True)


# --- py-spy ------------------------------------------------------------------------------------------------
def profile_worker(stack: Stack, client: ToolOutClient, handle: str, extract: str, chunks: int) -> tuple[int, Path]:
    """`py-spy record --gil --nonblocking` on the worker through three jobs; (chunks, raw output)."""
    out = PROBE_DIR / f"py-spy-{chunks}.txt"
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    argv = [spy, "record", "--gil", "--nonblocking", "-r", "200", "-f", "raw", "-o", str(out), "-p"]
    recorder = subprocess.Popen(
        [*argv, str(stack.pid("bench-worker"))], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(1.0)
    for _ in range(3):
        run_job(stack, client, handle, extract)
    recorder.send_signal(2)
    recorder.wait(30)
    return chunks, out


CAUSES = [
    ("litellm client (litellm, openai, httpx)", ("litellm/", "openai/", "httpx/", "httpcore/")),
    ("result backend: task results, chord counter", ("celery/backends/",)),
    (
        "publishing tasks (canvas, amqp, kombu producer)",
        ("celery/canvas.py", "celery/app/amqp.py", "kombu/messaging.py"),
    ),
    ("kombu: consuming, QoS, acks", ("kombu/",)),
    (
        "chunk planning (token positions, tiktoken)",
        ("extraction/documents/chunking.py", "token_positions.py", "tiktoken/"),
    ),
    ("toolout's Redis calls (redis-py under workers/infra)", ("redis/",)),
    ("toolout, other (pipeline, prompts, pydantic)", ("workers/", "infra/", "extraction/", "pydantic")),
    ("celery worker machinery (trace, request, loop)", ("celery/",)),
    ("probe (this profile's own timestamps)", ("fanout_probe.py",)),
]
"""A sample counts for the first cause whose marks appear anywhere on its stack (so each sample once)."""


def cause_of(stack: str) -> str:
    return next((name for name, marks in CAUSES if any(m in stack for m in marks)), "other (threading, logging, json)")


def print_py_spy(recorded: tuple[int, Path]) -> None:
    chunks, path = recorded
    if not path.exists():
        print(f"py-spy wrote nothing for {chunks} chunks (is it installed? pip install py-spy)")
        return
    samples: list[tuple[str, int]] = []
    for line in path.read_text().splitlines():
        frames, _, number = line.rpartition(" ")
        samples.append((frames, int(number)))
    total = sum(c for _, c in samples) or 1
    causes: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    for frames, weight in samples:
        causes[cause_of(frames)] += weight
        leaves[frames.split(";")[-1].strip()[:100]] += weight
    rows = [("samples holding the GIL, each counted once, by cause", "share", "", "")]
    rows += [(name, f"{count / total:.0%}", "", "") for name, count in causes.most_common()]
    main = sum(c for s, c in samples if "concurrent/futures/thread.py" not in s) / total
    rows.append(("    of all samples: outside the task threads (consumer loop)", f"{main:.0%}", "", ""))
    rows += [(f"    self: {leaf}", f"{c / total:.1%}", "", "") for leaf, c in leaves.most_common(6)]
    print(f"py-spy --gil on the worker, three {chunks}-chunk jobs at 0 ms ({total} samples at 200 Hz)")
    print_table(rows)
    print(flush=True)


# --- the model client on its own -------------------------------------------------------------------------
def client_cost(stack: Stack, calls: int = 100) -> None:
    """Wall and CPU per call, one call at a time at 0 ms: bare httpx vs the worker's litellm client.

    CPU is this process's (every thread), counted until it is idle again: litellm finishes each
    call's logging in background threads after `completion` returned, and that work is the call's.
    """
    from bench.service.jobs import job_requests, litellm_client, raw_http_client

    limits = small_limits()
    maps, _ = job_requests(
        sized_doc(1, datasets.POOL_INCIDENT.request, limits), datasets.POOL_INCIDENT.request, limits, 1
    )
    llm = litellm_client(stack)

    def via_litellm(messages: list[dict[str, Any]]) -> object:
        return llm.complete(messages, max_tokens=limits.max_output_tokens)

    clients = {
        "bare httpx (the same request)": raw_http_client(stack, limits.max_output_tokens),
        "litellm (LiteLLMClient.complete, as the worker calls it)": via_litellm,
    }
    rows = [("one map request, sequential, model at 0 ms", "wall / call", "CPU / call", "")]
    for name, complete in clients.items():
        for _ in range(5):
            complete(maps[0])  # connections, first-call imports
        settle([os.getpid()])
        cpu, started = time.process_time(), time.perf_counter()
        for _ in range(calls):
            complete(maps[0])
        wall = (time.perf_counter() - started) / calls
        settle([os.getpid()])
        rows.append((name, f"{wall * 1000:.1f} ms", f"{(time.process_time() - cpu) / calls * 1000:.1f} ms", ""))
    print(
        f"Model client cost per call ({calls} calls each; the offline model's own serving is in the wall, not the CPU)"
    )
    print_table(rows)
    print(flush=True)


# --- report --------------------------------------------------------------------------------------------------
def print_timelines(latency_ms: int, found: dict[int, list[dict[str, float]]]) -> None:
    chunks = sorted(found)
    names = list(dict.fromkeys(k for n in chunks for run in found[n] for k in run))
    cells = [[cell([run[name] for run in found[n] if name in run]) for n in chunks] for name in names]
    rows = [("interval (median ms)", " / ".join(f"{n} chunks" for n in chunks), "", "")]
    rows += [(name, " / ".join(values), "", "") for name, values in zip(names, cells, strict=True)]
    print(f"Timeline of a full-chunked job at {latency_ms} ms per model call (median of {len(found[chunks[0]])})")
    print_table(rows)
    print(flush=True)


def cell(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else ""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    numbers = lambda text: [int(x) for x in text.split(",") if x.strip()]  # noqa: E731
    parser.add_argument("--chunks", type=numbers, default=[32, 128])
    parser.add_argument("--latencies", type=numbers, default=[0, 500])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/10", help="a Redis database this may flush")
    parser.add_argument("--no-redis-pass", dest="redis_pass", action="store_false")
    parser.add_argument("--no-py-spy", dest="py_spy", action="store_false")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    os.environ["TOOLOUT_REDIS_URL"] = args.redis_url
    processes.ensure_redis(args.redis_url)
    PROBE_DIR.mkdir(parents=True, exist_ok=True)
    for latency_ms in args.latencies:
        print_timelines(latency_ms, timing_pass(args, latency_ms))
    if args.redis_pass:
        redis_pass(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
