"""The SDK's errors: one tree under `ToolOutAPIError`, so a caller catches one type.

    ToolOutAPIError              any failed call: `status`, `code`, `message`, `details`
    ├── BadRequestError          400, 413, 416, 422: the request was wrong; `code` and `details`
    │                            are the API's typed error (e.g. `validation_error` with its `errors`)
    ├── NotFoundError            404 (an unknown handle, job, session, variable)
    ├── ConflictError            409 (e.g. cancelling a job that already ended)
    ├── TooManyRequestsError     429: a tenant limit; `retry_after` seconds from the header
    └── UnavailableError         5xx: the service failed or is overloaded (`retry_after` on a 503)
        └── TransportError       no answer at all: connection refused or lost, timeout (`status` 0)

A `TransportError` is an `UnavailableError` because callers treat both alike (the operator must see
it, the model cannot fix it); `isinstance(exc, UnavailableError)` is the test for "not the caller's
mistake". The httpx error it wraps stays as `__cause__`. Any other status is a plain `ToolOutAPIError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import httpx


class ToolOutAPIError(Exception):
    """The API answered with its error shape (or did not answer); `code`, `status` and `details` say what was wrong."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details or {}


class BadRequestError(ToolOutAPIError):
    """400/413/416/422: the request itself was wrong; `code`/`details` name what (the caller can fix it)."""


class NotFoundError(ToolOutAPIError):
    """404: no such handle, job, session or variable (for an unknown handle, `details` may carry the model's text)."""


class ConflictError(ToolOutAPIError):
    """409: the resource is not in a state that allows this (e.g. the job already ended)."""


class TooManyRequestsError(ToolOutAPIError):
    """429: a per-tenant limit; the same request may succeed after `retry_after` seconds (None if not said)."""

    def __init__(self, *args: Any, retry_after: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after = retry_after


class UnavailableError(ToolOutAPIError):
    """5xx: the service failed or is unavailable; `retry_after` when a 503 says when to come back."""

    def __init__(self, *args: Any, retry_after: float | None = None) -> None:
        super().__init__(*args)
        self.retry_after = retry_after


class TransportError(UnavailableError):
    """No answer: the connection failed or was lost, or the request timed out (`code` says which)."""


_BY_STATUS: dict[int, type[ToolOutAPIError]] = {
    400: BadRequestError,
    413: BadRequestError,
    416: BadRequestError,
    422: BadRequestError,
    404: NotFoundError,
    409: ConflictError,
    429: TooManyRequestsError,
}


def retry_after(response: httpx.Response) -> float | None:
    """The `Retry-After` header in seconds (the API sends seconds; an HTTP date reads as unknown)."""
    try:
        return max(0.0, float(response.headers["Retry-After"]))
    except (KeyError, ValueError):
        return None


def error_for(
    status: int, code: str, message: str, details: dict[str, Any], response: httpx.Response
) -> ToolOutAPIError:
    """The most specific class for `status`."""
    if status >= 500:
        return UnavailableError(status, code, message, details, retry_after=retry_after(response))
    cls = _BY_STATUS.get(status, ToolOutAPIError)
    if cls is TooManyRequestsError:
        return TooManyRequestsError(status, code, message, details, retry_after=retry_after(response))
    return cls(status, code, message, details)


def api_error(response: httpx.Response) -> ToolOutAPIError:
    """The typed error for a 4xx/5xx answer (a body without the error shape still gives a useful one)."""
    try:
        error = response.json()["error"]
        code, message, details = error["code"], error["message"], error.get("details") or {}
    except (ValueError, KeyError, TypeError):
        code, message, details = "http_error", response.text[:500], {}
    return error_for(response.status_code, code, message, details, response)


def transport_error(exc: httpx.HTTPError) -> TransportError:
    """An httpx failure without an answer, as ours (`code`: timeout, connect_error or network_error)."""
    if isinstance(exc, httpx.TimeoutException):
        code = "timeout"
    elif isinstance(exc, httpx.ConnectError):
        code = "connect_error"
    else:
        code = "network_error"
    return TransportError(0, code, str(exc) or type(exc).__name__)


@contextlib.contextmanager
def wrapped_transport_errors() -> Iterator[None]:
    """The transport seam: httpx's errors leave as `TransportError` (the original kept as `__cause__`)."""
    try:
        yield
    except httpx.HTTPError as exc:
        raise transport_error(exc) from exc
