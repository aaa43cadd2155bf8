"""P1, P2, P3, P5: the service end to end — real processes, Redis, litellm, the offline model.

    python bench/bench_service.py [--only p1,p2,p3,p5] [--runs 5] [--concurrency 8,32] [--upload-mb 100] [--log-mb 50]

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
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402
import redis  # noqa: E402

from bench.report import print_table, verdict  # noqa: E402
from extraction.documents.chunking import chunk_budget, plan_chunks  # noqa: E402
from extraction.documents.stats import PIECE_BYTES, default_threads, measure  # noqa: E402
from extraction.strategies.mapreduce import ModelLimits, map_prompt_tokens  # noqa: E402
from extraction.texts.nonce import new_nonce  # noqa: E402
from extraction.texts.prompts import PromptContext, map_messages, reduce_messages  # noqa: E402
from extraction.tokenizer_files import ensure_offline_encodings  # noqa: E402
from toolout import datasets, processes  # noqa: E402
from toolout.client import TERMINAL, ToolOutClient  # noqa: E402

ensure_offline_encodings()

MB = 1_000_000
PARTS = ("p1", "p2", "p3", "p5")
TARGET_P1 = 2.0
TARGET_P2 = 1.3
TARGET_P3_RATIO = 0.8
TARGET_P3_RSS_MB = 64
TARGET_P5_SHARE = 0.05

SMALL_WINDOW = {"TOOLOUT_MODEL_CONTEXT_TOKENS": "4096", "TOOLOUT_MODEL_MAX_OUTPUT_TOKENS": "96"}
"""A small model window: 16 or 32 chunks from a few hundred KB, so the bench measures orchestration, not bulk.
The reduce is planned from the answers' real sizes: the offline model's ~200-byte answers (~60 tokens with
their labels) put 32 in one final reduce and 128 in a level of 3 group reduces and a final one."""
SHORT_ANSWERS = {"TOOLOUT_OFFLINE_ANSWER_BYTES": "200"}
"""Map answers this short keep 32 outputs inside one reduce call (no regrouping level)."""
OVERLAP = 0.10
P2_LATENCY_S = 0.5
TOOL_NAME, TOOL_ARGS = "logs.fetch", '{"service": "*", "range": "30d"}'
QUEUES = "extract,map,reduce,agent,webhooks"


# --- stacks --------------------------------------------------------------------------------------
@dataclass
class Stack:
    """The processes of one part and how to reach them."""

    root: Path
    env: dict[str, str]
    model_url: str | None = None
    api_url: str | None = None
    services: dict[str, processes.Service] = field(default_factory=dict)

    def client(self) -> ToolOutClient:
        return ToolOutClient(self.api_url, timeout=300)

    def pid(self, name: str) -> int:
        return self.services[name].process.pid


def stack_env(root: Path, redis_url: str, model_port: int, extra: dict[str, str]) -> dict[str, str]:
    """What every process of a stack sees; PYTHONPATH lets a worker import `bench.celery_noop`."""
    return {
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(REPO_ROOT),
        "TOOLOUT_REDIS_URL": redis_url,
        "TOOLOUT_AUTH_MODE": "dev",  # local child processes that exit with the bench; no key to provision
        "TOOLOUT_MODEL": "openai/toolout-offline",
        "TOOLOUT_MODEL_API_BASE": f"http://127.0.0.1:{model_port}/v1",
        "TOOLOUT_MODEL_API_KEY": "offline",
        "TOOLOUT_BLOB_STORE": f"file://{root / 'blobs'}",
        **extra,
    }


def worker_service(
    name: str, env: dict[str, str], logs: Path, *, concurrency: int, app: str | None = None
) -> processes.Service:
    """`toolout worker` itself; with `app`, a worker on that Celery module with exactly its flags
    (P1 needs `bench.celery_noop`, and `toolout worker` cannot load extra task modules)."""
    if app is None:
        service = processes.worker(name, env, logs, concurrency=concurrency)
    else:
        argv = [
            processes.PYTHON,
            "-m",
            "celery",
            "-A",
            app,
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            str(concurrency),
            "--queues",
            QUEUES,
            "--hostname",
            f"{name}@%h",
            "--loglevel",
            "info",
            "--without-gossip",
            "--without-mingle",
        ]
        service = processes.Service(name, argv, env, logs / f"{name}.log")
    service.ready = processes.workers_answering([name], env)
    return service


def start_worker(stack: Stack, name: str, *, concurrency: int) -> processes.Service:
    service = worker_service(name, stack.env, stack.root / "logs", concurrency=concurrency).start()
    stack.services[name] = service
    service.wait_ready(120)
    return service


def stop_worker(stack: Stack, name: str) -> None:
    stack.services.pop(name).stop()


@contextmanager
def running_stack(
    redis_url: str, *, model: dict[str, str] | None, worker: dict | None, extra: dict[str, str] | None = None
) -> Iterator[Stack]:
    """Start model, API and worker together (each waits only for itself), stop them all on exit.

    `worker` is None (API only) or keyword arguments of `worker_service` (concurrency, app).
    """
    redis.Redis.from_url(redis_url).flushdb()
    root = REPO_ROOT / "var" / "bench"
    shutil.rmtree(root / "blobs", ignore_errors=True)
    model_port, api_port = processes.free_port(), processes.free_port()
    stack = Stack(root, stack_env(root, redis_url, model_port, extra or {}), api_url=f"http://127.0.0.1:{api_port}")
    logs = root / "logs"
    if model is not None:
        stack.model_url = f"http://127.0.0.1:{model_port}/v1"
        stack.services["model"] = processes.quiet_offline_model(model_port, {**stack.env, **model}, logs)
    stack.services["api"] = processes.api(api_port, stack.env, logs)
    if worker is not None:
        stack.services["worker"] = worker_service("bench-worker", stack.env, logs, **worker)
    try:
        for service in stack.services.values():
            service.start()
        for service in stack.services.values():
            service.wait_ready(120)
        yield stack
    finally:
        for service in reversed(list(stack.services.values())):
            service.stop()
        redis.Redis.from_url(redis_url).flushdb()
        shutil.rmtree(root / "blobs", ignore_errors=True)


# --- documents -------------------------------------------------------------------------------------
def prompt_context(extract: str, doc: bytes, stats) -> PromptContext:
    return PromptContext(
        tool_name=TOOL_NAME,
        tool_args_json=TOOL_ARGS,
        extract=extract,
        nonce=new_nonce(),
        doc_bytes=len(doc),
        doc_lines=stats.lines,
        doc_tokens=stats.tokens,
    )


@dataclass(frozen=True)
class Plan:
    """`doc` planned exactly as the worker plans it (`pipeline.chunk_budget_for`, then `plan_chunks`)."""

    ctx: PromptContext
    budget: int
    tokens: int
    chunks: list


def plan_for(doc: bytes, extract: str, limits: ModelLimits) -> Plan:
    measured = measure([doc])
    ctx = prompt_context(extract, doc, measured.stats)
    budget = chunk_budget(
        limits.context_tokens, limits.max_output_tokens, map_prompt_tokens(ctx, limits, overlap_percent=OVERLAP * 100)
    )
    chunks = plan_chunks(
        measured.index, lambda start, end: doc[start:end], size=len(doc), budget_tokens=budget, overlap=OVERLAP
    )
    return Plan(ctx, budget, measured.stats.tokens, chunks)


def sized_log(chunks: int, extract: str, limits: ModelLimits) -> bytes:
    """A service log (one planted incident) that the planner cuts into exactly `chunks` chunks.

    Aims at the middle of the token range that gives `chunks` chunks, so the few tokens a random
    nonce adds to the prompt never tip the count; re-sized from the real plan until it is there.
    """
    size = 4_000 * chunks
    for _ in range(8):
        doc = b"".join(datasets.service_log(size, incidents=1))
        plan = plan_for(doc, extract, limits)
        wanted = target_tokens(chunks, plan.budget)
        if len(plan.chunks) == chunks and abs(plan.tokens - wanted) <= plan.budget * (1 - OVERLAP) / 4:
            return doc
        size = int(size * wanted / plan.tokens)
    raise RuntimeError(f"could not size a log to {chunks} chunks (last plan: {len(plan.chunks)})")


def target_tokens(chunks: int, budget: int) -> float:
    """The middle of the token counts `estimate_chunk_count` turns into `chunks` chunks."""
    return budget / 2 if chunks == 1 else budget * (1 + (chunks - 1.5) * (1 - OVERLAP))


def small_limits() -> ModelLimits:
    return ModelLimits(
        int(SMALL_WINDOW["TOOLOUT_MODEL_CONTEXT_TOKENS"]), int(SMALL_WINDOW["TOOLOUT_MODEL_MAX_OUTPUT_TOKENS"])
    )


def upload(client: ToolOutClient, content) -> dict:
    """Store `content` (bytes or blocks) in a new session as the log tool's output; the stored meta."""
    session = client.create_session()
    return client.store(session, content, tool_name=TOOL_NAME, tool_args=TOOL_ARGS)


