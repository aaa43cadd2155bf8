"""The blob store contract and the rules every implementation shares.

Keys and ranges are checked here, once, so the three stores cannot drift apart on what a
valid key is or how a range is clipped: a key the memory stub accepts in a unit test must be
one the local store can turn into a path without escaping its root, and one S3 stores as is.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Protocol, runtime_checkable

from extraction.errors import InvalidInput
from extraction.protocols import BlobReader
from infra.errors import InvalidKey

MiB = 1 << 20
DEFAULT_READ_BLOCK = 8 * MiB
MAX_KEY_BYTES = 1024  # S3's own limit; the local store inherits it so keys stay portable
MAX_SEGMENT_BYTES = 255  # the usual file-name limit, so every key is a legal path on disk
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")


@runtime_checkable
class BlobStore(BlobReader, Protocol):
    """Write, read, and delete blobs by key; `size`/`read_range` come from `BlobReader`.

    Puts are all-or-nothing: a reader sees the old blob or the new one, never a partial one,
    and a put that fails leaves the previous state in place.
    """

    def put_stream(self, key: str, blocks: Iterable[bytes]) -> int:
        """Store the concatenated `blocks` without holding them all in memory; return the byte count.

        Exceptions raised by `blocks` propagate unchanged and nothing is stored.
        """
        ...

    def put_file(self, key: str, path: str | os.PathLike[str]) -> int:
        """Store a spooled local file; return its size.

        Ownership of the file passes to the store: it may be moved (local) or left in place (S3),
        so callers clean up with `Path(path).unlink(missing_ok=True)`.
        """
        ...

    def put_bytes(self, key: str, data: bytes) -> int:
        """Store a small blob (an index, a manifest); return its size."""
        ...

    def get_bytes(self, key: str) -> bytes:
        """The whole blob; meant for small objects only."""
        ...

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int | None = None
    ) -> Iterator[bytes]:
        """Stream [start, end) in blocks of at most `block_size` (default: the store's read block).

        A missing key raises `BlobNotFound` at call time, not at the first `next()`.
        """
        ...

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None:
        """Remove the blob; a missing one is fine (deletes are retried by cleanup jobs)."""
        ...

    def delete_prefix(self, prefix: str) -> int:
        """Remove every blob whose key starts with `prefix` (a plain string prefix); return how many.

        `"sessions/s1/"` removes a session; `"sessions/s1/h1"` removes a handle and its `.tokidx`.
        """
        ...

    def ping(self) -> None:
        """Raise `BackendUnavailable` if the store cannot be used right now."""
        ...


def validate_key(key: str) -> str:
    """Return `key` if it is a relative, `/`-separated path of safe segments; raise `InvalidKey` otherwise.

    The character set excludes `\\`, NUL and everything a shell or a file system treats
    specially, and `.`/`..` segments are refused, so a key can never point outside the store.
    """
    if not isinstance(key, str) or not key:
        raise InvalidKey("blob key must be a non-empty string", key=key)
    if len(key.encode()) > MAX_KEY_BYTES:
        raise InvalidKey(f"blob key is longer than {MAX_KEY_BYTES} bytes", key=key[:80])
    for segment in key.split("/"):
        _check_segment(key, segment)
    return key


def _check_segment(key: str, segment: str) -> None:
    if not segment:
        raise InvalidKey(f"blob key {key!r} has an empty segment (leading, trailing or doubled '/')", key=key)
    if segment in {".", ".."}:
        raise InvalidKey(f"blob key {key!r} contains a {segment!r} segment", key=key)
    if not _SEGMENT.fullmatch(segment):
        raise InvalidKey(f"blob key {key!r}: segments may only contain A-Z a-z 0-9 . _ -", key=key)
    if len(segment) > MAX_SEGMENT_BYTES:
        raise InvalidKey(f"blob key segment longer than {MAX_SEGMENT_BYTES} characters", key=key[:80])


def is_valid_segment(name: str) -> bool:
    """True for names a key segment may have; the local store uses it to skip its own temp files."""
    return bool(_SEGMENT.fullmatch(name)) and name not in {".", ".."} and len(name) <= MAX_SEGMENT_BYTES


def validate_prefix(prefix: str) -> str:
    """A prefix is a key, optionally ending in `/`; an empty one is refused.

    Refusing `""` means a bug that builds `f"sessions/{sid}/"` from an empty id cannot wipe
    the store (that string has an empty segment, so it is refused too).
    """
    if not isinstance(prefix, str) or not prefix:
        raise InvalidKey("delete_prefix needs a non-empty prefix; refusing to delete every blob", prefix=prefix)
    validate_key(prefix[:-1] if prefix.endswith("/") else prefix)
    return prefix


def clip_range(start: int, end: int | None, size: int) -> tuple[int, int]:
    """Clip [start, end) to [0, size]; an empty or inverted range becomes (start, start)."""
    if start < 0 or (end is not None and end < 0):
        raise InvalidInput(f"byte range must not be negative (got start={start}, end={end})")
    stop = size if end is None else min(end, size)
    start = min(start, size)
    return start, max(start, stop)


def check_block_size(block_size: int | None, default: int) -> int:
    """Resolve a caller's block size; zero or negative would loop forever, so it is refused."""
    size = default if block_size is None else block_size
    if size <= 0:
        raise InvalidInput(f"block_size must be positive (got {size})")
    return size


def source_size(path: str | os.PathLike[str]) -> int:
    """Size of a file handed to `put_file`; a missing or odd source is the caller's mistake."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise InvalidInput(f"put_file: no readable file at {os.fspath(path)}", path=os.fspath(path)) from exc
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"put_file: {os.fspath(path)} is not a regular file", path=os.fspath(path))
    return info.st_size


def unlink_quietly(path: str) -> None:
    """Remove a file that may be gone already (a spool file the store took, a temp file never renamed)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def block_ranges(start: int, end: int, block_size: int) -> Iterator[tuple[int, int]]:
    """[start, end) cut into consecutive ranges of at most `block_size` bytes."""
    for offset in range(start, end, block_size):
        yield offset, min(offset + block_size, end)
