"""Where a model's calls go when the settings name no endpoint: the provider's own conventions, as litellm reads them.

A model without `api_base`/`api_key` (from `TOOLOUT_MODELS`, `TOOLOUT_MODEL_API_BASE`/`_KEY`) is sent with
neither, and litellm takes them from the provider's variables: `OPENAI_BASE_URL` and `OPENAI_API_KEY` for
`openai/…`, `ANTHROPIC_API_KEY` for `anthropic/…`, and so on. This module says the same to people: the start-up
line of `toolout dev` and `toolout api`, and `/readyz` when such a model has no key at all (every call would fail).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from infra.settings import STAGES, Settings

OPENAI_BASE_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE")
"""litellm's own order for an `openai/…` model without api_base (its `main.completion`)."""


@dataclass(frozen=True)
class Destination:
    """One model's endpoint as a call will reach it: `api_base` None is the provider's public endpoint."""

    model: str
    api_base: str | None
    api_key: str | None
    missing_keys: tuple[str, ...] = ()

    def describe(self) -> str:
        where = self.api_base or "the provider's own endpoint"
        if self.missing_keys:
            return f"{self.model} at {where}, NO KEY: set {' or '.join(self.missing_keys)} (or TOOLOUT_MODEL_API_KEY)"
        return f"{self.model} at {where}"


def destination(settings: Settings, model: str) -> Destination:
    """Where `model`'s calls go: the settings' endpoint, else the provider's variables (never the offline model's)."""
    config = settings.model_config_for(model)
    if config.api_base is not None:
        return Destination(model, config.api_base, config.api_key)
    base = _provider_base(model)
    key = config.api_key or (os.environ.get("OPENAI_API_KEY") if base else None)
    return Destination(model, base, key, () if config.api_key else _missing_keys(model))


def destinations(settings: Settings) -> list[Destination]:
    """Each distinct model the stages call (and their fallbacks), once."""
    models = [m for stage in STAGES for m in settings.model_chain(stage, settings.stage_model(stage))]
    return [destination(settings, model) for model in dict.fromkeys(models)]


def model_calls_line(settings: Settings) -> str:
    """One line for a start-up banner: where model calls will go."""
    return "model calls: " + "; ".join(d.describe() for d in destinations(settings))


def _provider_base(model: str) -> str | None:
    """The base URL litellm would take from the environment for an OpenAI-compatible model, else None."""
    if not model.startswith("openai/"):
        return None
    return next((os.environ[name] for name in OPENAI_BASE_VARIABLES if os.environ.get(name)), None)


def _missing_keys(model: str) -> tuple[str, ...]:
    """The provider variables litellm looks for and does not find (empty: a key is there, or none is needed)."""
    import litellm  # the heavy import only where a model without an endpoint is asked about

    try:
        found = litellm.validate_environment(model)
    except Exception:  # noqa: BLE001 - an unknown provider is not ours to judge: the call will say
        return ()
    return tuple(found.get("missing_keys") or ())
