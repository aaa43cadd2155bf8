"""Blobs as local files: a hard link from a local store (no byte copied), a download from any other."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infra.blobstore import LocalBlobStore, MemoryBlobStore
from infra.blobstore.files import fetch_file, put_kept
from infra.errors import BlobNotFound


def test_a_local_blob_is_linked_and_outlives_its_deletion(tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    blobs.put_bytes("s/h", b"abc" * 1000)
    target = tmp_path / "work" / "content"
    target.parent.mkdir()
    assert fetch_file(blobs, "s/h", target) == 3000
    assert target.stat().st_ino == os.stat(blobs.path_for("s/h")).st_ino
    blobs.delete("s/h")
    assert target.read_bytes() == b"abc" * 1000


def test_another_store_is_downloaded(tmp_path: Path) -> None:
    blobs = MemoryBlobStore()
    blobs.put_bytes("s/h", b"xyz")
    assert fetch_file(blobs, "s/h", tmp_path / "content") == 3
    assert (tmp_path / "content").read_bytes() == b"xyz"


def test_a_missing_blob_is_blob_not_found(tmp_path: Path) -> None:
    with pytest.raises(BlobNotFound):
        fetch_file(LocalBlobStore(tmp_path / "blobs"), "s/none", tmp_path / "content")


def test_a_kept_file_stays_where_it_is(tmp_path: Path) -> None:
    blobs = LocalBlobStore(tmp_path / "blobs")
    kept = tmp_path / "t0.parquet"
    kept.write_bytes(b"PAR1")
    assert put_kept(blobs, "s/h.duckdb/t0.parquet", kept) == 4
    assert kept.read_bytes() == b"PAR1" and blobs.get_bytes("s/h.duckdb/t0.parquet") == b"PAR1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blobs", "t0.parquet"]
