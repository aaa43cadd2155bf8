"""Provider limits shared by every worker: a model's requests and tokens per minute, paced before each call.

A provider that allows 60 requests a minute answers the 61st with a 429, and litellm's retries turn a
burst of 96 threads into a storm of them. Instead every model call first reserves its slot under the
model's limits (`RateLimiter.reserve`) and waits until then: the calls leave at the provider's rate,
in the order they asked, and none is refused. One limiter state per model, in Redis (`RedisRateLimiter`,
one Lua step per reservation, Redis' clock) so every worker on every host shares it; the in-memory twin
serves the embedded mode and the unit tests.

The algorithm is GCRA (a token bucket kept as one "theoretical arrival time" per resource): each
request moves the model's request time by `60 / rpm` seconds and its token time by `tokens × 60 / tpm`;
a call may leave when both are within the burst tolerance of now. A small burst (a second's worth by
default) keeps the long-run rate exactly the limit while leaving a provider's own bucket (a minute's
worth, continuously refilled) nearly full: slack for network jitter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, Field

MS_PER_MINUTE = 60_000.0


class RateLimit(BaseModel):
    """One model's provider limits; None = not limited on that resource."""

    rpm: int | None = Field(None, ge=1, description="requests per minute")
    tpm: int | None = Field(None, ge=1, description="tokens per minute (prompt + max_tokens, as providers count)")

    @property
    def limited(self) -> bool:
        return self.rpm is not None or self.tpm is not None


@dataclass(frozen=True)
class Cost:
    """What one call costs under a `RateLimit`, in the limiter's units (milliseconds of each resource)."""

    per_request_ms: float
    per_token_ms: float
    tokens: int

    @classmethod
    def of(cls, limit: RateLimit, tokens: int) -> Cost:
        """A call of `tokens` tokens; a call larger than a whole minute's tokens costs one minute (the
        provider refuses it anyway, and it must not block the model for longer)."""
        per_request = MS_PER_MINUTE / limit.rpm if limit.rpm else 0.0
        per_token = MS_PER_MINUTE / limit.tpm if limit.tpm else 0.0
        return cls(per_request, per_token, min(tokens, limit.tpm) if limit.tpm else tokens)


class RateLimiter(Protocol):
    """Reserve call slots under a model's limits, shared by every caller of the limiter's backend."""

    def reserve(self, model: str, limit: RateLimit, tokens: int) -> float:
        """Reserve the next slot for one call of `tokens` tokens to `model`: the seconds to wait before sending.

        The slot is taken at once (a caller that then gives up leaves a gap, never a burst)."""
        ...
