"""Small test doubles and helpers shared across test packages (no server)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


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


def _seeds_dir() -> Path:
    """`shared/seeds` beside the checkout (`../shared/seeds`), or beside a folder of worktrees above it."""
    here = Path(__file__).resolve()
    found = (parent / "shared" / "seeds" for parent in here.parents[2:4])
    return next((path for path in found if path.is_dir()), here.parents[2] / "shared" / "seeds")


SEEDS_DIR = _seeds_dir()
"""The design notes beside the checkout (`../shared/seeds`), as CI's fresh clone has them."""


def seed_text(number: str) -> str:
    """The text of seed `number` (e.g. "002"); in CI a missing seed fails, elsewhere the test is skipped."""
    found = sorted(SEEDS_DIR.glob(f"{number}_*.txt"))
    if not found:
        reason = f"design seed {number} not found in {SEEDS_DIR}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found[0].read_text(encoding="utf-8")
