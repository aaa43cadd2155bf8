"""Key validation against the path-traversal payloads the API tests send: whether a payload is a
whole key, a session id or a handle inside a key, every store refuses it, and the local store never
touches a file beside or above its root."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from infra.blobstore import LocalBlobStore, MemoryBlobStore, validate_key, validate_prefix
from infra.errors import InvalidKey
from infra.stores.records import blob_key
from tests.fixtures.traversal import SOME_UUID, TRAVERSAL_PAYLOADS

PAYLOADS = list(TRAVERSAL_PAYLOADS.values())
IDS = list(TRAVERSAL_PAYLOADS)


def placements(payload: str) -> dict[str, str]:
    """The payload where a key could carry it: alone, as the session id, as the handle."""
    return {"whole key": payload, "session id": blob_key(payload, SOME_UUID), "handle": blob_key(SOME_UUID, payload)}


def index_key(payload: str) -> str:
    """A handle followed by `.tokidx` in the same segment: `.` + `.tokidx` is the harmless name `..tokidx`."""
    return f"{blob_key(SOME_UUID, payload)}.tokidx"


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_validate_key_refuses_every_payload_wherever_it_sits(payload: str) -> None:
    for where, key in placements(payload).items():
        with pytest.raises(InvalidKey):
            validate_key(key)
            pytest.fail(f"accepted as {where}: {key!r}")


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_an_index_key_is_refused_or_stays_in_its_session_directory(tmp_path: Path, payload: str) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    key = index_key(payload)
    try:
        path = Path(store.path_for(key))
    except InvalidKey:
        return
    assert path.resolve().parent == store.root / "sessions" / SOME_UUID
    assert path.relative_to(store.root).as_posix() == key


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_validate_prefix_refuses_every_payload(payload: str) -> None:
    for prefix in (payload, f"{payload}/", f"sessions/{payload}/", f"sessions/{SOME_UUID}/{payload}"):
        with pytest.raises(InvalidKey):
            validate_prefix(prefix)


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under `root`: size, mtime and content hash (directories listed with empty values)."""
    seen: dict[str, tuple[int, int, str]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            seen[os.path.relpath(os.path.join(folder, name), root) + "/"] = (0, 0, "")
        for name in files:
            path = Path(folder, name)
            info = path.stat()
            seen[str(path.relative_to(root))] = (
                info.st_size,
                info.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return seen


def store_operations(store: LocalBlobStore | MemoryBlobStore, key: str, source: Path) -> list[Callable[[], object]]:
    return [
        lambda: store.put_bytes(key, b"owned"),
        lambda: store.put_stream(key, [b"owned"]),
        lambda: store.put_file(key, source),
        lambda: store.get_bytes(key),
        lambda: store.size(key),
        lambda: store.read_range(key, 0, 10),
        lambda: store.iter_range(key),
        lambda: store.exists(key),
        lambda: store.delete(key),
        lambda: store.delete_prefix(key),
        lambda: store.delete_prefix(f"{key}/"),
    ]


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_the_local_store_refuses_every_payload_and_touches_nothing(tmp_path: Path, payload: str) -> None:
    """Root at tmp/var/blobs: `../../etc/passwd` from a key would land on tmp/etc/passwd, so a sentinel waits there."""
    store = LocalBlobStore(tmp_path / "var" / "blobs")
    store.put_bytes(blob_key(SOME_UUID, SOME_UUID), b"a real blob")
    for sentinel in (tmp_path / "etc" / "passwd", tmp_path / "var" / "sentinel"):
        sentinel.parent.mkdir(parents=True, exist_ok=True)
        sentinel.write_bytes(b"root:x:0:0\n")
    source = tmp_path / "spool"
    source.write_bytes(b"owned")
    before = snapshot(tmp_path)
    for key in placements(payload).values():
        for operation in store_operations(store, key, source):
            with pytest.raises(InvalidKey):
                operation()
    assert snapshot(tmp_path) == before
    assert store.get_bytes(blob_key(SOME_UUID, SOME_UUID)) == b"a real blob"


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_the_memory_store_refuses_every_payload(tmp_path: Path, payload: str) -> None:
    store = MemoryBlobStore()
    source = tmp_path / "spool"
    source.write_bytes(b"owned")
    for key in placements(payload).values():
        for operation in store_operations(store, key, source):
            with pytest.raises(InvalidKey):
                operation()
