"""Every model call passes `Pacer.pace` before it leaves: it waits for the call's slot under the model's limits.

The pacer is called where the model is known — `LiteLLMClient` before `litellm.completion`, and the
Router's pre-call hook before each deployment it tries (a fallback is paced under its own model's
limits). What the call is about (its job, its tokens) travels in `CALL` (a context variable set by the
job's gate around the call), so neither litellm nor the clients need to know about jobs: a waiting call
is reported through `CallScope.on_wait`, which the gate turns into the job's `calls_waiting` progress.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from extraction.documents.tokens import count_tokens
from infra.llm.hedging.policy import HedgeTicket
from infra.llm.ratelimit.base import RateLimit, RateLimiter

log = logging.getLogger("toolout.ratelimit")

WaitListener = Callable[[int, float], None]
"""(change in waiting calls: +1 as a call starts waiting, -1 as it leaves; seconds it waited)."""


@dataclass
class CallScope:
    """One model call as the pacer sees it: its size, who hears that it waits, which models it tried."""

    count: Callable[[], int] = lambda: 0
    on_wait: WaitListener = lambda delta, seconds: None
    attempted: list[str] = field(default_factory=list)
    pace: Callable[[str], float] | None = None
    """Set by a Router client for its pre-call hook (the hook has no other way to reach the pacer)."""
    hedge: HedgeTicket | None = None
    """Set by a job's gate when the call may be hedged (`infra.llm.hedging`): its stage and the job's budget."""

    @cached_property
    def tokens(self) -> int:
        """Counted once, and only if some model has a tpm limit (counting a large prompt takes milliseconds)."""
        return self.count()


CALL: ContextVar[CallScope | None] = ContextVar("toolout_model_call", default=None)


@contextmanager
def call_scope(scope: CallScope) -> Iterator[CallScope]:
    token = CALL.set(scope)
    try:
        yield scope
    finally:
        CALL.reset(token)


class Pacer:
    """Wait for each call's slot under its model's `RateLimit` (models without one pass at once)."""

    def __init__(
        self, limiter: RateLimiter, limits: Mapping[str, RateLimit], *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._limiter = limiter
        self._limits = {model: limit for model, limit in limits.items() if limit.limited}
        self._sleep = sleep

    def pace(self, model: str) -> float:
        """Block until `model` may take this call; the seconds waited."""
        scope = CALL.get() or CallScope()
        scope.attempted.append(model)
        limit = self._limits.get(model)
        if limit is None:
            return 0.0
        wait = self._limiter.reserve(model, limit, scope.tokens if limit.tpm else 0)
        if wait > 0:
            scope.on_wait(1, 0.0)
            try:
                self._sleep(wait)
            finally:
                scope.on_wait(-1, wait)
        return wait


def request_tokens(
    messages: list[Any], tools: list[dict[str, Any]] | None, max_tokens: int | None, encoding: str
) -> int:
    """What a provider counts against tpm before answering: the prompt (OpenAI's per-message overhead
    included, as the offline model counts it) plus the output tokens the call may spend."""
    prompt = 3 + sum(4 + count_tokens(_message_text(m), encoding) for m in messages)
    if tools:
        prompt += count_tokens(json.dumps(tools), encoding)
    return prompt + (max_tokens or 0)


def _message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    calls = message.get("tool_calls") or [] if isinstance(message, dict) else []
    return text + "".join(json.dumps(c.get("function", {})) for c in calls if isinstance(c, dict))
