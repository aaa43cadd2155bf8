"""Only `ToolOutAPIError` subclasses leave the SDK: every error status, a refused connection, a timeout.

The statuses come from a mock transport (the API's error shape, `Retry-After` as the API sends it);
the connection error and the timeout are real sockets: a port nobody listens on, and one that
accepts connections and never answers.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from toolout.client import (
    AsyncToolOutClient,
    BadRequestError,
    ConflictError,
    NotFoundError,
    ToolOutAPIError,
    ToolOutClient,
    TooManyRequestsError,
    TransportError,
    UnavailableError,
)

EXPECTED: dict[int, type[ToolOutAPIError]] = {
    400: BadRequestError,
    401: ToolOutAPIError,
    403: ToolOutAPIError,
    404: NotFoundError,
    409: ConflictError,
    413: BadRequestError,
    416: BadRequestError,
    422: BadRequestError,
    429: TooManyRequestsError,
    500: UnavailableError,
    502: UnavailableError,
    503: UnavailableError,
}
# Each call the clients make, as (name, sync call, async call): a plain request, an upload, the
# `tool_output` plan (whose errors are thrown into it), and the streamed resolve.
Call = tuple[str, Callable[[ToolOutClient], Any], Callable[[AsyncToolOutClient], Any]]
CALLS: list[Call] = [
    ("create_session", lambda c: c.create_session(), lambda c: c.create_session()),
    ("store", lambda c: c.store("s", b"x"), lambda c: c.store("s", b"x")),
    ("tool_output", lambda c: c.tool_output("h", "x"), lambda c: c.tool_output("h", "x")),
    ("resolve_stream", lambda c: list(c.resolve_stream("s", ["$a"])), lambda c: _drain(c.resolve_stream("s", ["$a"]))),
]


async def _drain(stream: Any) -> list[str]:
    return [text async for text in stream]


def answering(status: int) -> httpx.MockTransport:
    """A service answering every request with `status` in the API's error shape."""
    body = {"error": {"code": f"code_{status}", "message": f"refused with {status}", "details": {"field": "x"}}}
    headers = {"Retry-After": "7"} if status in (429, 503) else {}
    return httpx.MockTransport(lambda _: httpx.Response(status, json=body, headers=headers))


def raised(sync: Callable[[ToolOutClient], Any], make: Callable[[], ToolOutClient]) -> BaseException:
    with make() as client:
        try:
            sync(client)
        except Exception as exc:  # noqa: BLE001 - what escapes is the point of the test
            return exc
    raise AssertionError("no error")


def raised_async(call: Callable[[AsyncToolOutClient], Any], make: Callable[[], AsyncToolOutClient]) -> BaseException:
    async def run() -> BaseException:
        async with make() as client:
            try:
                await call(client)
            except Exception as exc:  # noqa: BLE001
                return exc
        raise AssertionError("no error")

    return asyncio.run(run())


def both(
    call: Call, sync_http: Callable[[], httpx.Client], async_http: Callable[[], httpx.AsyncClient]
) -> list[BaseException]:
    """The error each client raises for the same call."""
    _, sync_call, async_call = call
    return [
        raised(sync_call, lambda: ToolOutClient("http://toolout.test", http=sync_http())),
        raised_async(async_call, lambda: AsyncToolOutClient("http://toolout.test", http=async_http())),
    ]


@pytest.mark.parametrize("call", CALLS, ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("status", sorted(EXPECTED))
def test_each_error_status_is_its_class_on_both_clients(status: int, call: Call) -> None:
    base = "http://toolout.test"
    for exc in both(
        call,
        lambda: httpx.Client(base_url=base, transport=answering(status)),
        lambda: httpx.AsyncClient(base_url=base, transport=answering(status)),
    ):
        assert type(exc) is EXPECTED[status], (status, repr(exc))
        assert (exc.status, exc.code, exc.details) == (status, f"code_{status}", {"field": "x"})
        if isinstance(exc, TooManyRequestsError | UnavailableError):
            assert exc.retry_after == (7.0 if status in (429, 503) else None)


def test_an_answer_without_the_error_shape_is_still_typed() -> None:
    transport = httpx.MockTransport(lambda _: httpx.Response(502, text="<html>bad gateway</html>"))
    client = ToolOutClient("http://t", http=httpx.Client(base_url="http://t", transport=transport))
    with client, pytest.raises(UnavailableError) as failed:
        client.create_session()
    assert (failed.value.status, failed.value.code) == (502, "http_error") and "bad gateway" in failed.value.message


def test_a_success_whose_body_is_not_json_is_typed() -> None:
    transport = httpx.MockTransport(lambda _: httpx.Response(200, text="<html>captive portal</html>"))
    client = ToolOutClient("http://t", http=httpx.Client(base_url="http://t", transport=transport))
    with client, pytest.raises(ToolOutAPIError) as failed:
        client.create_session()
    assert failed.value.code == "invalid_response" and isinstance(failed.value.__cause__, ValueError)


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield int(server.getsockname()[1])


def real_clients(port: int, timeout: float) -> tuple[Callable[[], httpx.Client], Callable[[], httpx.AsyncClient]]:
    base = f"http://127.0.0.1:{port}"
    return (lambda: httpx.Client(base_url=base, timeout=timeout)), (
        lambda: httpx.AsyncClient(base_url=base, timeout=timeout)
    )


@pytest.mark.parametrize("call", CALLS, ids=[c[0] for c in CALLS])
def test_a_refused_connection_is_a_transport_error_with_httpx_as_its_cause(closed_port: int, call: Call) -> None:
    for exc in both(call, *real_clients(closed_port, 5.0)):
        assert isinstance(exc, TransportError) and isinstance(exc, UnavailableError), repr(exc)
        assert (exc.status, exc.code) == (0, "connect_error")
        assert isinstance(exc.__cause__, httpx.ConnectError)


@pytest.mark.parametrize("call", CALLS, ids=[c[0] for c in CALLS])
def test_a_timeout_is_a_transport_error_with_httpx_as_its_cause(silent_port: int, call: Call) -> None:
    for exc in both(call, *real_clients(silent_port, 0.2)):
        assert isinstance(exc, TransportError), repr(exc)
        assert exc.code == "timeout" and isinstance(exc.__cause__, httpx.TimeoutException)


def test_the_tree_has_one_root() -> None:
    for cls in (BadRequestError, NotFoundError, ConflictError, TooManyRequestsError, UnavailableError, TransportError):
        assert issubclass(cls, ToolOutAPIError)
    assert issubclass(TransportError, UnavailableError), "callers treat no answer like a 5xx"
