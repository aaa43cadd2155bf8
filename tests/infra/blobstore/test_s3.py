"""What only the S3 store has: multipart, pagination, ETag pinning, and botocore errors at the seam."""

from __future__ import annotations

import time
import tracemalloc
import uuid
from typing import Any

import pytest
from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from extraction.errors import Conflict
from infra.blobstore import S3BlobStore
from infra.blobstore.s3 import BlockReader
from infra.blobstore.s3_errors import translated
from infra.errors import BackendUnavailable, BlobNotFound
from tests.fixtures.s3 import TEST_MULTIPART_BYTES, make_s3_store
from tests.fixtures.servers import free_port

MiB = 1 << 20


def test_big_puts_are_multipart_uploads(s3_store: S3BlobStore, tmp_path) -> None:
    """A multipart object's ETag ends in -<parts>; three 5 MiB parts for 12 MiB."""
    data = b"x" * (2 * TEST_MULTIPART_BYTES + 123)
    s3_store.put_stream("streamed", [data[i : i + MiB] for i in range(0, len(data), MiB)])
    spool = tmp_path / "spool"
    spool.write_bytes(data)
    s3_store.put_file("filed", spool)
    for key in ("streamed", "filed"):
        head = s3_store.client.head_object(Bucket=s3_store.bucket, Key=s3_store.object_name(key))
        assert head["ETag"].endswith('-3"'), key
    assert spool.exists(), "S3 leaves the spooled file for the caller to remove"


def test_a_failed_multipart_stream_leaves_no_orphaned_parts(s3_store: S3BlobStore) -> None:
    def blocks():
        yield b"y" * (TEST_MULTIPART_BYTES + MiB)
        yield b"y" * TEST_MULTIPART_BYTES
        raise KeyError("producer failed")

    with pytest.raises(KeyError):
        s3_store.put_stream("doomed", blocks())
    uploads = s3_store.client.list_multipart_uploads(Bucket=s3_store.bucket, Prefix=s3_store.prefix)
    assert uploads.get("Uploads", []) == []
    assert not s3_store.exists("doomed")


def test_delete_prefix_pages_through_listings_and_batches_deletes(s3_bucket: str, s3_options: dict[str, Any]) -> None:
    store = make_s3_store(s3_bucket, s3_options, page_size=7)
    for index in range(30):
        store.put_bytes(f"sessions/s1/h{index:02d}", b"x")
    store.put_bytes("sessions/s2/kept", b"x")
    calls: list[int] = []
    store.client.meta.events.register("before-call.s3.DeleteObjects", lambda params, **_: calls.append(1))
    assert store.delete_prefix("sessions/s1/") == 30
    assert len(calls) == 5  # ceil(30 / 7)
    assert store.exists("sessions/s2/kept")
    store.delete_prefix("sessions/")


def test_stores_with_different_prefixes_do_not_see_each_other(s3_bucket: str, s3_options: dict[str, Any]) -> None:
    left, right = make_s3_store(s3_bucket, s3_options), make_s3_store(s3_bucket, s3_options)
    left.put_bytes("k", b"left")
    assert not right.exists("k")
    assert right.delete_prefix("k") == 0
    assert left.object_name("k") == f"{left.prefix}k" and left.prefix.endswith("/")
    left.delete("k")


def test_iter_range_refuses_to_splice_two_versions(s3_store: S3BlobStore) -> None:
    s3_store.put_bytes("h", b"a" * (3 * MiB))
    blocks = s3_store.iter_range("h", block_size=MiB)
    assert next(blocks) == b"a" * MiB
    s3_store.put_bytes("h", b"b" * (3 * MiB))
    with pytest.raises(Conflict):
        next(blocks)


# --- unreachable / misconfigured backends -----------------------------------------------------


def test_a_dead_endpoint_is_backend_unavailable_within_seconds() -> None:
    dead = S3BlobStore(
        "toolout-dead",
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        access_key_id="x",
        secret_access_key="y",
        connect_timeout=0.5,
        read_timeout=1,
        max_attempts=1,
    )
    started = time.monotonic()
    for operation in (
        dead.ping,
        lambda: dead.size("k"),
        lambda: dead.put_stream("k", [b"x"]),
        lambda: dead.delete("k"),
    ):
        with pytest.raises(BackendUnavailable, match="unreachable"):
            operation()
    assert time.monotonic() - started < 5


