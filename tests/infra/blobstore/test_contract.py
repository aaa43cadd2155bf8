"""One contract, three stores: memory, local disk, and S3 (SeaweedFS over real HTTP: tests/fixtures/s3.py).

Every store runs with a 1 MiB read block and, for S3, a 5 MiB multipart threshold and part
size, so a 12 MiB blob crosses read blocks and multipart parts without slowing the suite.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from extraction.errors import InvalidInput
from extraction.protocols import BlobReader
from infra.blobstore import BlobStore, LocalBlobStore, MemoryBlobStore
from infra.errors import BlobNotFound, InvalidKey
from tests.fixtures.s3 import TEST_MULTIPART_BYTES, TEST_READ_BLOCK

BLOCK = TEST_READ_BLOCK
PART = TEST_MULTIPART_BYTES
BIG = 2 * PART + 2 * BLOCK + 12_345  # three multipart parts, fifteen read blocks, aligned to neither


@pytest.fixture(params=["memory", "local", pytest.param("s3", marks=[pytest.mark.s3, pytest.mark.integration])])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "memory":
        return MemoryBlobStore(read_block=BLOCK)
    if request.param == "local":
        return LocalBlobStore(tmp_path / "blobs", read_block=BLOCK)
    return request.getfixturevalue("s3_store")


@pytest.fixture(scope="module")
def big() -> bytes:
    return random.Random(7).randbytes(BIG)


def blocks_of(data: bytes, size: int) -> Iterator[bytes]:
    return (data[offset : offset + size] for offset in range(0, len(data), size))


def put_big(store: BlobStore, key: str, data: bytes, how: str, tmp_path: Path) -> int:
    if how == "stream":
        return store.put_stream(key, blocks_of(data, 1_000_003))
    source = tmp_path / "spooled.bin"
    source.write_bytes(data)
    return store.put_file(key, source)


# --- round trips ------------------------------------------------------------------------------


def test_every_store_is_a_blob_store_and_a_blob_reader(store: BlobStore) -> None:
    assert isinstance(store, BlobStore)
    assert isinstance(store, BlobReader)


def test_put_bytes_round_trips(store: BlobStore) -> None:
    assert store.put_bytes("sessions/s1/h1.tokidx", b'{"offsets": [0]}') == 16
    assert store.get_bytes("sessions/s1/h1.tokidx") == b'{"offsets": [0]}'
    assert store.size("sessions/s1/h1.tokidx") == 16
    assert store.exists("sessions/s1/h1.tokidx")


def test_put_stream_joins_uneven_and_empty_blocks(store: BlobStore) -> None:
    blocks = [b"alpha\n", b"", b"beta\n" * 1000, bytearray(b"gamma"), memoryview(b"!")]
    assert store.put_stream("s/h", iter(blocks)) == 6 + 5000 + 5 + 1
    assert store.get_bytes("s/h") == b"".join(bytes(block) for block in blocks)


def test_put_file_round_trips(store: BlobStore, tmp_path: Path) -> None:
    source = tmp_path / "spool"
    source.write_bytes(b"line 1\nline 2\n")
    assert store.put_file("s/h", source) == 14
    assert store.get_bytes("s/h") == b"line 1\nline 2\n"


def test_put_file_of_a_missing_source_is_invalid_input(store: BlobStore, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        store.put_file("s/h", tmp_path / "nope")
    assert not store.exists("s/h")


def test_empty_blob_reads_as_empty(store: BlobStore) -> None:
    assert store.put_stream("s/empty", iter([])) == 0
    assert store.size("s/empty") == 0
    assert store.get_bytes("s/empty") == b""
    assert store.read_range("s/empty", 0, 10) == b""
    assert list(store.iter_range("s/empty")) == []


def test_overwrite_replaces_the_whole_blob(store: BlobStore) -> None:
    store.put_bytes("s/h", b"a much longer first version")
    store.put_stream("s/h", [b"short"])
    assert store.get_bytes("s/h") == b"short"
    assert store.size("s/h") == 5


# --- big blobs and ranges ---------------------------------------------------------------------


@pytest.mark.parametrize("how", ["stream", "file"])
def test_big_blob_reads_back_at_start_middle_end_and_across_boundaries(
    store: BlobStore, big: bytes, how: str, tmp_path: Path
) -> None:
    assert put_big(store, "sessions/s1/big", big, how, tmp_path) == BIG
    assert store.size("sessions/s1/big") == BIG
    ranges = [
        (0, 10),
        (0, BLOCK),
        (BLOCK - 3, BLOCK + 3),
        (PART - 2, PART + 2),
        (2 * PART - 1, 2 * PART + BLOCK + 1),
        (BIG // 2, BIG // 2 + 1000),
        (BIG - 100, BIG),
        (BIG - 100, BIG + 5000),
        (0, BIG),
    ]
    for start, end in ranges:
        assert store.read_range("sessions/s1/big", start, end) == big[start:end], (start, end)


def test_iter_range_reassembles_exactly_in_bounded_blocks(store: BlobStore, big: bytes) -> None:
    store.put_stream("s/big", blocks_of(big, BLOCK + 17))
    whole = list(store.iter_range("s/big"))
    assert b"".join(whole) == big
    assert max(map(len, whole)) == BLOCK and len(whole) == -(-BIG // BLOCK)
    start, end = BLOCK - 7, 3 * BLOCK + 11
    parts = list(store.iter_range("s/big", start, end, block_size=300_000))
    assert b"".join(parts) == big[start:end]
    assert [len(part) for part in parts[:-1]] == [300_000] * (len(parts) - 1)


def test_iter_range_clips_like_read_range(store: BlobStore) -> None:
    store.put_bytes("s/h", b"0123456789")
    assert b"".join(store.iter_range("s/h", 7, 100, block_size=2)) == b"789"
    assert list(store.iter_range("s/h", 10)) == []
    assert list(store.iter_range("s/h", 50, 60)) == []
    with pytest.raises(InvalidInput):
        store.iter_range("s/h", 0, None, block_size=0)


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [(0, 10, b"0123456789"), (2, 5, b"234"), (8, 100, b"89"), (10, 11, b""), (50, 60, b""), (5, 5, b""), (6, 3, b"")],
)
def test_read_range_is_end_exclusive_and_clipped(store: BlobStore, start: int, end: int, expected: bytes) -> None:
    store.put_bytes("s/h", b"0123456789")
    assert store.read_range("s/h", start, end) == expected


def test_negative_ranges_are_invalid_input(store: BlobStore) -> None:
    store.put_bytes("s/h", b"0123456789")
    with pytest.raises(InvalidInput):
        store.read_range("s/h", -1, 4)
    with pytest.raises(InvalidInput):
        store.iter_range("s/h", 0, -4)


# --- missing keys, deletes --------------------------------------------------------------------


def test_missing_key_is_blob_not_found(store: BlobStore) -> None:
    for read in (
        store.size,
        store.get_bytes,
        lambda k: store.read_range(k, 0, 10),
        lambda k: store.read_range(k, 3, 3),
    ):
        with pytest.raises(BlobNotFound):
            read("s/missing")
    with pytest.raises(BlobNotFound):
        store.iter_range("s/missing")  # at call time, before the first next()
    assert not store.exists("s/missing")


def test_delete_removes_and_tolerates_missing(store: BlobStore) -> None:
    store.put_bytes("s/h", b"x")
    store.delete("s/h")
    assert not store.exists("s/h")
    store.delete("s/h")
    store.delete("never/was")


def test_delete_prefix_is_a_plain_string_prefix(store: BlobStore) -> None:
    for key in ["sessions/s1/h1", "sessions/s1/h1.tokidx", "sessions/s1/h2", "sessions/s10/h1", "sessions/s2/h1"]:
        store.put_bytes(key, key.encode())
    assert store.delete_prefix("sessions/s1/h1") == 2
    assert store.exists("sessions/s1/h2") and not store.exists("sessions/s1/h1.tokidx")
    assert store.delete_prefix("sessions/s1/") == 1
    assert store.exists("sessions/s10/h1")
    assert store.delete_prefix("sessions/s1") == 1
    assert store.delete_prefix("sessions/s1/") == 0
    assert store.delete_prefix("nothing/here/") == 0
    assert store.get_bytes("sessions/s2/h1") == b"sessions/s2/h1"


@pytest.mark.parametrize("prefix", ["", "/", "/abs/", "a//", "../", "a/../b/", "//"])
def test_delete_prefix_refuses_empty_and_malformed_prefixes(store: BlobStore, prefix: str) -> None:
    store.put_bytes("a/b", b"kept")
    with pytest.raises(InvalidKey):
        store.delete_prefix(prefix)
    assert store.get_bytes("a/b") == b"kept"


# --- keys -------------------------------------------------------------------------------------

INVALID_KEYS = [
    "../x",
    "/abs",
    "a//b",
    "a/../b",
    "a\\b",
    "a\x00b",
    "",
    "a/",
    "./a",
    "a/./b",
    "..",
    "a b",
    "é",
    "x" * 256,
]


@pytest.mark.parametrize("key", INVALID_KEYS, ids=repr)
def test_invalid_keys_are_refused_by_every_operation(store: BlobStore, key: str, tmp_path: Path) -> None:
    source = tmp_path / "spool"
    source.write_bytes(b"x")
    operations = [
        lambda: store.put_bytes(key, b"x"),
        lambda: store.put_stream(key, [b"x"]),
        lambda: store.put_file(key, source),
        lambda: store.get_bytes(key),
        lambda: store.size(key),
        lambda: store.read_range(key, 0, 1),
        lambda: store.iter_range(key),
        lambda: store.exists(key),
        lambda: store.delete(key),
    ]
    for operation in operations:
        with pytest.raises(InvalidKey):
            operation()


def test_keys_with_every_allowed_character_work(store: BlobStore) -> None:
    key = "Sessions_1/a-b.c/..hidden/x..y/-_.0"
    store.put_bytes(key, b"ok")
    assert store.get_bytes(key) == b"ok"


# --- failures ---------------------------------------------------------------------------------


class Boom(Exception):
    pass


def failing_blocks(data: bytes, fail_after: int) -> Iterator[bytes]:
    for index, block in enumerate(blocks_of(data, BLOCK)):
        if index == fail_after:
            raise Boom("the producer died")
        yield block


@pytest.mark.parametrize("fail_after", [0, 1, 7], ids=["first-block", "small", "past-multipart-threshold"])
def test_a_put_stream_that_fails_midway_stores_nothing(store: BlobStore, big: bytes, fail_after: int) -> None:
    with pytest.raises(Boom):
        store.put_stream("s/new", failing_blocks(big, fail_after))
    assert not store.exists("s/new")


def test_a_failed_overwrite_keeps_the_previous_blob(store: BlobStore, big: bytes) -> None:
    store.put_bytes("s/h", b"previous")
    with pytest.raises(Boom):
        store.put_stream("s/h", failing_blocks(big, 7))
    assert store.get_bytes("s/h") == b"previous"


def test_ping_answers_for_a_healthy_store(store: BlobStore) -> None:
    store.ping()
