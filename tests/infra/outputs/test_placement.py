"""Storing outputs as variables and files, on the in-memory twins (no server): write modes, names, versions."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from itertools import count

import pytest

from extraction.directives.specs import WriteMode
from extraction.documents.lines import build_line_index
from extraction.documents.stats import measure
from extraction.errors import NotFound
from infra.blobstore import MemoryBlobStore
from infra.errors import BackendUnavailable, BlobNotFound
from infra.outputs import placement, storing
from infra.outputs.content import iter_content
from infra.outputs.placement import DEFAULT_TARGET
from infra.outputs.storing import Target, UploadMeta, WriteOptions, store_output
from infra.outputs.versions import BytesSource
from infra.stores.records import OutputRecord, RecordStores, SessionRecord, Space, memory_record_stores


class Clock:
    def __init__(self) -> None:
        self.ticks = count(1000)

    def __call__(self) -> float:
        return float(next(self.ticks))


@pytest.fixture()
def stores() -> tuple[RecordStores, MemoryBlobStore]:
    return memory_record_stores(session_ttl_seconds=600), MemoryBlobStore()


def put(
    stores: tuple[RecordStores, MemoryBlobStore],
    session: SessionRecord,
    data: bytes,
    target: Target = DEFAULT_TARGET,
    *,
    tool: str = "search",
    content_type: str = "text/plain",
    inline_max: int = 1 << 20,
    clock: Clock | None = None,
) -> OutputRecord:
    records, blobs = stores
    options = WriteOptions(inline_max_bytes=inline_max, clock=clock or Clock())
    return store_output(
        blobs,
        records,
        session,
        UploadMeta(tool, "{}", content_type),
        measure([data]),
        build_line_index([data]),
        lambda key: blobs.put_bytes(key, data),
        target=target,
        options=options,
        source=BytesSource(data),
    )


def text(stores: tuple[RecordStores, MemoryBlobStore], record: OutputRecord) -> bytes:
    return b"".join(iter_content(stores[1], record))


def test_default_names_count_per_tool(stores) -> None:
    session = stores[0].sessions.create_session()
    names = [put(stores, session, b"x", tool=tool).name for tool in ("search", "search", "web-fetch", "search")]
    assert names == ["search_1", "search_2", "web_fetch_1", "search_3"]


@pytest.mark.parametrize("inline_max", [1 << 20, 0], ids=["inline", "blob"])
def test_append_joins_on_a_new_line_and_keeps_created_at(stores, inline_max: int) -> None:
    session, clock = stores[0].sessions.create_session(), Clock()
    target = Target(Space.VARIABLE, "log", WriteMode.APPEND)
    first = put(stores, session, b"one", target, inline_max=inline_max, clock=clock)
    second = put(stores, session, b"two\n", target, inline_max=inline_max, clock=clock)
    third = put(stores, session, b"three", target, inline_max=inline_max, clock=clock)
    assert text(stores, third) == b"one\ntwo\nthree"
    assert (third.parts, third.created_at, third.name) == (3, first.created_at, "log")
    assert third.updated_at is not None and third.updated_at > second.created_at
    assert (third.stats.lines, third.chars) == (3, 13)
    assert (third.inline is not None) == bool(inline_max)
    retired = stores[0].retention.retired_outputs(before=float("inf"))
    assert [r.handle for r in retired] == [first.handle, second.handle]


def test_append_content_types(stores) -> None:
    session = stores[0].sessions.create_session()
    json_target = Target(Space.VARIABLE, "j", WriteMode.APPEND)
    put(stores, session, b'{"a":1}', json_target, content_type="application/json")
    assert put(stores, session, b'{"b":2}', json_target, content_type="application/json").content_type == "text/plain"
    md_target = Target(Space.VARIABLE, "m", WriteMode.APPEND)
    put(stores, session, b"# a", md_target, content_type="text/markdown")
    assert put(stores, session, b"# b", md_target, content_type="text/markdown").content_type == "text/markdown"


def test_replace_new_and_files(stores) -> None:
    session = stores[0].sessions.create_session()
    put(stores, session, b"old", Target(Space.VARIABLE, "foo", WriteMode.APPEND))
    replaced = put(stores, session, b"new", Target(Space.VARIABLE, "foo", WriteMode.REPLACE))
    assert text(stores, replaced) == b"new" and replaced.parts == 1
    fresh = [put(stores, session, b"n", Target(Space.VARIABLE, "foo", WriteMode.NEW)).name for _ in range(2)]
    assert fresh == ["foo_2", "foo_3"]
    files = [put(stores, session, b"f", Target(Space.FILE, "out/r.md", WriteMode.NEW)).path for _ in range(3)]
    assert files == ["out/r.md", "out/r_2.md", "out/r_3.md"]
    assert set(stores[0].names.aliases(session.id, Space.FILE)) == set(files)
    assert set(stores[0].names.aliases(session.id, Space.VARIABLE)) == {"foo", "foo_2", "foo_3"}


def test_small_outputs_write_no_blob_and_big_ones_write_three(stores) -> None:
    session = stores[0].sessions.create_session()
    small = put(stores, session, b"x" * 200, inline_max=16_384)
    big = put(stores, session, b"y\n" * 10_000, inline_max=16_384)
    blobs = stores[1]
    assert small.inline is not None and not blobs.exists(small.blob_key)
    assert big.inline is None and all(blobs.exists(k) for k in (big.blob_key, big.index_key, big.lines_key or ""))
    assert small.preview == "x" * 100 + "…" and big.preview.startswith("y y y")


def test_racing_appends_keep_every_part(stores) -> None:
    session = stores[0].sessions.create_session()
    target = Target(Space.VARIABLE, "log", WriteMode.APPEND)
    parts = [f"part {i:02d}".encode() for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: put(stores, session, p, target, inline_max=0), parts))
    handle = stores[0].names.alias(session.id, Space.VARIABLE, "log")
    final = stores[0].outputs.get_output(handle or "")
    assert sorted(text(stores, final).split(b"\n")) == parts and final.parts == 16
    live = {stores[0].outputs.get_output(h).blob_key for h in stores[0].sessions.session_handles(session.id)}
    assert set(stores[1]._blobs) <= live | {f"{k}.tokidx" for k in live} | {f"{k}.lines" for k in live}  # no orphans


def test_a_session_deleted_meanwhile_leaves_nothing(stores) -> None:
    session = stores[0].sessions.create_session()
    stores[0].sessions.drop_session_records(session.id)
    with pytest.raises(NotFound, match="deleted during the upload"):
        put(stores, session, b"x" * 100, inline_max=0)
    assert stores[1]._blobs == {} and stores[0].sessions.session_handles(session.id) == []


class LaggingBlobs(MemoryBlobStore):
    """A store that answers 404 for the first `misses` reads of a blob, as an S3 server behind its own write may."""

    def __init__(self, misses: int) -> None:
        super().__init__()
        self.misses = misses

    def read_range(self, key: str, start: int, end: int) -> bytes:
        if self.misses:
            self.misses -= 1
            raise BlobNotFound(f"no blob stored under {key!r}", key=key)
        return super().read_range(key, start, end)


@pytest.fixture()
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(placement.time, "sleep", slept.append)
    return slept


def test_an_append_reads_a_lagging_store_again_instead_of_blaming_the_session(no_sleep) -> None:
    stores = (memory_record_stores(session_ttl_seconds=600), LaggingBlobs(misses=0))
    session, target = stores[0].sessions.create_session(), Target(Space.VARIABLE, "log", WriteMode.APPEND)
    put(stores, session, b"old", target, inline_max=0)
    stores[1].misses = 2
    appended = put(stores, session, b"new", target, inline_max=0)
    assert text(stores, appended) == b"old\nnew" and no_sleep == list(placement.LAGGING_READ_DELAYS[:2])


def test_a_store_that_never_shows_the_blob_is_a_503_not_a_deleted_session(no_sleep) -> None:
    stores = (memory_record_stores(session_ttl_seconds=600), LaggingBlobs(misses=0))
    session, target = stores[0].sessions.create_session(), Target(Space.VARIABLE, "log", WriteMode.APPEND)
    first = put(stores, session, b"old", target, inline_max=0)
    stores[1].misses = 99
    with pytest.raises(BackendUnavailable, match=f"did not show the content of {first.handle}"):
        put(stores, session, b"new", target, inline_max=0)
    assert stores[0].names.alias(session.id, Space.VARIABLE, "log") == first.handle
    assert stores[0].sessions.session_handles(session.id) == [first.handle]  # the failed append left no version behind


def test_a_miss_while_placing_keeps_its_own_message_while_the_session_lives(stores, monkeypatch) -> None:
    session = stores[0].sessions.create_session()

    def lost(*_: object) -> OutputRecord:
        raise NotFound("no blob stored under 'k'", key="k")

    monkeypatch.setattr(storing, "place", lost)
    with pytest.raises(NotFound, match="no blob stored under 'k'"):
        put(stores, session, b"x" * 100, inline_max=0)
