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


def model_limits_for(settings: Settings) -> ModelLimits:
    """Context and output reservation from litellm's model map, or the settings' defaults for unknown models."""
    return _limits(
        settings.model, settings.model_context_tokens, settings.model_max_output_tokens, settings.tokenizer_encoding
    )


@lru_cache(maxsize=16)
def _limits(model: str, default_context: int, default_max_output: int, encoding: str) -> ModelLimits:
    from infra.llm import model_limits

    context, max_output = model_limits(model, default_context=default_context, default_max_output=default_max_output)
    return ModelLimits(context_tokens=context, max_output_tokens=max_output, encoding=encoding)


def price_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """What `input_tokens` in and `output_tokens` out cost on `model` by litellm's cost map; None if unpriced."""
    from infra.llm import _litellm

    try:
        prompt, completion = _litellm().cost_per_token(
            model=model, prompt_tokens=input_tokens, completion_tokens=output_tokens
        )
    except Exception:  # noqa: BLE001 - litellm raises its own Exception subclasses for unmapped models
        return None
    return float(prompt) + float(completion)
