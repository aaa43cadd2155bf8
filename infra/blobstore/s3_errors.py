"""botocore's exceptions, translated into our error tree at the S3 seam.

Nothing above `infra/blobstore/s3.py` should have to import botocore to tell a missing blob
from a dead endpoint; the API maps our tree to HTTP in one place.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    PartialCredentialsError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from extraction.errors import Conflict, ToolOutError
from infra.errors import BackendUnavailable, BlobNotFound

_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_ACCESS = {
    "AccessDenied",
    "403",
    "Forbidden",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AllAccessDisabled",
    "ExpiredToken",
    "InvalidToken",
    "AccountProblem",
}
_UNREACHABLE = (BotoConnectionError, HTTPClientError, IncompleteReadError, NoCredentialsError, PartialCredentialsError)


@contextmanager
def translated(bucket: str, key: str | None = None) -> Iterator[None]:
    """Re-raise S3 failures as ours. With `key=None` (bucket-level calls) a 404 means no bucket."""
    try:
        yield
    except ClientError as exc:
        raise from_client_error(exc, bucket, key) from exc
    except S3UploadFailedError as exc:
        raise from_upload_failure(exc, bucket, key) from exc
    except _UNREACHABLE as exc:
        raise unreachable(exc, bucket) from exc


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "")) or str(
        exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "")
    )


def from_client_error(exc: ClientError, bucket: str, key: str | None) -> ToolOutError:
    code = error_code(exc)
    if code in _NOT_FOUND and key is not None:
        return BlobNotFound(f"no blob stored under {key!r}", key=key)
    if code == "NoSuchBucket" or code in _NOT_FOUND:
        return no_such_bucket(bucket)
    if code in _ACCESS:
        return BackendUnavailable(
            f"S3 access denied to bucket {bucket!r} ({code}); check the credentials and the bucket policy",
            bucket=bucket,
            s3_code=code,
        )
    if code in {"PreconditionFailed", "412"}:
        return Conflict(f"blob {key!r} changed while it was being read", key=key, bucket=bucket)
    return BackendUnavailable(f"S3 request on bucket {bucket!r} failed: {code}: {exc}", bucket=bucket, s3_code=code)


def no_such_bucket(bucket: str) -> BackendUnavailable:
    return BackendUnavailable(
        f"S3 bucket {bucket!r} does not exist (create it, or fix TOOLOUT_BLOB_STORE)",
        bucket=bucket,
        s3_code="NoSuchBucket",
    )


def from_upload_failure(exc: S3UploadFailedError, bucket: str, key: str | None) -> ToolOutError:
    """boto3 wraps a failed `upload_file` in a string-only error; its cause still has the code."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, ClientError):
        return from_client_error(cause, bucket, key)
    if isinstance(cause, BotoCoreError):
        return unreachable(cause, bucket)
    return BackendUnavailable(f"S3 upload to bucket {bucket!r} failed: {exc}", bucket=bucket)


def unreachable(exc: BaseException, bucket: str) -> BackendUnavailable:
    return BackendUnavailable(f"S3 endpoint for bucket {bucket!r} is unreachable: {exc}", bucket=bucket)
