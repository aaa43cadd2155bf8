"""Who is calling: `Authorization: Bearer <api key>` → tenant, or the dev tenant when auth is off.

Every `/v1` route depends on `api.deps.get_tenant` (the app adds it to each `/v1` router, so a route
that forgets to ask for the tenant is still protected); the probes, `/metrics` and the docs do not.
A missing, malformed or unknown key is one `Unauthorized` (401 with a `WWW-Authenticate: Bearer`
challenge) in our error shape; which of the three it was is in the challenge's `error=`, never
which tenants or keys exist.
"""

from __future__ import annotations

import logging
import re

from fastapi.security import HTTPBearer

from infra.errors import BackendUnavailable, Unauthorized
from infra.settings import Settings
from infra.stores.apikeys import ApiKeyStore

log = logging.getLogger("toolout.api.auth")

MAX_KEY_CHARS = 512
_BEARER = re.compile(r"bearer +([A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE)
"""RFC 6750 §2.1: the scheme, one or more spaces, a b64token."""

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key, sent as `Authorization: Bearer <key>`. Create one with `toolout keys create --tenant T`.",
)
"""Only documents the scheme (the lock in /docs); `authenticate` reads the raw header itself."""

DEV_MODE_BANNER = """
************************************************************************
*  TOOLOUT_AUTH_MODE=dev: AUTHENTICATION IS OFF.                       *
*  Every request is served as tenant "dev", with or without a key.     *
*  Never expose this process beyond a development machine.             *
************************************************************************"""


def bearer_token(header: str | None) -> str:
    """The key inside `Bearer <key>`; `Unauthorized` when the header is missing or not of that form."""
    if header is None or not header.strip():
        raise Unauthorized("missing credentials: send `Authorization: Bearer <api key>`")
    match = _BEARER.fullmatch(header.strip())
    if match is None or len(match.group(1)) > MAX_KEY_CHARS:
        raise Unauthorized("malformed Authorization header: expected `Bearer <api key>`", error="invalid_request")
    return match.group(1)


def authenticate(header: str | None, key_store: ApiKeyStore) -> str:
    """The tenant owning the presented key; `Unauthorized` for anything else."""
    tenant = key_store.tenant_for(bearer_token(header))
    if tenant is None:
        raise Unauthorized("invalid API key", error="invalid_token")
    return tenant


def announce_auth_mode(settings: Settings, key_store: ApiKeyStore) -> None:
    """At start-up: dev mode is a loud WARNING; keys mode says how many keys exist (a WARNING if none)."""
    if settings.auth_mode == "dev":
        log.warning(DEV_MODE_BANNER)
        return
    try:
        count = len(key_store.list())
    except BackendUnavailable:
        log.info("auth mode: keys (key count unknown: Redis is not reachable yet)")
        return
    if count == 0:
        log.warning(
            "auth mode: keys, but no API key exists: every /v1 request is a 401; create one with `toolout "
            "keys create --tenant T`"
        )
    else:
        log.info("auth mode: keys (%d API key(s))", count)
