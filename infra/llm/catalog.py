"""A model per stage: which client and which limits each stage of a job uses (docs/models.md).

A job's map calls, reduce calls and read-grep turns each go to their stage's model
(`TOOLOUT_MAP_MODEL`, `TOOLOUT_REDUCE_MODEL`, `TOOLOUT_AGENT_MODEL`, default `TOOLOUT_MODEL`), or to the
one model its request named from `TOOLOUT_ALLOWED_MODELS`. A stage with fallbacks gets a Router client
(`infra.llm.router`); one without, the plain litellm client. Clients are built once per model chain and
shared by every job in the process; every one paces its calls with the process's `Pacer`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from extraction.protocols import LLM
from extraction.strategies.mapreduce import ModelLimits
from infra.errors import ModelNotAllowed
from infra.llm.hedging import HedgePolicy, Hedger
from infra.llm.info import model_limits_for
from infra.llm.ratelimit.base import RateLimit
from infra.llm.ratelimit.pacing import Pacer

if TYPE_CHECKING:
    from infra.llm.ratelimit.base import RateLimiter
    from infra.settings import Settings


def check_requested_model(settings: Settings, model: str | None) -> str | None:
    """The request's `model` if the operator allows it (None when it named none); else `ModelNotAllowed`."""
    if model is None or model in settings.allowed_models:
        return model
    allowed = ", ".join(settings.allowed_models) or "none: this deployment chooses the model of each stage"
    raise ModelNotAllowed(
        f"model {model!r} is not allowed here; allowed models: {allowed}",
        model=model,
        allowed_models=list(settings.allowed_models),
    )


def rate_limits(settings: Settings) -> dict[str, RateLimit]:
    """rpm/tpm per model, from `TOOLOUT_MODELS`."""
    return {model: RateLimit(rpm=c.rpm, tpm=c.tpm) for model, c in settings.models.items() if c.rpm or c.tpm}


def pacer_for(settings: Settings, limiter: RateLimiter) -> Pacer:
    return Pacer(limiter, rate_limits(settings))


class ModelCatalog:
    """The clients and limits of every model a job of this deployment may call."""

    def __init__(self, settings: Settings, pacer: Pacer | None) -> None:
        self.settings = settings
        self.pacer = pacer
        self.hedger = Hedger(hedge_policy(settings)) if settings.hedge_enabled else None
        """One per process: every client of the catalog shares its latency windows (keyed by model and stage)."""
        self._clients: dict[tuple[str, ...], LLM] = {}
        self._lock = threading.Lock()

    def llm(self, stage: str, model: str) -> LLM:
        """The client for `stage` calling `model` first, then the stage's fallbacks."""
        chain = tuple(self.settings.model_chain(stage, model))
        key = (stage, *chain) if len(chain) > 1 else chain
        with self._lock:
            if key not in self._clients:
                self._clients[key] = self._build(stage, list(chain))
            return self._clients[key]

    def limits(self, model: str) -> ModelLimits:
        return model_limits_for(self.settings, model)

    def _build(self, stage: str, chain: list[str]) -> LLM:
        if len(chain) == 1:
            from infra.llm.client import client_from_settings  # litellm: imported when a process needs it

            return client_from_settings(self.settings, chain[0], pacer=self.pacer, hedger=self.hedger)
        from infra.llm.router import router_client

        return router_client(self.settings, stage, chain, pacer=self.pacer)


def hedge_policy(settings: Settings) -> HedgePolicy:
    """The `TOOLOUT_HEDGE_*` settings as a policy (its docstring says where the defaults come from)."""
    return HedgePolicy(
        enabled=settings.hedge_enabled,
        percentile=settings.hedge_percentile,
        median_multiple=settings.hedge_median_multiple,
        floor_seconds=settings.hedge_floor_seconds,
        min_samples=settings.hedge_min_samples,
        initial_delay_seconds=settings.hedge_initial_delay_seconds,
        window=settings.hedge_window,
        budget_fraction=settings.hedge_budget_fraction,
        per_call=settings.hedge_per_call,
    )
