"""Documents and chunk plans for the fan-out bench and profile: exactly the worker's planning, nonce included."""

from __future__ import annotations

from bench.service.jobs import Plan, prompt_context, worker_budget
from extraction.documents.chunking import Chunk, plan_chunks
from extraction.documents.stats import TokenIndex, measure
from extraction.strategies.mapreduce import ModelLimits
from extraction.texts.prompts import PromptContext
from toolout.devstack import datasets

EVERY_CHUNK_REQUEST = "Every WARN line: its timestamp, service and warning text."
"""A request every chunk of a service log answers (the offline model quotes ~180 bytes of WARN lines per chunk),
so the reduce takes every answer: 32 fit one reduce call at the bench's 4K window, 128 need a level of groups.
(`datasets.POOL_INCIDENT.request` finds its one incident in one chunk: the other answers say NO RELEVANT DATA
FOUND and take no room, so the job has no reduce to measure.)"""
OVERLAP_PERCENT = 10.0
"""The worker's default chunk overlap (TOOLOUT_CHUNK_OVERLAP = 0.10), as its prompts show it."""
NONCE_SAMPLES = 200


def sized_doc(chunks: int, extract: str, limits: ModelLimits) -> bytes:
    """A service log (one planted incident) that plans into `chunks` chunks at the middle of its budget range.

    A job draws its own nonce, whose token count moves the map prompt, hence the chunk budget, by
    up to ~35 tokens (1 %): at 128 chunks that is more than a chunk, so a job may plan one chunk
    more or fewer than `chunks` (seen). `plan_like` gives the baseline the job's count.
    """
    size = 7_900 * chunks
    for _ in range(20):
        doc = b"".join(datasets.service_log(size, incidents=1))
        low, high = budget_range(doc, extract, limits)
        count = len(chunk_plan(doc, measure([doc]).index, (low + high) // 2))
        if count == chunks:
            return doc
        size = int(size * chunks / count)
    raise RuntimeError(f"could not size a log to {chunks} chunks (last plan: {count})")


def budget_range(doc: bytes, extract: str, limits: ModelLimits) -> tuple[int, int]:
    """The smallest and largest chunk budget the worker computes for `doc` over NONCE_SAMPLES nonces."""
    stats = measure([doc]).stats
    budgets = [map_budget(prompt_context(extract, doc, stats), limits) for _ in range(NONCE_SAMPLES)]
    return min(budgets), max(budgets)


def map_budget(ctx: PromptContext, limits: ModelLimits) -> int:
    """The chunk budget the worker computes for this prompt context."""
    return worker_budget(ctx, limits)


def chunk_plan(doc: bytes, index: TokenIndex, budget: int) -> list[Chunk]:
    read = lambda start, end: doc[start:end]  # noqa: E731
    return plan_chunks(index, read, size=len(doc), budget_tokens=budget, overlap=OVERLAP_PERCENT / 100)


def plan_like(doc: bytes, extract: str, limits: ModelLimits, chunks: int) -> Plan:
    """The worker's plan of `doc` under a nonce of our own that gives `chunks` chunks, as the job's did.

    The job's nonce is not exposed; a nonce with a budget in the same step of the planner cuts the
    same number of chunks at (nearly) the same places, so the baseline makes the job's calls.
    """
    measured = measure([doc])
    counts: dict[int, int] = {}
    for _ in range(NONCE_SAMPLES):
        ctx = prompt_context(extract, doc, measured.stats)
        budget = map_budget(ctx, limits)
        if counts.get(budget, chunks) != chunks:
            continue
        plan = chunk_plan(doc, measured.index, budget)
        counts[budget] = len(plan)
        if len(plan) == chunks:
            return Plan(ctx, budget, measured.stats.tokens, plan)
    raise RuntimeError(f"no nonce among {NONCE_SAMPLES} plans {chunks} chunks (budgets seen: {counts})")
