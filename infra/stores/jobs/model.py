"""The job record: what a client (or an operator) may know about one extraction job."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, field_validator

from extraction.evidence.model import EvidenceItem, UnreadRange
from extraction.protocols import Usage
from extraction.strategies.coverage import FailedRange
from extraction.texts.nonce import new_nonce
from infra import tracing
from infra.stores.records.model import OutputRecord, new_id

MAX_REDUCE_LEVELS = 8
RETRY_AFTER_SECONDS = 5
"""What a tenant over its live-job limit is told to wait: jobs take seconds to minutes."""


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELED})


class ModelFallback(BaseModel):
    """A model call that its stage's model could not answer, answered by a fallback (`TOOLOUT_<STAGE>_FALLBACKS`)."""

    stage: str = Field(description="map, reduce or agent")
    model: str = Field(description="the model the call went to first")
    answered_by: str = Field(description="the fallback that answered")
    attempts: int = Field(description="model attempts the call took, the answering one included")
    at: float = Field(default_factory=time.time)


MAX_FALLBACKS_KEPT = 50
"""A job keeps its first fallbacks only (a model down for a whole 1000-chunk job must not grow the record)."""


class JobRecord(BaseModel):
    """Everything a client (or an operator) may want to know about one extraction job."""

    id: str
    session_id: str
    tenant: str = "dev"
    handle: str
    tool_name: str = "unknown"
    extract: str
    mode_requested: str = "auto"
    view: str = Field(
        "text", description="what the job reads of an HTML output: its text view (text) or the markup (raw)"
    )
    redact: bool = Field(True, description="whether the job reads the output's redacted view (docs/privacy.md)")
    redactions: dict[str, int] = Field(
        default_factory=dict, description="secrets replaced in what the job read, by kind"
    )
    status: JobStatus = JobStatus.QUEUED
    mode_used: str | None = None
    routing_reason: str | None = None
    chunks_total: int = 0
    chunks_done: int = 0
    chunks_failed: int = Field(0, description="chunks the answer does not cover (failed maps and failed reduce groups)")
    failed_ranges: list[FailedRange] = Field(
        default_factory=list, description="what could not be read, in document order: chunks and reduce groups"
    )
    reduce_level: int = 0
    reduce_tree: list[list[int]] = Field(
        default_factory=list,
        description="the reduce the job ran, planned from its real answers: per level, how many answers each "
        "reduce call took, the final call last ([[40, 41], [2]]: two group reduces, then the final one)",
    )
    agent_turns: int = 0
    agent_tool_calls: int = 0
    query_tables: list[str] = Field(
        default_factory=list, description="query strategy: the tables the output loaded as (name and rows)"
    )
    query_load: str | None = Field(
        None,
        description="query strategy: how the tables got to the worker — `reused` (kept by an earlier load: "
        "the preload at upload time, or an earlier question), `copied` (from an output with the same "
        "content) or `loaded` (by this job)",
    )
    query_load_seconds: float = Field(
        0.0, description="query strategy: seconds opening the tables took (waiting for a load, download, load)"
    )
    query_bytes_read: int = Field(
        0, description="query strategy: bytes read from the blob store to open them (Parquet, or the raw output)"
    )
    queries: list[str] = Field(default_factory=list, description="query strategy: the SQL the sub-agent ran, in order")
    evidence: list[EvidenceItem] = Field(
        default_factory=list,
        description="where the answer came from: cited line ranges with their quotes, each checked (`verified`) "
        "against the stored output, and the SQL and rows behind a query answer",
    )
    unread: list[UnreadRange] = Field(
        default_factory=list, description="a partial answer: the line and byte ranges it did not read"
    )
    usage: Usage = Field(default_factory=Usage)
    created_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    deadline_at: float = 0.0
    result: str | None = None
    report: dict[str, Any] | None = None
    error: str | None = None
    fallback_reason: str | None = None
    model: str | None = Field(
        None, description="the litellm model the job was created for (what its usage is counted under)"
    )
    stage_models: dict[str, str] = Field(
        default_factory=dict, description="the model each stage (map, reduce, agent) calls first"
    )
    model_usage: dict[str, Usage] = Field(
        default_factory=dict,
        description="every model call the job made, by the model that answered it (fallbacks included)",
    )
    model_fallbacks: list[ModelFallback] = Field(
        default_factory=list, description=f"calls a fallback model answered, in order (the first {MAX_FALLBACKS_KEPT})"
    )
    calls_waiting: int = Field(
        0, description="model calls waiting for their turn under the provider's limits (rpm/tpm) right now"
    )
    rate_limit_wait_seconds: float = Field(0.0, description="seconds the job's calls have waited for their turn")
    cached: bool = Field(False, description="answered from the result cache at once: no model was called")
    cached_from: str | None = Field(None, description="when cached: the finished job whose result this is")
    attempts: int = 0
    llm_calls_reserved: int = Field(0, description="LLM calls reserved against max_llm_calls_per_job")
    hedge: bool = Field(True, description="the job's slow model calls may be hedged (the request's `hedge`)")
    hedges_sent: int = Field(0, description="hedge copies of slow model calls sent (infra/llm/hedging)")
    hedges_won: int = Field(0, description="calls a hedge answered first (the original was cancelled)")
    hedge_input_tokens: int = Field(
        0, description="what hedging cost: the losing copies' prompt tokens (a cancelled copy's prompt, as sent)"
    )
    hedge_output_tokens: int = Field(0, description="what hedging cost: the losing copies' output tokens")
    callback_url: str | None = Field(None, description="where the finished job is POSTed (signed), if anywhere")
    traceparent: str | None = Field(
        None,
        description="W3C trace context of the request that created the job, when tracing is on: every step and "
        "model call of the job is a span of this trace",
    )
    nonce: str = Field("", exclude=True, repr=False)

    @field_validator("failed_ranges")
    @classmethod
    def _in_document_order(cls, failed: list[FailedRange]) -> list[FailedRange]:
        """Stores append failures as they arrive; readers see them by position in the document."""
        return sorted(failed, key=lambda part: (part.start, part.end, part.level, part.index))


def new_job(
    output: OutputRecord,
    extract: str,
    mode: str,
    *,
    model: str | None = None,
    callback_url: str | None = None,
    stage_models: dict[str, str] | None = None,
) -> JobRecord:
    """A job to extract `extract` from `output`, with a fresh id and its own nonce (not yet stored)."""
    return JobRecord(
        id=new_id(),
        session_id=output.session_id,
        tenant=output.tenant,
        handle=output.handle,
        tool_name=output.tool_name,
        extract=extract,
        mode_requested=str(mode),
        model=model,
        stage_models=dict(stage_models or {}),
        nonce=new_nonce(),
        callback_url=callback_url,
        traceparent=tracing.current_traceparent(),
    )


class OverdueAction(StrEnum):
    """What the watchdog does with a job past its deadline (decided atomically in the store)."""

    RETRY = "retry"
    GIVE_UP = "give_up"
    SKIP = "skip"


def ended(status: str | None) -> bool:
    """A job whose status is gone (deleted, expired) or terminal no longer holds a live slot."""
    return status is None or JobStatus(status).terminal