# --- jobs --------------------------------------------------------------------------------------------
def timed_job(
    client: ToolOutClient,
    handle: str,
    extract: str,
    mode: str,
    *,
    interval: float | None = None,
    timeout: float = 300,
) -> tuple[float, dict]:
    """Wall time from POST /v1/extractions until the client knows the job ended.

    By default through the SDK's `wait` (long polls the API answers the moment the job's end is
    announced): what an SDK, toolkit or MCP user gets. With `interval`, by polling GET every
    `interval` seconds instead. The bench repeats identical jobs: `cache=False` makes each one run
    instead of answering from the result cache (what bench_fanout and profile_fanout time through
    here too).
    """
    started = time.perf_counter()
    job = client.submit(handle, extract, mode, cache=False)
    if interval is None:
        job = client.wait(job["id"], timeout=timeout)
    while job["status"] not in TERMINAL:
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"job {job['id']} still {job['status']} after {timeout:.0f}s")
        time.sleep(interval or 0.01)
        job = client.job(job["id"])
    return time.perf_counter() - started, job


def check_job(job: dict, chunks: int) -> None:
    """The job must have taken the shape the baseline prices: `chunks` maps, then one reduce."""
    if job["status"] != "succeeded" or job["mode_used"] != "full-chunked":
        raise RuntimeError(
            f"job {job['id']} ended {job['status']} / {job['mode_used']}: "
            f"{job.get('error') or job.get('fallback_reason')}"
        )
    if job["chunks_total"] != chunks or job["reduce_level"] != 0:
        raise RuntimeError(
            f"job {job['id']} had {job['chunks_total']} chunks and reduce level {job['reduce_level']}, "
            f"wanted {chunks} and 0"
        )


