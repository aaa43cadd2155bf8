"""`Idempotency-Key` for the two POSTs an agent retries blindly: creating an extraction and uploading.

A route builds its response in a `produce()` callable and hands it to `idempotent(...)` with a
fingerprint of the request; without a key `produce()` simply runs. With one, the first 2xx response
is kept (status, JSON body, `Location`, `Retry-After`) and replayed, marked `Idempotent-Replayed:
true`, to every retry with the same fingerprint until the key expires. The rules themselves
(per-tenant scope, 422 on reuse, 409 while in flight) live in `infra.stores.idempotency`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Annotated

from fastapi import Header
from fastapi.responses import Response

from infra.errors import BackendUnavailable
from infra.stores.idempotency import IdempotencyStore, Lease, StoredResponse

log = logging.getLogger("toolout.api.idempotency")

MAX_KEY_CHARS = 255
KEY_PATTERN = r"^[\x21-\x7e]+$"
REPLAYED_HEADER = "Idempotent-Replayed"
KEPT_HEADERS = ("location", "retry-after")

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=MAX_KEY_CHARS,
        pattern=KEY_PATTERN,
        description="Retry-safe requests: the same key with the same request replays the first response "
        f"(a UUID4 is ideal; 1-{MAX_KEY_CHARS} visible ASCII characters). Kept per tenant for "
        "TOOLOUT_IDEMPOTENCY_TTL_SECONDS.",
    ),
]
"""The header as a route parameter: a malformed key is a 422 before anything runs."""


def idempotent(
    store: IdempotencyStore,
    tenant: str,
    key: str | None,
    fingerprint: str,
    produce: Callable[[], Response],
    *,
    session_id: str | None = None,
) -> Response:
    """`produce()` once per (tenant, key): replay the stored response, or run it and keep a 2xx, noted under its
    session (`session_id`, else the one the answer names) so deleting the session or its output removes it."""
    if key is None:
        return produce()
    outcome = store.begin(tenant, key, fingerprint)
    if isinstance(outcome, StoredResponse):
        return replay(outcome)
    return _run_and_keep(store, outcome, produce, session_id)


def _run_and_keep(
    store: IdempotencyStore, lease: Lease, produce: Callable[[], Response], session_id: str | None
) -> Response:
    """Errors are not kept: the lock is released, so a retry after a 503 or a 429 runs again."""
    try:
        response = produce()
    except BaseException:
        store.release(lease)
        raise
    if 200 <= response.status_code < 300:
        _keep(store, lease, response, session_id)
    else:
        store.release(lease)
    return response


def _keep(store: IdempotencyStore, lease: Lease, response: Response, session_id: str | None) -> None:
    """A Redis failure here must not turn a done request into an error: the client gets its answer."""
    headers = {name: value for name, value in response.headers.items() if name in KEPT_HEADERS}
    body = bytes(response.body).decode("utf-8")
    try:
        store.complete(lease, StoredResponse(response.status_code, body, headers))
        _note_owner(store, lease, body, session_id)
    except BackendUnavailable:
        log.warning(
            "could not keep the response for an Idempotency-Key; a retry within the lock TTL gets a 409", exc_info=True
        )


def _note_owner(store: IdempotencyStore, lease: Lease, body: str, session_id: str | None) -> None:
    """Note the kept response under its session, naming the handle it answered with (uploads, jobs)."""
    answer = _json_object(body)
    owner = session_id or answer.get("session_id")
    if isinstance(owner, str):
        handle = answer.get("handle")
        store.own(lease, owner, handle if isinstance(handle, str) else None)


def _json_object(body: str) -> dict[str, object]:
    try:
        found = json.loads(body)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def replay(stored: StoredResponse) -> Response:
    headers = {**stored.headers, REPLAYED_HEADER: "true"}
    return Response(content=stored.body, status_code=stored.status, media_type="application/json", headers=headers)
