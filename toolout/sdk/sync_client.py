# Generated from toolout/sdk/async_client.py by toolout/_unasync.py (python -m toolout._unasync); do not edit.
"""The sync twin of `toolout.sdk.async_client`: see that module for what it does and why."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import httpx

from toolout.sdk.cancellation import Cancellation, cancelable_sleep_sync, until_canceled_sync
from toolout.sdk.driving import (
    STREAM_HEADERS,
    Driver,
    Transport,
    auth_headers,
    encoded_sync,
    resolve_stream_path,
    sendable_sync,
)
from toolout.sdk.endpoint import Endpoints
from toolout.sdk.errors import api_error, wrapped_transport_errors
from toolout.sdk.plans import Effect, Local, Plan, Sleep, answer, with_model

T = TypeVar("T")


class SyncTransport(Transport):
    """Runs plans on an `httpx.Client`."""

    _http: httpx.Client

    def execute(self, plan: Plan[T], *, cancel: Cancellation | None = None) -> T:
        """Run one plan (`toolout.sdk.plans`): every client method is a plan run here. Call it yourself only
        to run a plan of your own; `cancel` (a `toolout.toolkit.CancelToken`) interrupts it at its next effect."""
        driver = Driver(plan, cancel)
        while (effect := driver.next_effect()) is not None:
            with driver.step():
                driver.answer(self._perform(effect, driver.token()))
        return driver.result

    def _perform(self, effect: Effect, cancel: Cancellation | None) -> Any:
        if isinstance(effect, Local):
            return until_canceled_sync(effect.run_sync(), cancel)
        if isinstance(effect, Sleep):
            cancelable_sleep_sync(effect.seconds, cancel)
            return None
        request = with_model(sendable_sync(effect), self.model)
        with wrapped_transport_errors():
            sent = self._http.request(request.method, request.path, **request.send_kwargs())
            response = until_canceled_sync(sent, cancel)
        return answer(request, response)


class ToolOutClient(SyncTransport, Endpoints):
    """Synchronous client on an httpx.Client; one instance per agent process is plenty (it pools connections)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        http: httpx.Client | None = None,
        model: str | None = None,
    ) -> None:
        """`http`: an httpx client to send through instead (e.g. one bound to an in-process app, or a mock).
        `model`: what every extraction asks for unless the call names one (the service's allow-list decides)."""
        self.model = model
        """The model extraction requests name when a call names none (one of the service's allowed models)."""
        self._http = http or httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        self._http.headers.update(auth_headers(api_key))

    def close(self) -> None:
        """Close the pooled connections (the `with` block does it on exit)."""
        self._http.close()

    def __enter__(self) -> ToolOutClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def resolve_stream(self, session_id: str, chunks: Iterable[str]) -> Iterator[str]:
        """`POST /resolve-stream`: the text with its `$refs` resolved by the service, as it streams back.

        The request is sent whole before the answer starts (HTTP/1.1): for an agent's live text
        stream use `toolout.toolkit.Toolkit.resolve_stream`, which resolves chunk by chunk.
        """
        path = resolve_stream_path(session_id)
        with wrapped_transport_errors():
            with self._http.stream("POST", path, content=encoded_sync(chunks), headers=STREAM_HEADERS) as r:
                if r.status_code >= 400:
                    r.read()
                    raise api_error(r)
                for text in r.iter_text():
                    yield text
