"""The cache key of one extraction request in this deployment (see `extraction.result_key` for what is in it)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import metadata
from typing import Any

from extraction.result_key import prompt_version, result_key
from infra.settings import Settings
from infra.stores.records import OutputRecord

ANSWER_SETTINGS = (
    "model_context_tokens",
    "model_max_output_tokens",
    "tokenizer_encoding",
    "chunk_overlap",
    "max_chunks_for_full_mode",
    "long_line_bytes",
    "agent_max_turns",
    "agent_max_tool_calls_per_turn",
    "agent_max_total_tokens",
    "evidence",
)
"""Settings that change a successful answer: the chunk plan (window, output reservation, tokenizer,
overlap), the route auto picks, and what the read-grep sub-agent may do. Settings that only decide
whether a job falls back (reduce depth, retries, the call budget, truncate size) are not here:
fallbacks are never cached. The model is part of the key itself."""


def answer_parameters(settings: Settings) -> dict[str, Any]:
    """The settings above, plus the litellm release: its model map gives the model's limits."""
    return {name: getattr(settings, name) for name in ANSWER_SETTINGS} | {"litellm": _package_version("litellm")}


def deployment_prompt_version(settings: Settings) -> str:
    return _prompt_version(json.dumps(answer_parameters(settings), sort_keys=True))


def cache_key(
    settings: Settings, *, tenant: str, output: OutputRecord, extract: str, mode: str, model: str | None = None
) -> str:
    """The key under which a request for `extract` (in `mode`) on `output` finds earlier answers: the model of
    every stage (the request's `model`, else each stage's own) and each stage's fallbacks are part of it."""
    return result_key(
        tenant=tenant,
        sha256=output.stats.sha256,
        extract=extract,
        mode=mode,
        tool_name=output.tool_name,
        tool_args=output.tool_args,
        model=models_in_key(settings, model),
        version=deployment_prompt_version(settings),
    )


def models_in_key(settings: Settings, requested: str | None) -> str:
    """`settings.model` alone when no stage has a model or fallbacks of its own (keys stay as they were)."""
    stages = settings.stage_models(requested)
    chains = {stage: settings.model_chain(stage, model) for stage, model in stages.items()}
    if all(chain == [settings.model] for chain in chains.values()):
        return settings.model
    return ";".join(f"{stage}={','.join(chain)}" for stage, chain in chains.items())


@lru_cache(maxsize=8)
def _prompt_version(parameters: str) -> str:
    """Rendering and hashing every prompt is not free: once per configuration is enough."""
    return prompt_version(json.loads(parameters))


@lru_cache(maxsize=4)
def _package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"
