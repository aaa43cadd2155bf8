"""What only the local store has: paths, temp files, renames, and a root that must not be escaped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.blobstore import LocalBlobStore, validate_key
from infra.errors import BackendUnavailable, InvalidKey
from tests.fixtures.interning import interned_strings


@pytest.fixture()
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs", read_block=4)


def all_files(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())


def test_blobs_are_plain_files_under_the_root(store: LocalBlobStore) -> None:
    store.put_bytes("sessions/s1/h1", b"raw")
    assert (store.root / "sessions" / "s1" / "h1").read_bytes() == b"raw"
    assert store.path_for("sessions/s1/h1") == str(store.root / "sessions/s1/h1")


def test_a_failed_put_leaves_no_temp_file_behind(store: LocalBlobStore) -> None:
    def blocks():
        yield b"partial"
        raise OSError("the caller's socket died")  # an OSError of the caller's must not be translated

    with pytest.raises(OSError, match="socket died"):
        store.put_stream("s/h", blocks())
    assert all_files(store.root) == []


def test_put_file_moves_the_spooled_file_into_place(store: LocalBlobStore, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.write_bytes(b"spooled body")
    inode = spool.stat().st_ino
    assert store.put_file("s/h", spool) == 12
    assert not spool.exists()
    assert os.stat(store.path_for("s/h")).st_ino == inode


def test_fsync_mode_writes_the_same_bytes(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "durable", fsync=True)
    store.put_stream("a/b", [b"x" * 10, b"y"])
    spool = tmp_path / "spool"
    spool.write_bytes(b"z")
    store.put_file("a/c", spool)
    assert (store.get_bytes("a/b"), store.get_bytes("a/c")) == (b"x" * 10 + b"y", b"z")


def test_a_symlink_out_of_the_root_is_refused(store: LocalBlobStore, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    (store.root / "link").symlink_to(outside)
    with pytest.raises(InvalidKey, match="outside"):
        store.get_bytes("link/secret")
    with pytest.raises(InvalidKey):
        store.put_bytes("link/planted", b"x")
    assert not (outside / "planted").exists()


def test_a_key_under_an_existing_blob_is_refused(store: LocalBlobStore) -> None:
    store.put_bytes("a", b"file")
    with pytest.raises(InvalidKey, match="collides"):
        store.put_bytes("a/b", b"x")
    store.put_bytes("d/e", b"x")
    with pytest.raises(InvalidKey, match="collides"):
        store.put_bytes("d", b"x")


def test_a_reader_keeps_the_version_it_opened(store: LocalBlobStore) -> None:
    store.put_bytes("h", b"old-old-old-")
    blocks = store.iter_range("h")
    assert next(blocks) == b"old-"
    store.put_bytes("h", b"NEW-NEW-NEW-")
    assert b"".join(blocks) == b"old-old-"


def test_delete_prefix_sweeps_temp_files_and_emptied_directories(store: LocalBlobStore) -> None:
    store.put_bytes("sessions/s1/h1", b"x")
    store.put_bytes("sessions/s1/deep/h2", b"x")
    (store.root / "sessions/s1/.h3~abc.part").write_bytes(b"in flight")
    assert store.delete_prefix("sessions/s1/") == 2
    assert not (store.root / "sessions/s1").exists()
    assert (store.root / "sessions").is_dir()


def test_directories_are_not_blobs(store: LocalBlobStore) -> None:
    store.put_bytes("dir/h", b"x")
    assert not store.exists("dir")
    store.delete("dir")
    assert store.exists("dir/h")


def test_ping_fails_when_the_root_is_gone(store: LocalBlobStore) -> None:
    store.ping()
    os.rmdir(store.root)
    with pytest.raises(BackendUnavailable, match="missing or not writable"):
        store.ping()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab./\\-_\x00 ~", max_size=12))
def test_every_accepted_key_stays_under_the_root(tmp_path_factory: pytest.TempPathFactory, key: str) -> None:
    root = tmp_path_factory.getbasetemp() / "prop"
    store = LocalBlobStore(root)
    try:
        validate_key(key)
    except InvalidKey:
        return
    path = Path(store.path_for(key))
    assert path.resolve().is_relative_to(store.root)
    assert path.relative_to(store.root).as_posix() == key


def test_a_blob_key_is_never_interned(store: LocalBlobStore) -> None:
    """A key's parts are request-unique (session ids, handles): interned, they grow the table CPython keeps of every
    identifier, and a worker's RSS steps up by 3.8 MB when a busy moment makes it double (`bench/profiles/interned.py`).
    Every operation of the store on a fresh key leaves `sys.intern` uncalled (pathlib calls it for each part)."""
    key, prefix = "sessions/4c1f0d2b9e7a/0a9b8c7d6e5f", "sessions/4c1f0d2b9e7a/"
    with interned_strings() as interned:
        store.put_bytes(key, b"body")
        assert store.exists(key) and store.size(key) == 4 and store.read_range(key, 1, 3) == b"od"
        assert b"".join(store.iter_range(key)) == b"body"
        store.delete(key)
        store.put_bytes(key, b"again")
        assert store.delete_prefix(prefix) == 1
    assert not [text for text in interned if "4c1f0d2b9e7a" in text or "0a9b8c7d6e5f" in text], interned
