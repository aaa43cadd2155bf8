"""`open_blob_store`: the one place configuration becomes a store, and its refusals say why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extraction.errors import InvalidInput
from infra.blobstore import (
    LocalBlobStore,
    MemoryBlobStore,
    S3BlobStore,
    open_blob_store,
    open_blob_store_from_settings,
)
from infra.settings import Settings

MiB = 1 << 20


def test_file_url_opens_a_local_store_and_creates_its_root(tmp_path: Path) -> None:
    store = open_blob_store(f"file://{tmp_path}/a%20b/blobs", read_block=MiB, endpoint_url="ignored")
    assert isinstance(store, LocalBlobStore)
    assert store.root == tmp_path / "a b" / "blobs" and store.root.is_dir()
    assert store.read_block == MiB


def test_s3_url_names_bucket_and_prefix() -> None:
    store = open_blob_store(
        "s3://toolout-blobs/env/prod/",
        endpoint_url="http://127.0.0.1:9",
        region="eu-west-1",
        multipart_threshold=32 * MiB,
        multipart_chunksize=8 * MiB,
        read_block=2 * MiB,
    )
    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix, store.read_block) == ("toolout-blobs", "env/prod/", 2 * MiB)
    assert store.transfer_config.multipart_threshold == 32 * MiB
    assert store.transfer_config.multipart_chunksize == 8 * MiB
    assert store.client.meta.region_name == "eu-west-1"
    assert open_blob_store("s3://toolout-blobs").prefix == ""


def test_memory_url_opens_a_fresh_store_each_time() -> None:
    first, second = open_blob_store("memory://"), open_blob_store("memory://")
    assert isinstance(first, MemoryBlobStore) and first is not second


@pytest.mark.parametrize(
    ("url", "complaint"),
    [
        ("", "must be"),
        ("/var/blobs", "must be"),
        ("ftp://host/x", "must be"),
        ("file://relative/path", "absolute"),
        ("file:relative", "absolute"),
        ("file:///", "non-root"),
        ("s3://", "need a bucket"),
        ("s3:///prefix", "need a bucket"),
        ("s3://b", "3-63"),
        ("s3://bucket/../x", "'..'"),
        ("s3://bucket?versioning=1", "query"),
        ("memory://named", "no name"),
    ],
)
def test_bad_urls_are_invalid_input_saying_what_is_wrong(url: str, complaint: str) -> None:
    with pytest.raises(InvalidInput, match=complaint):
        open_blob_store(url)


def test_unknown_options_are_refused() -> None:
    with pytest.raises(InvalidInput, match="bukket"):
        open_blob_store("memory://", bukket="x")


def test_settings_open_the_configured_s3_store(s3_bucket: str, s3_options: dict[str, Any]) -> None:
    settings = Settings(
        blob_store=f"s3://{s3_bucket}/from-settings",
        s3_endpoint_url=s3_options["endpoint_url"],
        s3_access_key_id=s3_options["access_key_id"],
        s3_secret_access_key=s3_options["secret_access_key"],
        s3_multipart_threshold_bytes=5 * MiB,
        s3_multipart_chunk_bytes=6 * MiB,
        blob_read_block_bytes=MiB,
    )
    store = open_blob_store_from_settings(settings)
    assert isinstance(store, S3BlobStore) and store.prefix == "from-settings/"
    assert store.transfer_config.multipart_chunksize == 6 * MiB
    store.put_bytes("k", b"through settings")
    assert store.get_bytes("k") == b"through settings"
    assert store.delete_prefix("k") == 1


def test_settings_default_to_a_local_store(tmp_path: Path) -> None:
    store = open_blob_store_from_settings(Settings(blob_store=f"file://{tmp_path}/blobs"))
    assert isinstance(store, LocalBlobStore) and store.read_block == 8 * MiB
