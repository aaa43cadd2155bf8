"""What litellm's model map knows about the configured model: its limits and its prices.

Workers need the limits to plan chunks; the API needs the same limits and the prices to estimate a
job before it runs. Both come from litellm's bundled model map (`LITELLM_LOCAL_MODEL_COST_MAP`: no
network), imported lazily (seconds) and looked up once per configuration.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from extraction.strategies.mapreduce import ModelLimits

if TYPE_CHECKING:
    from infra.settings import Settings


def model_limits_for(settings: Settings, model: str | None = None) -> ModelLimits:
    """`model`'s (default: `TOOLOUT_MODEL`) context and output reservation: the operator's `TOOLOUT_MODELS`
    entry, else litellm's model map, else the settings' defaults for models litellm does not know."""
    model = model or settings.model
    own = settings.models.get(model)
    context = own.context_tokens if own and own.context_tokens else settings.model_context_tokens
    output = own.max_output_tokens if own and own.max_output_tokens else settings.model_max_output_tokens
    found = _limits(model, context, output, settings.tokenizer_encoding)
    if own is None or (own.context_tokens is None and own.max_output_tokens is None):
        return found
    return ModelLimits(
        context_tokens=own.context_tokens or found.context_tokens,
        max_output_tokens=own.max_output_tokens or found.max_output_tokens,
        encoding=found.encoding,
    )


def stage_limits(settings: Settings, models: dict[str, str]) -> dict[str, ModelLimits]:
    """Each stage's limits, from the model it calls (`Settings.stage_models`)."""
    return {stage: model_limits_for(settings, model) for stage, model in models.items()}


@lru_cache(maxsize=16)
def _limits(model: str, default_context: int, default_max_output: int, encoding: str) -> ModelLimits:
    from infra.llm.client import model_limits

    context, max_output = model_limits(model, default_context=default_context, default_max_output=default_max_output)
    return ModelLimits(context_tokens=context, max_output_tokens=max_output, encoding=encoding)


def price_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """What `input_tokens` in and `output_tokens` out cost on `model` by litellm's cost map; None if unpriced."""
    from infra.llm.client import _litellm

    try:
        prompt, completion = _litellm().cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
    except Exception:  # noqa: BLE001 - litellm raises its own Exception subclasses for unmapped models
        return None
    return float(prompt) + float(completion)
