"""Small test doubles shared across test packages (no server, no disk)."""

from __future__ import annotations

from collections.abc import Iterator


class BytesReader:
    """A `BlobReader` over in-memory blobs that counts every byte it hands out.

    The counters let tests assert that a read or grep touched only part of a blob.
    """

    def __init__(self, blobs: dict[str, bytes] | bytes, key: str = "k") -> None:
        self.blobs = dict(blobs) if isinstance(blobs, dict) else {key: blobs}
        self.bytes_read = 0
        self.calls = 0

    def size(self, key: str) -> int:
        return len(self.blobs[key])

    def read_range(self, key: str, start: int, end: int) -> bytes:
        data = self.blobs[key][start : max(start, end)]
        self.calls += 1
        self.bytes_read += len(data)
        return data

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int = 8 << 20
    ) -> Iterator[bytes]:
        end = len(self.blobs[key]) if end is None else min(end, len(self.blobs[key]))
        for pos in range(start, end, block_size):
            yield self.read_range(key, pos, min(end, pos + block_size))