def chord_seconds(size: int, *, interval: float = 0.01) -> float:
    """A bare chord: `size` no-op tasks on the map queue, a no-op body on the reduce queue, polled like a job."""
    from celery import chord, group

    from bench.celery_noop import noop, noop_body

    started = time.perf_counter()
    result = chord(
        group(noop.si(i).set(queue="map") for i in range(size)), noop_body.si().set(queue="reduce")
    ).apply_async()
    while not result.ready():
        time.sleep(interval)
    elapsed = time.perf_counter() - started
    result.forget()
    return elapsed


def litellm_client(stack: Stack):
    """The model client a worker builds, pointed at this stack's offline model."""
    from infra.llm.client import LiteLLMClient

    return LiteLLMClient(
        "openai/toolout-offline", api_base=stack.model_url, api_key="offline", timeout=60, num_retries=2
    )


def raw_http_client(stack: Stack, max_tokens: int) -> Callable[[list[dict]], object]:
    """`complete(messages)` with a bare pooled httpx client: the same request litellm sends, nothing else."""
    http = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))
    url, headers = f"{stack.model_url}/chat/completions", {"Authorization": "Bearer offline"}
    return lambda messages: http.post(
        url, json={"model": "toolout-offline", "messages": messages, "max_tokens": max_tokens}, headers=headers
    ).raise_for_status()


