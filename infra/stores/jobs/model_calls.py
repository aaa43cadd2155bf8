"""Model calls as the job store counts them per model: what a job spent on each model, and the fallbacks it took.

A job's `usage` counts each settled part once (its final output's calls); `model_usage` counts every call
as it was made, under the model that answered it, so a map model and a reduce model (or a fallback) each
show what they cost. The store-wide totals behind them are per tenant, model and stage: `/metrics`
exports them as `toolout_model_*_total{tenant, model, stage}`.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from extraction.protocols import Usage
from infra.stores.jobs.model import ModelFallback

SEPARATOR = "\x1f"
JOB_FIELD = "model_usage"
"""The job hash's per-model counters are `model_usage<SEP><model><SEP><calls|input_tokens|output_tokens|cost_usd>`."""


@dataclass(frozen=True)
class ModelCall:
    """One model call as `JobAccounting.count_model_call` counts it. A map's gate keeps its calls until the map
    records its output, so that the count rides in the same round trip (`JobFanIn.record_chunk_and_settle`)."""

    stage: str
    model: str
    usage: Usage
    fallback: ModelFallback | None = None


class ModelUsageTotal(BaseModel):
    """What one tenant's jobs have spent on one model in one stage, since the store began."""

    tenant: str
    model: str
    stage: str
    usage: Usage


def job_model_usage(fields: dict[str, str]) -> dict[str, Usage]:
    """The per-model counters of a job hash, as `JobRecord.model_usage`."""
    counts: dict[str, dict[str, str]] = {}
    for name, value in fields.items():
        if name.startswith(JOB_FIELD + SEPARATOR):
            model, counter = name[len(JOB_FIELD) + 1 :].rsplit(SEPARATOR, 1)
            counts.setdefault(model, {})[counter] = value
    return {model: Usage.model_validate(found) for model, found in sorted(counts.items())}


def totals_from_fields(fields: dict[str, str]) -> list[ModelUsageTotal]:
    owners: dict[tuple[str, str, str], dict[str, str]] = {}
    for name, value in fields.items():
        tenant, model, stage, counter = name.rsplit(SEPARATOR, 3)
        owners.setdefault((tenant, model, stage), {})[counter] = value
    return [
        ModelUsageTotal(tenant=tenant, model=model, stage=stage, usage=Usage.model_validate(counts))
        for (tenant, model, stage), counts in sorted(owners.items())
    ]
