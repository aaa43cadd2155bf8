"""The API process keeps an idle connection open longer than a client reuses one.

httpx (so the SDK) reuses a pooled connection idle up to 5 s; uvicorn's own default closes one idle 5 s. With
the two equal, a request sent just as the server closes its side is reset: the hour-long soak saw 6 such
`Connection reset by peer` in 25,000 requests. `toolout api` waits `TOOLOUT_API_KEEP_ALIVE_SECONDS` (75)
instead, so a client's idle connection is always closed by the client first.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlparse

from toolout.stack import Stack

CLIENT_REUSE_SECONDS = 5.0
"""httpx's `keepalive_expiry`, which the SDK keeps: the longest a pooled connection sits idle before reuse."""


def get_healthz(sock: socket.socket) -> bytes:
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: toolout\r\n\r\n")
    return sock.recv(65536)


def test_a_connection_idle_past_the_clients_reuse_is_still_served(local_stack: Stack) -> None:
    url = urlparse(local_stack.api_url)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        assert get_healthz(sock).startswith(b"HTTP/1.1 200 ")
        time.sleep(CLIENT_REUSE_SECONDS + 1.5)
        assert get_healthz(sock).startswith(b"HTTP/1.1 200 "), "the API closed an idle connection a client may reuse"
