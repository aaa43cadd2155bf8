"""Retention asked for by the client: a TTL on a session or an output, read from the request or the tenant's default.

A TTL is a deadline, not an idle timer: from `now + ttl` the session or output reads as gone (404) and the API's
sweeper (`api.lifecycle.sweep_expired`) deletes it with everything derived from it, whether or not it was used in
between. It is given as `X-TTL` or `?ttl=`: whole seconds, or a number with `s`, `m`, `h` or `d`. An output never
outlives its session: its deadline is the earlier of its own and the session's.
"""

from __future__ import annotations

import re
import time
from typing import Annotated

from fastapi import Header, Query
from fastapi.exceptions import RequestValidationError

from api.errors import validation_error
from infra.settings import Settings
from infra.stores.records import SessionRecord

MAX_TTL_SECONDS = 10 * 366 * 24 * 3600
"""Ten years: a longer TTL is a typo, not a retention policy."""
_TTL = re.compile(r"(\d{1,12})([smhd]?)")
TTL_PATTERN = r"^([1-9][0-9]{0,7}s?|[1-9][0-9]{0,5}m|[1-9][0-9]{0,3}h|[1-9][0-9]{0,2}d)$"
"""The TTLs the OpenAPI document offers: each within ten years whatever its digits. The parser also takes leading
zeros, upper case and spaces, and longer numbers up to the ten-year bound; the pattern keeps to the plain forms."""
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def ttl_seconds(value: str, loc: tuple[str, str]) -> int:
    """`90`, `90s`, `30m`, `12h`, `7d` as seconds; anything else, zero or past ten years is a 422 naming the value."""
    found = _TTL.fullmatch(value.strip().lower())
    if found is None:
        raise _bad_ttl(loc, f"{value!r} is not a TTL: whole seconds, or a number with s, m, h or d (90, 30m, 7d)")
    seconds = int(found[1]) * _UNIT_SECONDS[found[2]]
    if not 0 < seconds <= MAX_TTL_SECONDS:
        raise _bad_ttl(loc, f"a TTL is 1 second to {MAX_TTL_SECONDS} seconds (ten years), not {seconds}")
    return seconds


def _bad_ttl(loc: tuple[str, str], msg: str) -> RequestValidationError:
    return validation_error(loc, msg, "ttl_invalid")


def requested_ttl(
    x_ttl: Annotated[
        str | None, Header(description="delete it this long after it is stored: 3600, 90s, 30m, 12h or 7d")
    ] = None,
    ttl: Annotated[str | None, Query(description="alternative to X-TTL")] = None,
) -> int | None:
    """The TTL the request asks for, in seconds (the header wins over the query); None when it asks none."""
    if x_ttl is not None:
        return ttl_seconds(x_ttl, ("header", "x-ttl"))
    return None if ttl is None else ttl_seconds(ttl, ("query", "ttl"))


def session_deadline(settings: Settings, tenant: str, ttl: int | None, now: float | None = None) -> float | None:
    """A new session's retention deadline: the request's TTL, else the tenant's default, else none."""
    seconds = ttl if ttl is not None else settings.tenant_ttl_seconds.get(tenant)
    return None if seconds is None else (time.time() if now is None else now) + seconds


def output_deadline(session: SessionRecord, ttl: int | None, now: float | None = None) -> float | None:
    """A new output's deadline: the earlier of its own TTL and its session's (None when neither has one)."""
    own = None if ttl is None else (time.time() if now is None else now) + ttl
    deadlines = [at for at in (own, session.expires_at) if at is not None]
    return min(deadlines) if deadlines else None
