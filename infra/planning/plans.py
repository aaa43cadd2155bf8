"""A stored output's chunk plan, as the worker's start step and the API's estimate both make it.

The decisions themselves are pure (`extraction.strategies.planning`, `extraction.documents.chunking`); this supplies
what they need from this deployment: the planning settings, and the output's token index and bytes
from the blob store.
"""

from __future__ import annotations

import hashlib
import json
import logging
from functools import cache
from importlib import metadata
from pathlib import Path

from extraction.documents import chunking, stats, token_positions, tokens
from extraction.documents.chunking import Chunk, plan_chunks
from extraction.strategies.agent import AgentBounds
from extraction.strategies.mapreduce import ModelLimits
from extraction.strategies.planning import PlanningRules
from infra.blobstore import BlobStore
from infra.outputs.content import read_content, token_index
from infra.settings import Settings
from infra.stores.records import OutputRecord, RecordStores

log = logging.getLogger("toolout.planning")


def planning_rules(settings: Settings) -> PlanningRules:
    return PlanningRules(
        chunk_overlap=settings.chunk_overlap,
        max_chunks_for_full=settings.max_chunks_for_full_mode,
        long_line_bytes=settings.long_line_bytes,
    )


def agent_bounds(settings: Settings, limits: ModelLimits) -> AgentBounds:
    """What the read-grep sub-agent may spend: turns, tool calls per turn, tokens, each answer's length."""
    return AgentBounds(
        max_turns=settings.agent_max_turns,
        max_tool_calls_per_turn=settings.agent_max_tool_calls_per_turn,
        max_total_tokens=settings.agent_max_total_tokens,
        max_output_tokens=limits.max_output_tokens,
    )


def plan_output_chunks(
    blobs: BlobStore, records: RecordStores, output: OutputRecord, budget: int, overlap: float
) -> list[Chunk]:
    """The output's chunks at `budget` tokens each, from its plan cache when it has been planned before.

    A chunk plan is a pure function of the stored content, the budget, the overlap and the encoding (and of
    the planner's code: `plan_key`), and agents ask many questions of one output: the job's start
    step and the estimate share one cache, kept with the output record and deleted with it.
    """
    if output.inline is not None:  # a few hundred bytes: planning them is cheaper than a round trip
        return plan_fresh(blobs, output, budget, overlap)
    key = plan_key(output, budget, overlap)
    kept = decode_plan(records.plans.chunk_plan(output, key))
    if kept is not None:
        return kept
    chunks = plan_fresh(blobs, output, budget, overlap)
    records.plans.keep_chunk_plan(output, key, encode_plan(chunks))
    return chunks


def plan_fresh(blobs: BlobStore, output: OutputRecord, budget: int, overlap: float) -> list[Chunk]:
    """The output's chunks at `budget` tokens each: its token index, and a ranged read at every cut
    (of its blob, or of its inline bytes: `infra.outputs.content`)."""
    return plan_chunks(
        token_index(blobs, output),
        lambda start, end: read_content(blobs, output, start, end),
        size=output.stats.bytes,
        budget_tokens=budget,
        overlap=overlap,
    )


def plan_key(output: OutputRecord, budget: int, overlap: float) -> str:
    """Everything a chunk plan depends on: the planner's code, the content (sha256), encoding, budget, overlap.

    The content hash guards the handle → content link; the code hash retires every kept chunk plan when a
    deployment changes the planner, so a kept chunk plan is always the one planning would produce now.
    """
    return f"{planner_version()}:{output.stats.sha256}:{output.stats.encoding}:{budget}:{overlap!r}"


@cache
def planner_version() -> str:
    """A digest of the planner's modules and tiktoken's release (read once per process)."""
    digest = hashlib.sha256(metadata.version("tiktoken").encode())
    for module in (chunking, token_positions, tokens, stats):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:16]


def encode_plan(chunks: list[Chunk]) -> str:
    """Compact JSON: `[[start, end, tokens], ...]`, chunk i at position i (~20 bytes a chunk)."""
    return json.dumps([[c.start, c.end, c.tokens] for c in chunks], separators=(",", ":"))


def decode_plan(raw: str | None) -> list[Chunk] | None:
    """The chunks of an `encode_plan` text; None when absent or unreadable (the caller plans afresh)."""
    if raw is None:
        return None
    try:
        return [Chunk(index=i, start=start, end=end, tokens=n) for i, (start, end, n) in enumerate(json.loads(raw))]
    except (ValueError, TypeError) as exc:
        log.warning("unreadable kept chunk plan, planning afresh: %s", exc)
        return None
