"""The API process keeps an idle connection open longer than a client reuses one.

httpx (so the SDK) reuses a pooled connection idle up to 5 s; uvicorn's own default closes one idle 5 s. With
the two equal, a request sent just as the server closes its side is reset: the hour-long soak saw 6 such
`Connection reset by peer` in 25,000 requests. `toolout api` waits `TOOLOUT_API_KEEP_ALIVE_SECONDS` (75)
instead, so a client's idle connection is always closed by the client first.
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlparse

from toolout.devstack.stack import Stack

CLIENT_REUSE_SECONDS = 5.0
"""httpx's `keepalive_expiry`, which the SDK keeps: the longest a pooled connection sits idle before reuse."""


def healthz(connection: http.client.HTTPConnection) -> int:
    """One request on the connection as it is: http.client reconnects only a socket it closed itself, so a
    connection the server closed fails here (RemoteDisconnected, or a reset) instead of being replaced."""
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    response.read()
    return response.status


def test_a_connection_idle_past_the_clients_reuse_is_still_served(local_stack: Stack) -> None:
    url = urlparse(local_stack.api_url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=10)
    try:
        assert healthz(connection) == 200
        socket_before = connection.sock
        time.sleep(CLIENT_REUSE_SECONDS + 1.5)
        assert healthz(connection) == 200
        assert connection.sock is socket_before, "the request went on a new connection"
    finally:
        connection.close()
