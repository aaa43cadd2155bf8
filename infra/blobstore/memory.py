"""An in-memory blob store with the same semantics as the real ones, for unit tests of other layers.

It runs the shared key and range checks, so a test that passes against it does not rely on
anything the local or S3 store would refuse.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from infra.blobstore.base import (
    DEFAULT_READ_BLOCK,
    block_ranges,
    check_block_size,
    clip_range,
    source_size,
    validate_key,
    validate_prefix,
)
from infra.errors import BlobNotFound


class MemoryBlobStore:
    """A dict of immutable `bytes`; readers keep the snapshot they started with, like on disk."""

    def __init__(self, *, read_block: int = DEFAULT_READ_BLOCK) -> None:
        self._blobs: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self.read_block = check_block_size(read_block, DEFAULT_READ_BLOCK)

    def __repr__(self) -> str:
        return f"MemoryBlobStore({len(self._blobs)} blobs)"

    # --- writes -------------------------------------------------------------------------------

    def put_stream(self, key: str, blocks: Iterable[bytes]) -> int:
        """Collect first and publish at the end, so an iterator that raises stores nothing."""
        validate_key(key)
        buffer = bytearray()
        for block in blocks:
            buffer += block
        return self._publish(key, bytes(buffer))

    def put_file(self, key: str, path: str | os.PathLike[str]) -> int:
        validate_key(key)
        source_size(path)  # the same InvalidInput as the other stores for a missing source
        return self._publish(key, Path(path).read_bytes())

    def put_bytes(self, key: str, data: bytes) -> int:
        validate_key(key)
        return self._publish(key, bytes(data))

    def _publish(self, key: str, data: bytes) -> int:
        with self._lock:
            self._blobs[key] = data
        return len(data)

    # --- reads --------------------------------------------------------------------------------

    def _get(self, key: str) -> bytes:
        validate_key(key)
        with self._lock:
            data = self._blobs.get(key)
        if data is None:
            raise BlobNotFound(f"no blob stored under {key!r}", key=key)
        return data

    def get_bytes(self, key: str) -> bytes:
        return self._get(key)

    def size(self, key: str) -> int:
        return len(self._get(key))

    def exists(self, key: str) -> bool:
        validate_key(key)
        with self._lock:
            return key in self._blobs

    def read_range(self, key: str, start: int, end: int) -> bytes:
        data = self._get(key)
        start, end = clip_range(start, end, len(data))
        return data[start:end]

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int | None = None
    ) -> Iterator[bytes]:
        data = self._get(key)
        block = check_block_size(block_size, self.read_block)
        start, end = clip_range(start, end, len(data))
        return (data[a:b] for a, b in block_ranges(start, end, block))

    # --- deletes & health ---------------------------------------------------------------------

    def delete(self, key: str) -> None:
        validate_key(key)
        with self._lock:
            self._blobs.pop(key, None)

    def delete_prefix(self, prefix: str) -> int:
        validate_prefix(prefix)
        with self._lock:
            doomed = [key for key in self._blobs if key.startswith(prefix)]
            for key in doomed:
                del self._blobs[key]
        return len(doomed)

    def ping(self) -> None:
        """Always reachable; present so callers need no special case."""

    def keys(self) -> list[str]:
        """Every stored key, sorted; a test convenience the other stores do not offer."""
        with self._lock:
            return sorted(self._blobs)
