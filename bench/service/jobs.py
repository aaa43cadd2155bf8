"""What the service benches do to a stack: documents sized to a chunk count, timed jobs, and the baselines
a user would write instead (a bare Celery chord; the job's model calls with no queue around them).

Shared by P1-P5 (`bench.service.end_to_end`), F1 (`bench.service.fanout`), the broker and capacity
benches and `bench.profiles.fanout`, so all of them time a job the same way.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from bench.service.harness import SMALL_WINDOW
from extraction.documents.chunking import plan_chunks
from extraction.documents.stats import measure
from extraction.evidence.citations import number_lines
from extraction.strategies.mapreduce import ModelLimits
from extraction.strategies.planning import PlanningRules, chunk_budget_for
from extraction.texts.nonce import new_nonce
from extraction.texts.prompts import PromptContext, map_messages, reduce_messages
from infra.settings import Settings
from toolout.client import TERMINAL, ToolOutClient
from toolout.devstack import datasets
from toolout.devstack.stack import Stack

OVERLAP = 0.10
TOOL_NAME, TOOL_ARGS = "logs.fetch", '{"service": "*", "range": "30d"}'
CITE = Settings().evidence
"""Whether a job asks for evidence, read from TOOLOUT_EVIDENCE as the stack's worker (started with this environment)
reads it: with evidence the worker shows each chunk line-numbered and plans smaller chunks to leave room for the
numbers, so the benches plan and prompt the same way either way."""


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
        cite=CITE,
    )


@dataclass(frozen=True)
class Plan:
    """`doc` planned exactly as the worker plans it (`pipeline.chunk_budget_for`, then `plan_chunks`)."""

    ctx: PromptContext
    budget: int
    tokens: int
    chunks: list


def worker_budget(ctx: PromptContext, limits: ModelLimits) -> int:
    """The chunk budget the worker computes for this prompt context (`planning.chunk_budget_for`)."""
    return chunk_budget_for(ctx, limits, PlanningRules(chunk_overlap=OVERLAP))


def plan_for(doc: bytes, extract: str, limits: ModelLimits) -> Plan:
    measured = measure([doc])
    ctx = prompt_context(extract, doc, measured.stats)
    budget = worker_budget(ctx, limits)
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
    instead of answering from the result cache (what F1 and bench.profiles.fanout time through
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

    from bench.service.celery_noop import noop, noop_body

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


def chunk_messages(doc: bytes, plan: Plan) -> list[list[dict]]:
    """Each chunk's map prompt as the worker builds it: the chunk line-numbered from its first line when the job
    asks for evidence (`mapreduce.map_chunk`)."""
    return [
        map_messages(
            plan.ctx,
            shown_chunk(doc, c.start, c.end, plan.ctx.cite),
            chunk_index=c.index + 1,
            chunk_total=len(plan.chunks),
            overlap_percent=OVERLAP * 100,
        )
        for c in plan.chunks
    ]


def shown_chunk(doc: bytes, start: int, end: int, cite: bool) -> str:
    text = doc[start:end].decode(errors="replace")
    return number_lines(text, doc.count(b"\n", 0, start) + 1) if cite else text


def job_requests(doc: bytes, extract: str, limits: ModelLimits, outputs: int) -> tuple[list[list[dict]], list[dict]]:
    """The map requests of `doc`'s real chunk plan, and a reduce request over `outputs` short answers."""
    plan = plan_for(doc, extract, limits)
    maps = chunk_messages(doc, plan)
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


def timed(call: Callable[[], object]) -> float:
    """Seconds `call()` takes."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started