def job_requests(doc: bytes, extract: str, limits: ModelLimits, outputs: int) -> tuple[list[list[dict]], list[dict]]:
    """The map requests of `doc`'s real chunk plan, and a reduce request over `outputs` short answers."""
    plan = plan_for(doc, extract, limits)
    maps = [
        map_messages(
            plan.ctx,
            doc[c.start : c.end].decode(errors="replace"),
            chunk_index=c.index + 1,
            chunk_total=len(plan.chunks),
            overlap_percent=OVERLAP * 100,
        )
        for c in plan.chunks
    ]
    answers = [f"NO RELEVANT DATA FOUND\nchunk {i + 1}: service log lines, no pool exhaustion" for i in range(outputs)]
    return maps, reduce_messages(plan.ctx, answers)


def fan_out_seconds(
    complete: Callable[[list[dict]], object], maps: list[list[dict]], reduce: list[dict], threads: int
) -> float:
    """The model calls of one job with no queue around them: every map on `threads` threads, then the reduce."""
    with ThreadPoolExecutor(threads) as pool:
        started = time.perf_counter()
        list(pool.map(complete, maps))
        complete(reduce)
        return time.perf_counter() - started


def median_seconds(measure_once: Callable[[], float], runs: int) -> float:
    """Median of `runs` calls after one discarded call (connections, first-call imports)."""
    measure_once()
    return statistics.median(measure_once() for _ in range(runs))


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
            worker={"concurrency": 8, "app": "bench.celery_noop"},
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
    for name in [n for n in stack.services if n not in ("api", "model")]:
        stop_worker(stack, name)
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


def timed(call: Callable[[], object]) -> float:
    """Seconds `call()` takes."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


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


# --- P3 ----------------------------------------------------------------------------------------------
def p3(args) -> list[tuple[str, str, str, str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_stats import generated_blocks, raw_tokenize_seconds, segment_pool

    data = b"".join(generated_blocks(args.upload_mb * MB, segment_pool()))
    threads = default_threads()
    raws, uploads, growths = [], [], []
    with running_stack(args.redis_url, model=None, worker=None) as stack, stack.client() as client:
        session = client.create_session()
        client.store(session, streamed(data[: 2 * MB]))  # warm-up: tokenizer, thread pool, spool dir
        pid = stack.pid("api")
        for _ in range(2):  # alternated, so load from elsewhere on the machine hits both sides alike
            raws.append(raw_tokenize_seconds(data, threads, PIECE_BYTES))
            growth_mb, seconds, meta = upload_with_rss(client, session, data, pid)
            uploads.append(seconds)
            growths.append(growth_mb)
    return p3_rows(len(data), min(raws), min(uploads), max(growths), meta, threads)


def streamed(data: bytes, block: int = 1 << 20) -> Iterator[bytes]:
    """The upload body as a generator of 1 MiB blocks (chunked transfer, as an agent streams it)."""
    view = memoryview(data)
    for offset in range(0, len(data), block):
        yield bytes(view[offset : offset + block])


def upload_with_rss(client: ToolOutClient, session: str, data: bytes, pid: int) -> tuple[float, float, dict]:
    """(peak RSS growth of the API in MB, upload seconds, stored meta); the peak is reset first."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = proc_status_kb(pid, "VmRSS")
    started = time.perf_counter()
    meta = client.store(session, streamed(data), tool_name="bench.mixed", content_type="text/plain")
    seconds = time.perf_counter() - started
    return (proc_status_kb(pid, "VmHWM") - before) / 1024, seconds, meta


