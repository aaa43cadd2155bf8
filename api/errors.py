"""The one place our error tree (and FastAPI's own errors) becomes HTTP.

Every error response has the same body, `{"error": {"code", "message", "details"}}`, so SDK and MCP
clients parse one shape. Client mistakes are always 4xx: validation problems are 422, our
`InvalidInput` family 400 (413 for uploads over the limit, 416 for unsatisfiable ranges, 422 for a
variable, path, destination, directive or buffer_ops argument that is wrong), and only
an exception we did not raise on purpose becomes a logged 500 that reveals nothing. A 401 carries
a `WWW-Authenticate: Bearer` challenge, a 429 (and a 503) a `Retry-After`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from api.deps import refusal_before
from api.upload_guards import UnsupportedEncoding, UploadTimedOut
from extraction.buffers.ops import BufferOpError
from extraction.directives.file_paths import InvalidFilePath
from extraction.directives.specs import DirectiveError, InvalidDestination, InvalidSource
from extraction.errors import Conflict, InvalidInput, NotFound, PatternError, PayloadTooLarge, ToolOutError
from extraction.variables.errors import VariableError
from infra.errors import (
    BackendUnavailable,
    BudgetExceeded,
    IdempotencyKeyReused,
    ModelNotAllowed,
    TooManyRequests,
    Unauthorized,
)
from infra.webhooks.delivery import InvalidCallbackUrl, WebhooksNotConfigured

log = logging.getLogger("toolout.api")

RETRY_AFTER_SECONDS = 5


class RangeNotSatisfiable(InvalidInput):
    """A `Range` header asked for bytes the stored output does not have."""

    code = "range_not_satisfiable"


_STATUS_BY_ERROR: dict[type[ToolOutError], int] = {
    RangeNotSatisfiable: 416,
    IdempotencyKeyReused: 422,
    BudgetExceeded: 422,
    ModelNotAllowed: 422,
    # variables, output routing and buffer_ops: the request named or addressed something wrongly
    VariableError: 422,
    InvalidFilePath: 422,
    InvalidDestination: 422,
    InvalidSource: 422,
    DirectiveError: 422,
    BufferOpError: 422,
    InvalidCallbackUrl: 422,
    WebhooksNotConfigured: 422,
    PayloadTooLarge: 413,
    UploadTimedOut: 408,
    UnsupportedEncoding: 415,
    PatternError: 400,
    InvalidInput: 400,
    NotFound: 404,
    Conflict: 409,
    Unauthorized: 401,
    TooManyRequests: 429,
    BackendUnavailable: 503,
}

_CODE_BY_HTTP_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


class ErrorDetail(BaseModel):
    code: str = Field(description="machine-readable, e.g. not_found, validation_error, payload_too_large")
    message: str
    details: dict[str, Any] = Field(
        description="context: the offending field, limits, `tool_result` for an unknown handle"
    )


class ErrorBody(BaseModel):
    """The one error shape every 4xx/5xx has (what `error_responses` documents)."""

    error: ErrorDetail


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(code, message, details), status_code=status, headers=headers)


def status_for(exc: ToolOutError) -> int:
    """The most specific class in the error's MRO decides; anything unlisted is our fault (500)."""
    for cls in type(exc).__mro__:
        if cls in _STATUS_BY_ERROR:
            return _STATUS_BY_ERROR[cls]
    return 500


