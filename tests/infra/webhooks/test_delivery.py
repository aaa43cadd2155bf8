"""Webhook rules: which URLs we call, how deliveries are signed, and one delivery against a real receiver."""

from __future__ import annotations

import re
import time

import pytest

from infra.webhooks.delivery import (
    SIGNATURE_HEADER,
    InvalidCallbackUrl,
    check_callback_url,
    deliver,
    payload,
    signature,
    tenant_secret,
    verify,
)
from tests.docs_pages import page
from tests.fixtures.webhook_receiver import webhook_receiver

REST_GUIDE = page("reference/rest.md")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/h",
        "http://localhost:8080/h",
        "http://10.1.2.3/h",
        "https://192.168.0.10/h",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/h",
        "http://[fd00::1]/h",
        "http://[::ffff:127.0.0.1]/h",
        "http://0.0.0.0/h",
        "http://224.0.0.1/h",
        "http://100.64.0.1/h",
    ],
)
def test_private_loopback_link_local_and_reserved_targets_are_refused(url: str) -> None:
    with pytest.raises(InvalidCallbackUrl, match="non-public address"):
        check_callback_url(url, allow_private=False)
    assert check_callback_url(url, allow_private=True).url == url


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://93.184.216.34/h", "http"),
        ("file:///etc/passwd", "http"),
        ("javascript:alert(1)", "http"),
        ("https:///no-host", "http"),
        ("https://user:pass@93.184.216.34/h", "credentials"),
        ("https://no-such-host.invalid/h", "does not resolve"),
        ("https://93.184.216.34/" + "x" * 3000, "http"),
    ],
)
def test_only_http_urls_with_a_resolvable_host_and_no_credentials(url: str, why: str) -> None:
    with pytest.raises(InvalidCallbackUrl, match=why):
        check_callback_url(url, allow_private=True)


def test_a_public_address_is_accepted_and_pinned() -> None:
    target = check_callback_url("https://93.184.216.34:8443/hooks", allow_private=False)
    assert (target.host, str(target.address)) == ("93.184.216.34", "93.184.216.34")


def test_signatures_verify_only_for_the_same_secret_body_and_a_fresh_time() -> None:
    secret, body, now = tenant_secret("master", "acme"), payload({"id": "j1"}), int(time.time())
    header = signature(secret, now, body)
    assert re.fullmatch(r"t=\d+,v1=[0-9a-f]{64}", header)
    assert verify(secret, header, body)
    assert not verify(secret, header, body + b" ")
    assert not verify(tenant_secret("master", "globex"), header, body)
    assert not verify(secret, signature(secret, now - 3600, body), body)
    assert tenant_secret("master", "acme") != tenant_secret("other", "acme")


def test_the_readme_verification_snippet_accepts_our_signatures_and_refuses_forgeries() -> None:
    snippet = re.search(r"```python\n(import hashlib, hmac, time\n.*?)```", REST_GUIDE, re.S).group(1)
    namespace: dict = {}
    exec(snippet, namespace)  # the docs' own code, as a receiver would paste it
    secret, body = tenant_secret("master", "acme"), payload({"id": "j1"})
    header = signature(secret, int(time.time()), body)
    assert namespace["verify"](secret, header, body) is True
    assert namespace["verify"](secret, header, body.replace(b"j1", b"j2")) is False


def test_a_delivery_posts_the_signed_body_keeping_the_host_header() -> None:
    secret, body = tenant_secret("master", "acme"), payload({"id": "j1", "status": "succeeded"})
    with webhook_receiver(200) as receiver:
        result = deliver(check_callback_url(receiver.url, allow_private=True), body, secret, timeout=5)
    assert result.delivered and not result.retryable
    [got] = receiver.received
    assert got.path == "/hooks/toolout" and got.body == body and got.headers["host"] == receiver.url.split("/")[2]
    assert verify(secret, got.headers[SIGNATURE_HEADER.lower()], got.body)


def test_server_errors_and_silence_may_be_retried_client_errors_not() -> None:
    with webhook_receiver(503) as receiver:
        target = check_callback_url(receiver.url, allow_private=True)
        assert deliver(target, b"{}", "s", timeout=5).retryable
    with webhook_receiver(410) as receiver:
        gone = deliver(check_callback_url(receiver.url, allow_private=True), b"{}", "s", timeout=5)
    assert (gone.status, gone.retryable, gone.delivered) == (410, False, False)
    nobody = deliver(check_callback_url("http://127.0.0.1:9/h", allow_private=True), b"{}", "s", timeout=2)
    assert nobody.status is None and nobody.retryable