def proc_status_kb(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {name}")


def p3_rows(
    size: int, raw: float, seconds: float, growth_mb: float, meta: dict, threads: int
) -> list[tuple[str, str, str, str]]:
    mb = size / MB
    ratio = raw / seconds
    return [
        ("measure", "value", "target", "result"),
        (
            f"raw encode_ordinary_batch, {threads} threads, this process (best of 2)",
            f"{mb / raw:.1f} MB/s ({raw:.2f} s)",
            "baseline",
            "",
        ),
        (f"upload {mb:.0f} MB through the API (best of 2)", f"{mb / seconds:.1f} MB/s ({seconds:.2f} s)", "", ""),
        ("    ratio upload / raw", f"{ratio:.2f}x", f">= {TARGET_P3_RATIO:.1f}x", verdict(ratio >= TARGET_P3_RATIO)),
        (
            "API peak RSS growth during an upload (worst of 2)",
            f"{growth_mb:.1f} MB",
            f"<= {TARGET_P3_RSS_MB} MB",
            verdict(growth_mb <= TARGET_P3_RSS_MB),
        ),
        ("    stored", f"{meta['tokens']:,} tokens, {meta['lines']:,} lines", "", ""),
    ]


# --- P5 ----------------------------------------------------------------------------------------------
def p5(args) -> list[tuple[str, str, str, str]]:
    incident = datasets.POOL_INCIDENT
    with (
        running_stack(args.redis_url, model={"TOOLOUT_OFFLINE_LATENCY_MS": "0"}, worker={"concurrency": 8}) as stack,
        stack.client() as client,
    ):
        meta = upload(client, datasets.service_log(args.log_mb * MB))
        seconds, job = timed_job(client, meta["handle"], incident.request, "read-grep", interval=0.05)
    return p5_rows(meta, job, seconds, incident.needle)


def p5_rows(meta: dict, job: dict, seconds: float, needle: str) -> list[tuple[str, str, str, str]]:
    usage = job["usage"]
    share = usage["input_tokens"] / meta["tokens"]
    found = needle in (job.get("result") or "") and job["mode_used"] == "read-grep"
    return [
        ("measure", "value", "target", "result"),
        (f"document: {meta['bytes'] / MB:.0f} MB service log", f"{meta['tokens']:,} tokens", "baseline", ""),
        (
            "read-grep input tokens",
            f"{usage['input_tokens']:,} in / {usage['output_tokens']:,} out, {usage['calls']} calls",
            "",
            "",
        ),
        ("    share of the document", f"{share:.3%}", f"<= {TARGET_P5_SHARE:.0%}", verdict(share <= TARGET_P5_SHARE)),
        ("turns / tool calls", f"{job['agent_turns']} / {job['agent_tool_calls']}", "", ""),
        (
            "planted fact found",
            f"{'yes' if found else 'NO'} ({job['status']}, {job['mode_used']})",
            "found",
            verdict(found),
        ),
        ("job wall time", f"{seconds:.2f} s", "", ""),
    ]


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
    os.environ["TOOLOUT_REDIS_URL"] = (
        args.redis_url
    )  # this process's Celery app (chords, pings) uses the stack's broker
    processes.ensure_redis(args.redis_url)
    missed = False
    print(
        f"toolout service bench: {os.cpu_count()} cores, Redis {args.redis_url}, logs in "
        f"{REPO_ROOT / 'var' / 'bench' / 'logs'}\n"
    )
    for part in args.only:
        started = time.perf_counter()
        rows = RUNNERS[part](args)
        print(f"{TITLES[part]}  ({time.perf_counter() - started:.0f} s)")
        print_table(rows)
        print(flush=True)
        missed |= any(row[3] == "MISS" for row in rows)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
