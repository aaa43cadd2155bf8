"""Blobs as local files, for readers and writers that need a path (DuckDB): no byte copied when the store is
a local one on the same file system.

A hard link, not the blob's own path: the file stays readable (and the same bytes) when the blob is deleted
or replaced meanwhile, and its reader removes it like any file of its own. Where a link cannot be made (another
file system, an S3 or in-memory store), the bytes are copied as before.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from infra.blobstore.base import BlobStore
from infra.blobstore.local import LocalBlobStore
from infra.errors import BlobNotFound


def fetch_file(blobs: BlobStore, key: str, path: Path) -> int:
    """The blob under `key` as the new file `path` (linked, else downloaded block by block); its size."""
    if isinstance(blobs, LocalBlobStore) and _linked(blobs.path_for(key), path, key):
        return path.stat().st_size
    with path.open("wb") as f:
        return sum(f.write(block) for block in blobs.iter_range(key))


def put_kept(blobs: BlobStore, key: str, path: Path) -> int:
    """Store `path` under `key` and keep reading it here: `put_file` may move its file, so it gets a second
    name (a link, else a copy) to move."""
    second = path.with_name(path.name + ".put")
    try:
        os.link(path, second)
    except OSError:
        shutil.copyfile(path, second)
    try:
        return blobs.put_file(key, second)
    finally:
        second.unlink(missing_ok=True)


def _linked(source: str, path: Path, key: str) -> bool:
    try:
        os.link(source, path)
    except FileNotFoundError as exc:
        raise BlobNotFound(f"no blob stored under {key!r}", key=key) from exc
    except OSError:
        return False  # another file system, or links refused: copy
    return True
