"""Infra's branch of the error tree: third-party exceptions are translated into these at the seam."""

from __future__ import annotations

from extraction.errors import ExtractionError, InvalidInput, NotFound, ToolOutError


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
