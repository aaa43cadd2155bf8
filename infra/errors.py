"""Infra's branch of the error tree: third-party exceptions are translated into these at the seam."""

from __future__ import annotations

from extraction.errors import Conflict, ExtractionError, InvalidInput, NotFound, ToolOutError


class BackendUnavailable(ToolOutError):
    """Redis, the blob store or the broker did not answer; the request may be retried later."""

    code = "backend_unavailable"


class BlobNotFound(NotFound):
    """No blob is stored under that key."""

    code = "blob_not_found"


class InvalidKey(InvalidInput):
    """A blob key or object name is malformed or tries to escape its root."""

    code = "invalid_key"


class LLMCallError(ExtractionError):
    """The model provider failed (after litellm's own retries)."""

    code = "llm_error"

    def __init__(self, message: str, *, retryable: bool = False, **details: object) -> None:
        super().__init__(message, retryable=retryable, **details)
        self.retryable = retryable


class LLMTimeout(LLMCallError):
    """The model did not answer within the configured timeout."""

    code = "llm_timeout"


class LLMRateLimited(LLMCallError):
    """The provider answered 429 until retries ran out."""

    code = "llm_rate_limited"


class LLMBudgetExhausted(ExtractionError):
    """The job already reserved `max_llm_calls_per_job` model calls; no further call is made."""

    code = "llm_budget_exhausted"


class Unauthorized(ToolOutError):
    """No credentials, malformed credentials or an unknown API key (→ 401 with a Bearer challenge).

    `challenge` is the `WWW-Authenticate` value (RFC 6750 §3): clients learn which scheme to use,
    and `error=` says whether the header was missing, malformed or the key was refused.
    """

    code = "unauthorized"

    def __init__(self, message: str, *, error: str | None = None, **details: object) -> None:
        super().__init__(message, **details)
        self.challenge = 'Bearer realm="toolout"' + (f', error="{error}"' if error else "")


class TooManyRequests(ToolOutError):
    """A per-tenant limit is reached (→ 429 with `Retry-After`); the same request later may succeed."""

    code = "too_many_requests"

    def __init__(self, message: str, *, retry_after: int = 5, **details: object) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.retry_after = retry_after


class IdempotencyKeyReused(InvalidInput):
    """An Idempotency-Key already used for a different request (→ 422, Stripe semantics)."""

    code = "idempotency_key_reused"


class IdempotencyKeyInUse(Conflict):
    """A request with the same Idempotency-Key is still in flight (→ 409; retry once it has finished)."""

    code = "idempotency_key_in_use"


class BudgetExceeded(InvalidInput):
    """The job's estimate is over the `max_input_tokens` / `max_cost_usd` it was sent with (nothing ran)."""

    code = "budget_exceeded"


class ModelNotAllowed(InvalidInput):
    """A request named a model the operator did not put in `TOOLOUT_ALLOWED_MODELS` (422, nothing ran)."""

    code = "model_not_allowed"