def test_a_missing_bucket_is_backend_unavailable_not_blob_not_found(s3_options: dict[str, Any]) -> None:
    store = S3BlobStore(f"toolout-missing-{uuid.uuid4().hex[:8]}", **s3_options)
    operations = [
        store.ping,
        lambda: store.size("k"),
        lambda: store.exists("k"),
        lambda: store.read_range("k", 0, 1),
        lambda: store.get_bytes("k"),
        lambda: store.put_bytes("k", b"x"),
        lambda: store.put_stream("k", [b"x"]),
    ]
    for operation in operations:
        with pytest.raises(BackendUnavailable, match="does not exist"):
            operation()


def test_ensure_bucket_creates_once_and_is_idempotent(s3_options: dict[str, Any]) -> None:
    store = S3BlobStore(f"toolout-new-{uuid.uuid4().hex[:8]}", **s3_options)
    store.ensure_bucket()
    store.ensure_bucket()
    store.ping()
    store.client.delete_bucket(Bucket=store.bucket)


# --- translation at the seam (no server needed) -----------------------------------------------


def client_error(code: str, status: int, operation: str = "GetObject") -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, operation
    )


@pytest.mark.parametrize(
    ("raised", "key", "expected", "message"),
    [
        (client_error("NoSuchKey", 404), "k", BlobNotFound, "no blob"),
        (client_error("404", 404, "HeadObject"), "k", BlobNotFound, "no blob"),
        (client_error("404", 404, "HeadBucket"), None, BackendUnavailable, "does not exist"),
        (client_error("NoSuchBucket", 404), "k", BackendUnavailable, "does not exist"),
        (client_error("AccessDenied", 403), "k", BackendUnavailable, "access denied"),
        (client_error("403", 403, "HeadObject"), "k", BackendUnavailable, "access denied"),
        (client_error("InvalidAccessKeyId", 403), "k", BackendUnavailable, "access denied"),
        (client_error("SlowDown", 503), "k", BackendUnavailable, "SlowDown"),
        (client_error("PreconditionFailed", 412), "k", Conflict, "changed"),
        (EndpointConnectionError(endpoint_url="http://nowhere"), "k", BackendUnavailable, "unreachable"),
        (ReadTimeoutError(endpoint_url="http://slow"), "k", BackendUnavailable, "unreachable"),
    ],
)
def test_botocore_errors_become_ours(raised: Exception, key: str | None, expected: type, message: str) -> None:
    with pytest.raises(expected, match=message) as caught, translated("bkt", key):
        raise raised
    assert caught.value.__cause__ is raised


def test_a_wrapped_upload_failure_is_translated_by_its_cause() -> None:
    cause = client_error("AccessDenied", 403, "PutObject")
    with pytest.raises(BackendUnavailable, match="access denied"), translated("bkt", "k"):
        try:
            raise cause
        except ClientError as exc:
            raise S3UploadFailedError("Failed to upload") from exc


@pytest.mark.parametrize("raised", [ValueError("a bug"), BlobNotFound("ours already"), KeyboardInterrupt()])
def test_errors_that_are_not_botocores_pass_through(raised: BaseException) -> None:
    with pytest.raises(type(raised)) as caught, translated("bkt", "k"):
        raise raised
    assert caught.value is raised


def test_block_reader_fills_whole_reads_across_blocks() -> None:
    reader = BlockReader(iter([b"ab", b"", b"cdefg", b"h"]))
    assert reader.read(4) == b"abcd"
    assert reader.read(10) == b"efgh"
    assert reader.read(10) == b""
    assert reader.consumed == 8 and not reader.seekable()


# --- memory ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_streamed_200_mb_put_keeps_memory_bounded(s3_store: S3BlobStore) -> None:
    """Multipart parts are pulled as needed: peak Python allocations stay far below the body size."""
    block = bytes(range(256)) * 4096  # 1 MiB, reused: the producer itself allocates nothing
    tracemalloc.start()
    try:
        written = s3_store.put_stream("huge", (block for _ in range(200)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written == 200 * MiB == s3_store.size("huge")
    assert peak < 64 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert s3_store.read_range("huge", 150 * MiB - 2, 150 * MiB + 2) == block[-2:] + block[:2]
