"""A stored output's plan, as the worker's start step and the API's estimate both make it.

The decisions themselves are pure (`extraction.planning`, `extraction.chunking`); this supplies
what they need from this deployment: the planning settings, and the output's token index and bytes
from the blob store.
"""

from __future__ import annotations

from extraction.agent import AgentBounds
from extraction.chunking import Chunk, plan_chunks
from extraction.mapreduce import ModelLimits
from extraction.planning import PlanningRules
from infra.blobstore import BlobStore
from infra.content import read_content, token_index
from infra.records import OutputRecord
from infra.settings import Settings


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


def plan_output_chunks(blobs: BlobStore, output: OutputRecord, budget: int, overlap: float) -> list[Chunk]:
    """The output's chunks at `budget` tokens each: its token index, and a ranged read at every cut
    (of its blob, or of its inline bytes: `infra.content`)."""
    return plan_chunks(
        token_index(blobs, output),
        lambda start, end: read_content(blobs, output, start, end),
        size=output.stats.bytes,
        budget_tokens=budget,
        overlap=overlap,
    )
