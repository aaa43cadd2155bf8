"""Blob stores: one `BlobStore` protocol, a local, an S3 and an in-memory implementation.

`open_blob_store(url)` is the only place that turns configuration into a store, so API,
workers and CLI cannot disagree on what `TOOLOUT_BLOB_STORE` means. The S3 store (boto3: a fifth of a
CPU-second to import) is imported only when an s3:// URL or `S3BlobStore` asks for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from extraction.errors import InvalidInput
from infra.blobstore.base import BlobStore, validate_key, validate_prefix
from infra.blobstore.local import LocalBlobStore
from infra.blobstore.memory import MemoryBlobStore

if TYPE_CHECKING:
    from infra.blobstore.s3 import S3BlobStore
    from infra.settings import Settings

__all__ = [
    "BlobStore",
    "LocalBlobStore",
    "MemoryBlobStore",
    "S3BlobStore",
    "open_blob_store",
    "open_blob_store_from_settings",
    "validate_key",
    "validate_prefix",
]

S3_OPTIONS = frozenset(
    {
        "endpoint_url",
        "access_key_id",
        "secret_access_key",
        "region",
        "multipart_threshold",
        "multipart_chunksize",
        "read_block",
        "max_concurrency",
        "connect_timeout",
        "read_timeout",
        "max_attempts",
        "page_size",
    }
)
URL_FORMS = "file:///absolute/path, s3://bucket[/prefix] or memory://"


def open_blob_store(url: str, **s3_options: Any) -> BlobStore:
    """Build the store a URL names; S3-only options are ignored by the other stores except `read_block`.

    Ignoring rather than refusing them lets one settings object feed every kind of store.
    """
    unknown = set(s3_options) - S3_OPTIONS
    if unknown:
        raise InvalidInput(f"unknown blob store options: {', '.join(sorted(unknown))}", allowed=sorted(S3_OPTIONS))
    parts = urlsplit(url.strip()) if isinstance(url, str) else None
    if parts is None or parts.scheme not in _OPENERS:
        raise InvalidInput(f"blob store URL {url!r} must be {URL_FORMS}", url=url)
    if parts.query or parts.fragment:
        raise InvalidInput(f"blob store URL {url!r} must not carry a query or fragment", url=url)
    return _OPENERS[parts.scheme](url, parts, s3_options)


def open_blob_store_from_settings(settings: Settings) -> BlobStore:
    """The store `TOOLOUT_BLOB_STORE` and the `TOOLOUT_S3_*` settings describe."""
    return open_blob_store(
        settings.blob_store,
        endpoint_url=settings.s3_endpoint_url,
        access_key_id=settings.s3_access_key_id,
        secret_access_key=settings.s3_secret_access_key,
        region=settings.s3_region,
        multipart_threshold=settings.s3_multipart_threshold_bytes,
        multipart_chunksize=settings.s3_multipart_chunk_bytes,
        read_block=settings.blob_read_block_bytes,
    )


def _read_block(options: dict[str, Any]) -> dict[str, Any]:
    return {"read_block": options["read_block"]} if options.get("read_block") is not None else {}


def _open_file(url: str, parts: Any, options: dict[str, Any]) -> LocalBlobStore:
    if parts.netloc not in ("", "localhost"):
        raise InvalidInput(
            f"blob store URL {url!r}: file URLs need an absolute path, file:///path (got host {parts.netloc!r})",
            url=url,
        )
    path = Path(unquote(parts.path))
    if not path.is_absolute() or not parts.path.strip("/"):
        raise InvalidInput(f"blob store URL {url!r}: file URLs need an absolute, non-root path", url=url)
    return LocalBlobStore(path, **_read_block(options))


def _open_s3(url: str, parts: Any, options: dict[str, Any]) -> S3BlobStore:
    if not parts.netloc:
        raise InvalidInput(f"blob store URL {url!r}: s3 URLs need a bucket, s3://bucket[/prefix]", url=url)
    from infra.blobstore.s3 import S3BlobStore

    chosen = {name: value for name, value in options.items() if value is not None}
    return S3BlobStore(parts.netloc, prefix=unquote(parts.path), **chosen)


def _open_memory(url: str, parts: Any, options: dict[str, Any]) -> MemoryBlobStore:
    """Every call makes a fresh, empty store: tests must not share blobs by accident."""
    if parts.netloc or parts.path.strip("/"):
        raise InvalidInput(f"blob store URL {url!r}: the memory store takes no name or path, use memory://", url=url)
    return MemoryBlobStore(**_read_block(options))


_OPENERS: dict[str, Callable[[str, Any, dict[str, Any]], BlobStore]] = {
    "file": _open_file,
    "s3": _open_s3,
    "memory": _open_memory,
}


def __getattr__(name: str) -> Any:
    """`S3BlobStore` on first use (PEP 562), so a process on a local or memory store never imports boto3."""
    if name == "S3BlobStore":
        from infra.blobstore.s3 import S3BlobStore

        return S3BlobStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
