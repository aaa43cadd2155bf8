"""Webhooks: where a finished job may be POSTed, how the body is signed, and one delivery attempt.

A client that gave `callback_url` with its extraction gets the finished job POSTed there, signed:

    X-Toolout-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>

`secret` is the tenant's webhook secret (`GET /v1/webhooks/secret`), derived from the deployment's
`TOOLOUT_WEBHOOK_SECRET` so it needs no storage and differs per tenant. The receiver recomputes the
HMAC over the raw body and refuses old timestamps (replays).

Server-side request forgery: a callback URL is a URL *we* fetch, so only http(s) is accepted and a
host that is, or resolves to, a private, loopback, link-local, multicast or otherwise reserved
address is refused (unless `TOOLOUT_WEBHOOK_ALLOW_PRIVATE`, what the tests use). The check runs when
the job is created (422) and again at each delivery, and the delivery connects to the address that
was checked (the Host header and TLS SNI keep the name), so a DNS answer that changes in between
cannot redirect it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from extraction.errors import InvalidInput

SIGNATURE_HEADER = "X-Toolout-Signature"
EVENT = "extraction.finished"
MAX_URL_CHARS = 2048

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class InvalidCallbackUrl(InvalidInput):
    """A `callback_url` we will not call: not http(s), malformed, or pointing at a private network."""

    code = "invalid_callback_url"


class WebhooksNotConfigured(InvalidInput):
    """A `callback_url` on a deployment without `TOOLOUT_WEBHOOK_SECRET`: nothing could be signed."""

    code = "webhooks_not_configured"


@dataclass(frozen=True)
class Target:
    """A checked callback: the URL as given, and the address a delivery must connect to."""

    url: str
    host: str
    address: IpAddress


def check_callback_url(url: str, *, allow_private: bool) -> Target:
    """The target of `url`, or `InvalidCallbackUrl` saying why we refuse to call it."""
    parts = urlsplit(url)
    if len(url) > MAX_URL_CHARS or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidCallbackUrl("callback_url must be an http(s) URL with a host", callback_url=url[:200])
    if parts.username or parts.password:
        raise InvalidCallbackUrl("callback_url must not carry credentials", callback_url=url[:200])
    addresses = resolve(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    refused = [str(a) for a in addresses if not allow_private and not is_public(a)]
    if refused:
        raise InvalidCallbackUrl(
            f"callback_url {parts.hostname!r} is, or resolves to, a non-public address ({', '.join(refused)})",
            callback_url=url[:200],
        )
    return Target(url, parts.hostname, addresses[0])


def resolve(host: str, port: int) -> list[IpAddress]:
    """Every address `host` has (a literal address is itself); an unknown host is an invalid URL."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidCallbackUrl(f"callback_url host {host!r} does not resolve: {exc}", host=host) from None
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))


def is_public(address: IpAddress) -> bool:
    """Globally routable unicast, and not an IPv4 address hidden inside IPv6."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return is_public(address.ipv4_mapped)
    return address.is_global and not address.is_multicast


# --- signing --------------------------------------------------------------------------------------
def tenant_secret(master: str, tenant: str) -> str:
    """The tenant's signing secret: HMAC(master, tenant), so each tenant verifies with its own."""
    return hmac.new(master.encode(), f"toolout-webhook:{tenant}".encode(), hashlib.sha256).hexdigest()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Toolout-Signature` value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, now: float | None = None, tolerance: int = 300) -> bool:
    """What a receiver does (the README shows it): recompute, compare in constant time, refuse stale ones."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if not fields.get("t", "").isdigit() or "v1" not in fields:
        return False
    timestamp = int(fields["t"])
    fresh = abs((time.time() if now is None else now) - timestamp) <= tolerance
    return fresh and hmac.compare_digest(signature(secret, timestamp, body), header)


def payload(job: dict[str, Any]) -> bytes:
    """The body: the finished job exactly as `GET /v1/extractions/{id}` shows it, under an event type."""
    return json.dumps({"type": EVENT, "job": job}, separators=(",", ":"), ensure_ascii=False).encode()


# --- one delivery ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Delivery:
    """What one attempt got: the HTTP status (None: no answer) and whether trying again may help."""

    status: int | None
    retryable: bool
    detail: str

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


RETRYABLE_STATUS = frozenset({408, 425, 429}) | frozenset(range(500, 600))


def deliver(target: Target, body: bytes, secret: str, *, timeout: float) -> Delivery:
    """POST `body` to the checked address of `target`; never raises for the receiver's failures."""
    parts = urlsplit(target.url)
    netloc = f"[{target.address}]" if target.address.version == 6 else str(target.address)
    pinned = urlunsplit(parts._replace(netloc=f"{netloc}:{parts.port}" if parts.port else netloc))
    headers = {
        "Content-Type": "application/json",
        "Host": parts.netloc,
        SIGNATURE_HEADER: signature(secret, int(time.time()), body),
    }
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            response = client.post(pinned, content=body, headers=headers, extensions={"sni_hostname": target.host})
    except httpx.HTTPError as exc:
        return Delivery(None, True, f"{type(exc).__name__}: {exc}")
    return Delivery(response.status_code, response.status_code in RETRYABLE_STATUS, response.reason_phrase)