def _headers_for(exc: ToolOutError, status: int) -> dict[str, str] | None:
    if status == 503:
        return {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if isinstance(exc, TooManyRequests):
        return {"Retry-After": str(exc.retry_after)}
    if isinstance(exc, Unauthorized):
        return {"WWW-Authenticate": exc.challenge}
    if status == 416 and "size" in exc.details:
        return {"Content-Range": f"bytes */{exc.details['size']}"}
    return None


def _toolout_error(exc: ToolOutError) -> JSONResponse:
    status = status_for(exc)
    if status == 503:
        log.warning("%s: %s %s", exc.code, exc.message, exc.details)
    elif status >= 500:
        log.error("%s: %s %s", exc.code, exc.message, exc.details)
    if status == 500:
        return error_response(500, exc.code, "internal error")
    return error_response(status, exc.code, exc.message, _jsonable(exc.details), _headers_for(exc, status))


def _validation_error(exc: RequestValidationError) -> JSONResponse:
    errors = [_clean_error(err) for err in exc.errors()]
    first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(part) for part in first["loc"])
    message = f"{where}: {first['msg']}" if where else str(first["msg"])
    return error_response(422, "validation_error", message, {"errors": errors})


def _clean_error(err: dict[str, Any]) -> dict[str, Any]:
    """Only loc/msg/type: `input` may be raw bytes and `ctx` may hold exception objects."""
    return {"loc": list(err.get("loc", ())), "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))}


def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    code = _CODE_BY_HTTP_STATUS.get(exc.status_code, "http_error")
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": _allowed_methods(request)}
    return error_response(exc.status_code, code, str(exc.detail), headers=headers)


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> str:
    """Every method the path supports (RFC 9110 §15.5.6), not only those of the first route Starlette tried.

    FastAPI registers `GET /x` and `DELETE /x` as two routes, and Starlette's own 405 names the first
    one's. Each method is tried against the routes through the public `matches`, which also sees
    into included routers. As in OpenAPI, a concrete path shadows a templated one: for the
    documented `/v1/extractions/estimate` only its own methods count, not `GET /v1/extractions/{job_id}`.
    """
    documented = request.app.openapi().get("paths", {}).get(request.scope["path"])
    if documented:
        allowed = {method.upper() for method in documented}
        return ", ".join(method for method in _METHODS if method in allowed)
    routes = request.app.router.routes
    return ", ".join(
        method
        for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes)
    )


def _jsonable(details: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)
        for key, value in details.items()
    }


async def handle_error(request: Request, exc: Exception) -> JSONResponse:
    """The single mapping, registered for every exception family FastAPI can route to a handler.

    A client error that came before the key was checked (a malformed body, path or query) yields to
    the 401 the request deserves: whoever sends no valid key learns nothing about the route.
    """
    if _before_auth(exc):
        refusal = await run_in_threadpool(refusal_before, request)
        exc = refusal if refusal is not None else exc
    if isinstance(exc, ToolOutError):
        return _toolout_error(exc)
    if isinstance(exc, RequestValidationError):
        return _validation_error(exc)
    if isinstance(exc, StarletteHTTPException):
        return _http_error(request, exc)
    # No logging here: Starlette re-raises after this response, and the server logs the traceback.
    return error_response(500, "internal_error", "internal error")


def _before_auth(exc: Exception) -> bool:
    """Client errors FastAPI or a route may raise before `get_tenant` ran; not the router's own 404/405."""
    if isinstance(exc, RequestValidationError):
        return True
    if isinstance(exc, StarletteHTTPException):
        return 400 <= exc.status_code < 500 and exc.status_code not in (401, 404, 405)
    return isinstance(exc, ToolOutError) and 400 <= status_for(exc) < 500 and not isinstance(exc, Unauthorized)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries documenting the error shape for the given statuses."""
    example = error_body("code", "what went wrong", {"field": "context"})
    return {
        status: {"model": ErrorBody, "description": "error", "content": {"application/json": {"example": example}}}
        for status in statuses
    }


def install_error_handlers(app: FastAPI) -> None:
    for family in (ToolOutError, RequestValidationError, StarletteHTTPException, Exception):
        app.add_exception_handler(family, handle_error)


def validation_error(loc: Sequence[str | int], msg: str, kind: str = "value_error") -> RequestValidationError:
    """A 422 for checks that depend on settings or raw headers, shaped like pydantic's own."""
    return RequestValidationError([{"loc": tuple(loc), "msg": msg, "type": kind}])
