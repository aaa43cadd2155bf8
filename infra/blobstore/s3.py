"""Blobs as objects in an S3-compatible bucket (AWS, MinIO, moto), optionally under a key prefix.

Writes go through boto3's managed transfer so big outputs become multipart uploads with a
bounded number of parts in memory; reads are ranged GETs, one per block, so a reader never
holds more than one block and a dropped connection costs one block, not the whole stream.
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

from extraction.errors import InvalidInput
from infra.blobstore.base import (
    DEFAULT_READ_BLOCK,
    MiB,
    block_ranges,
    check_block_size,
    clip_range,
    source_size,
    validate_key,
    validate_prefix,
)
from infra.blobstore.s3_errors import error_code, translated
from infra.errors import BackendUnavailable, BlobNotFound

MAX_DELETE_BATCH = 1000  # S3's limit for one DeleteObjects call
_BUCKET = re.compile(r"[A-Za-z0-9._-]{3,63}")  # AWS is stricter; S3-compatible stores are not


class BlockReader(io.RawIOBase):
    """A read-only, non-seekable file over an iterator of byte blocks.

    `upload_fileobj` pulls one part at a time from it, so the body is never whole in memory.
    `readinto` always fills the buffer unless the blocks run out: s3transfer issues a single
    `read(part_size)` per part, and a short read would make an undersized (rejected) part.
    """

    def __init__(self, blocks: Iterable[bytes]) -> None:
        super().__init__()
        self._blocks = iter(blocks)
        self._pending = memoryview(b"")
        self.consumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view) and (self._pending or self._advance()):
            count = min(len(self._pending), len(view) - filled)
            view[filled : filled + count] = self._pending[:count]
            self._pending = self._pending[count:]
            filled += count
        self.consumed += filled
        return filled

    def _advance(self) -> bool:
        for block in self._blocks:
            if block:
                self._pending = memoryview(block).cast("B")
                return True
        return False


class S3BlobStore:
    """Blob `k` is object `<prefix>/k` in `bucket`; every botocore error is translated at this seam."""

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        endpoint_url: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        region: str = "us-east-1",
        multipart_threshold: int = 16 * MiB,
        multipart_chunksize: int = 16 * MiB,
        read_block: int = DEFAULT_READ_BLOCK,
        max_concurrency: int = 4,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        max_attempts: int = 3,
        page_size: int = MAX_DELETE_BATCH,
    ) -> None:
        self.bucket = _check_bucket(bucket)
        self.prefix = _normalize_prefix(prefix)
        self.region = region
        self.read_block = check_block_size(read_block, DEFAULT_READ_BLOCK)
        self.page_size = _check_page_size(page_size)
        self.transfer_config = _transfer_config(multipart_threshold, multipart_chunksize, max_concurrency)
        config = _client_config(endpoint_url, connect_timeout, read_timeout, max_attempts, max_concurrency)
        self.client = _new_client(
            endpoint_url=endpoint_url,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            region_name=region,
            config=config,
        )
        self._bucket_seen = False

    def __repr__(self) -> str:
        return (
            f"S3BlobStore(bucket={self.bucket!r}, prefix={self.prefix!r}, endpoint={self.client.meta.endpoint_url!r})"
        )

    def object_name(self, key: str) -> str:
        """The S3 object key behind a blob key."""
        return self.prefix + validate_key(key)

    # --- writes -------------------------------------------------------------------------------

    def put_stream(self, key: str, blocks: Iterable[bytes]) -> int:
        """Blocks are pulled from boto3's transfer thread; their exceptions reach the caller as is.

        On failure s3transfer aborts the multipart upload, so no object and no orphaned parts remain.
        """
        name = self.object_name(key)
        reader = BlockReader(blocks)
        with translated(self.bucket, key):
            self.client.upload_fileobj(reader, self.bucket, name, Config=self.transfer_config)
        return reader.consumed

    def put_file(self, key: str, path: str | os.PathLike[str]) -> int:
        """Upload in parallel parts straight from disk; the file is left where it is."""
        name = self.object_name(key)
        size = source_size(path)
        with translated(self.bucket, key):
            self.client.upload_file(os.fspath(path), self.bucket, name, Config=self.transfer_config)
        return size

    def put_bytes(self, key: str, data: bytes) -> int:
        name = self.object_name(key)
        body = bytes(data)
        with translated(self.bucket, key):
            self.client.put_object(Bucket=self.bucket, Key=name, Body=body)
        return len(body)

    # --- reads --------------------------------------------------------------------------------

    def _head(self, key: str) -> dict[str, Any]:
        """HEAD answers a bare 404 for a missing bucket too, so a miss checks the bucket once."""
        name = self.object_name(key)
        try:
            with translated(self.bucket, key):
                head: dict[str, Any] = self.client.head_object(Bucket=self.bucket, Key=name)
                return head
        except BlobNotFound:
            self._confirm_bucket()
            raise

    def _confirm_bucket(self) -> None:
        if not self._bucket_seen:
            self.ping()

    def size(self, key: str) -> int:
        return int(self._head(key)["ContentLength"])

    def exists(self, key: str) -> bool:
        try:
            self._head(key)
        except BlobNotFound:
            return False
        return True

    def get_bytes(self, key: str) -> bytes:
        name = self.object_name(key)
        with translated(self.bucket, key):
            body: bytes = self.client.get_object(Bucket=self.bucket, Key=name)["Body"].read()
            return body

    def read_range(self, key: str, start: int, end: int) -> bytes:
        """One ranged GET; S3 clips the end itself and answers 416 for a start at or past the size."""
        name = self.object_name(key)
        start, end = clip_range(start, end, sys.maxsize)
        if end <= start:
            self.size(key)  # still: a missing key is an error, not an empty read
            return b""
        return self._get_range(key, name, start, end)

    def iter_range(
        self, key: str, start: int = 0, end: int | None = None, block_size: int | None = None
    ) -> Iterator[bytes]:
        """HEAD now (missing keys fail here), then one GET per block pinned to the HEAD's ETag.

        If the object is replaced mid-stream the next GET fails with `Conflict` instead of
        silently splicing two versions together.
        """
        block = check_block_size(block_size, self.read_block)
        head = self._head(key)
        start, end = clip_range(start, end, int(head["ContentLength"]))
        return self._stream(key, start, end, block, head.get("ETag"))

    def _stream(self, key: str, start: int, end: int, block: int, etag: str | None) -> Iterator[bytes]:
        name = self.object_name(key)
        for first, stop in block_ranges(start, end, block):
            yield self._get_range(key, name, first, stop, etag)

    def _get_range(self, key: str, name: str, start: int, end: int, etag: str | None = None) -> bytes:
        request = {"Bucket": self.bucket, "Key": name, "Range": f"bytes={start}-{end - 1}"}
        if etag:
            request["IfMatch"] = etag
        with translated(self.bucket, key):
            try:
                response = self.client.get_object(**request)
            except ClientError as exc:
                if error_code(exc) == "InvalidRange":
                    return b""
                raise
            data: bytes = response["Body"].read()
            return data

    # --- deletes ------------------------------------------------------------------------------

    def delete(self, key: str) -> None:
        """S3 deletes are idempotent already: a missing object answers 204 like a present one."""
        name = self.object_name(key)
        with translated(self.bucket, key):
            self.client.delete_object(Bucket=self.bucket, Key=name)

    def delete_prefix(self, prefix: str) -> int:
        """List a page, delete that page in one DeleteObjects call, repeat; memory stays one page."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket,
            Prefix=self.prefix + validate_prefix(prefix),
            PaginationConfig={"PageSize": self.page_size},
        )
        deleted = 0
        with translated(self.bucket):
            for page in pages:
                deleted += self._delete_batch([item["Key"] for item in page.get("Contents", [])])
        return deleted

    def _delete_batch(self, names: list[str]) -> int:
        if not names:
            return 0
        response = self.client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": name} for name in names], "Quiet": True}
        )
        errors = response.get("Errors", [])
        if errors:
            first = errors[0]
            raise BackendUnavailable(
                f"S3 refused to delete {len(errors)} of {len(names)} objects; first: {first.get('Key')}: "
                f"{first.get('Code')} {first.get('Message')}",
                bucket=self.bucket,
            )
        return len(names)

    # --- health & setup -----------------------------------------------------------------------

    def ping(self) -> None:
        """HEAD the bucket: proves endpoint, credentials and bucket in one round trip."""
        with translated(self.bucket):
            self.client.head_bucket(Bucket=self.bucket)
        self._bucket_seen = True

    def ensure_bucket(self) -> None:
        """Create the bucket if it is missing (dev and tests; production buckets are provisioned)."""
        try:
            self.ping()
            return
        except BackendUnavailable as exc:
            if exc.details.get("s3_code") != "NoSuchBucket":
                raise
        request: dict[str, Any] = {"Bucket": self.bucket}
        if self.region != "us-east-1":
            request["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
        with translated(self.bucket):
            self.client.create_bucket(**request)
        self._bucket_seen = True


@lru_cache(maxsize=1)
def _session() -> boto3.session.Session:
    return boto3.session.Session()


_SESSION_LOCK = threading.Lock()


def _new_client(**kwargs: Any) -> Any:
    """Clients come from one shared session, under a lock because sessions are not thread-safe.

    The session's loader caches the parsed S3 service model, so a second store does not parse
    it again; the clients themselves are thread-safe.
    """
    with _SESSION_LOCK:
        return _session().client("s3", **kwargs)


def _check_bucket(bucket: str) -> str:
    if not isinstance(bucket, str) or not _BUCKET.fullmatch(bucket):
        raise InvalidInput(f"S3 bucket name must be 3-63 characters of a-z 0-9 . - _ (got {bucket!r})", bucket=bucket)
    return bucket


def _normalize_prefix(prefix: str) -> str:
    """`"a/b"`, `"/a/b/"` and `"a/b/"` all mean objects under `a/b/`; segments follow the key rules."""
    stripped = prefix.strip("/")
    return validate_key(stripped) + "/" if stripped else ""


def _check_page_size(page_size: int) -> int:
    if not 1 <= page_size <= MAX_DELETE_BATCH:
        raise InvalidInput(f"page_size must be between 1 and {MAX_DELETE_BATCH} (got {page_size})")
    return page_size


def _transfer_config(threshold: int, chunksize: int, concurrency: int) -> TransferConfig:
    """At most `concurrency` parts are buffered for a streamed upload (s3transfer's default is 10)."""
    if min(threshold, chunksize, concurrency) <= 0:
        raise InvalidInput(
            f"multipart threshold, chunk size and concurrency must be positive (got {threshold}, "
            f"{chunksize}, {concurrency})"
        )
    config = TransferConfig(
        multipart_threshold=threshold,
        multipart_chunksize=chunksize,
        max_concurrency=concurrency,
        use_threads=True,
        preferred_transfer_client="classic",
    )
    config.max_in_memory_upload_chunks = concurrency
    return config


def _client_config(endpoint_url: str | None, connect: float, read: float, attempts: int, concurrency: int) -> Config:
    """Short connect timeouts and few retries, so a dead endpoint becomes a 503 within seconds.

    Custom endpoints (MinIO, moto) get path-style addressing: they rarely serve bucket subdomains.
    """
    return Config(
        connect_timeout=connect,
        read_timeout=read,
        retries={"max_attempts": attempts, "mode": "standard"},
        max_pool_connections=max(10, concurrency * 2),
        s3={"addressing_style": "path" if endpoint_url else "auto"},
    )
