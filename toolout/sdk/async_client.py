"""The async client and its transport: the source `toolout.sdk.sync_client` is generated from.

Edit this file, never the sync one: `python -m toolout._unasync` rewrites it into the sync twin
(`async def` → `def`, `await x` → `x`, `AsyncToolOutClient` → `ToolOutClient`, `until_canceled` →
`until_canceled_sync`, ...) and `make lint` / `tests/toolout/test_unasync.py` fail while the
committed sync file differs from what the generator makes. Whatever waits differently in the two
lives in `toolout.sdk.cancellation` or `toolout.sdk.driving` as an `x` / `x_sync` pair; the plan
driver is shared (`toolout.sdk.driving.Driver`).

The transport is the SDK's only executor of plans (`toolout.sdk.plans`): it performs each yielded
effect, sends the parsed answer back (or throws the typed `ToolOutAPIError` in, so a plan can
handle a 404), and returns what the plan returns. An httpx error (no connection, a timeout) leaves
it only as `toolout.sdk.errors.TransportError`. Cancellation (optional `cancel`, shaped like
`toolout.toolkit.CancelToken`) is checked before each effect and raced against it; it is delivered
once, thrown into the plan at the effect it interrupted, so a plan may clean up (`tool_output`
cancels its job on the service) before the cancellation propagates.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any, TypeVar

import httpx

from toolout.sdk.cancellation import Cancellation, cancelable_sleep, until_canceled
from toolout.sdk.driving import STREAM_HEADERS, Driver, Transport, auth_headers, encoded, resolve_stream_path, sendable
from toolout.sdk.endpoint import Endpoints
from toolout.sdk.errors import api_error, wrapped_transport_errors
from toolout.sdk.plans import Effect, Local, Plan, Sleep, answer, with_model

T = TypeVar("T")


class AsyncTransport(Transport):
    """Runs plans on an `httpx.AsyncClient`."""

    _http: httpx.AsyncClient

    async def execute(self, plan: Plan[T], *, cancel: Cancellation | None = None) -> T:
        """Run one plan (`toolout.sdk.plans`): every client method is a plan run here. Call it yourself only
        to run a plan of your own; `cancel` (a `toolout.toolkit.CancelToken`) interrupts it at its next effect."""
        driver = Driver(plan, cancel)
        while (effect := driver.next_effect()) is not None:
            with driver.step():
                driver.answer(await self._perform(effect, driver.token()))
        return driver.result

    async def _perform(self, effect: Effect, cancel: Cancellation | None) -> Any:
        if isinstance(effect, Local):
            return await until_canceled(effect.run_async(), cancel)
        if isinstance(effect, Sleep):
            await cancelable_sleep(effect.seconds, cancel)
            return None
        request = with_model(sendable(effect), self.model)
        with wrapped_transport_errors():
            sent = self._http.request(request.method, request.path, **request.send_kwargs())
            response = await until_canceled(sent, cancel)
        return answer(request, response)


class AsyncToolOutClient(AsyncTransport, Endpoints):
    """Asynchronous client on an httpx.AsyncClient; one instance per agent process is plenty (it pools connections)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        http: httpx.AsyncClient | None = None,
        model: str | None = None,
    ) -> None:
        """`http`: an httpx client to send through instead (e.g. one bound to an in-process app, or a mock).
        `model`: what every extraction asks for unless the call names one (the service's allow-list decides)."""
        self.model = model
        """The model extraction requests name when a call names none (one of the service's allowed models)."""
        self._http = http or httpx.AsyncClient(base_url=base_url.rstrip("/"), timeout=timeout)
        self._http.headers.update(auth_headers(api_key))

    async def aclose(self) -> None:
        """Close the pooled connections (the `async with` block does it on exit)."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncToolOutClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def resolve_stream(self, session_id: str, chunks: AsyncIterable[str] | Iterable[str]) -> AsyncIterator[str]:
        """`POST /resolve-stream`: the text with its `$refs` resolved by the service, as it streams back.

        The request is sent whole before the answer starts (HTTP/1.1): for an agent's live text
        stream use `toolout.toolkit.Toolkit.resolve_stream`, which resolves chunk by chunk.
        """
        path = resolve_stream_path(session_id)
        with wrapped_transport_errors():
            async with self._http.stream("POST", path, content=encoded(chunks), headers=STREAM_HEADERS) as r:
                if r.status_code >= 400:
                    await r.aread()
                    raise api_error(r)
                async for text in r.aiter_text():
                    yield text
