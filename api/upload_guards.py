"""What an upload is refused for before its body is read, and what bounds a slow or crowded one.

A process receives only so many uploads at once: each holds a connection, a spool file and a batch
of memory, so past `max_uploads_in_flight` a new one is refused at once with a 503 and `Retry-After`
rather than queued. A body is read as it comes; a client that sends nothing for
`upload_read_timeout_seconds` is cut (408, like nginx's `client_body_timeout`) and its spool file goes.
A compressed body (`Content-Encoding`) is refused: the stored output is what the tool printed, and a
decompressed size nobody declared is how a small request fills a disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from starlette.requests import Request

from extraction.errors import InvalidInput
from infra.errors import BackendUnavailable


class UploadTimedOut(InvalidInput):
    """The client stopped sending its body for longer than the read timeout; nothing was stored."""

    code = "upload_timeout"


class UploadsBusy(BackendUnavailable):
    """This API process is already receiving as many uploads as it takes at once; retry after `Retry-After`."""

    code = "uploads_busy"


class UnsupportedEncoding(InvalidInput):
    """The body came compressed (`Content-Encoding`); the API stores tool outputs as sent, uncompressed."""

    code = "unsupported_media_type"


class UploadSlots:
    """The uploads this process is receiving now. One event loop counts them, so no lock is needed."""

    def __init__(self) -> None:
        self.active = 0

    @contextlib.contextmanager
    def held(self, limit: int) -> Iterator[None]:
        if self.active >= limit:
            raise UploadsBusy(
                f"this server is already receiving {limit} uploads; retry shortly", max_uploads_in_flight=limit
            )
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1


def check_encoding(request: Request) -> None:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise UnsupportedEncoding(
            "compressed uploads are not accepted: send the tool output uncompressed", content_encoding=encoding
        )
