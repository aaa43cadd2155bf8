"""The upload pipeline without HTTP: spooling, its limits and its cleanup."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from api.ingest import SPOOL_PREFIX, spool
from extraction.errors import InvalidInput, PayloadTooLarge
from infra.outputs.versions import FileSource
from tests.fixtures.interning import interned_strings


async def blocks(*parts: bytes, fail_after: int | None = None) -> AsyncIterator[bytes]:
    for i, part in enumerate(parts):
        if fail_after is not None and i == fail_after:
            raise ConnectionResetError("client went away")
        yield part


def run_spool(tmp_path: Path, stream: AsyncIterator[bytes], limit: int = 10 << 20) -> Any:
    return asyncio.run(spool(stream, directory=tmp_path, limit=limit, encoding="o200k_base", read_timeout=60))


def test_spool_measures_across_batches(tmp_path: Path) -> None:
    parts = [b"a" * 700_000 + b"\n", b"b" * 900_000 + b"\n", b"tail"]
    spooled = run_spool(tmp_path, blocks(*parts))
    data = b"".join(parts)
    assert spooled.read() == data
    assert (spooled.size, spooled.measured.stats.sha256, spooled.measured.stats.lines, spooled.lines.lines) == (
        len(data),
        hashlib.sha256(data).hexdigest(),
        3,
        3,
    )
    spooled.remove()


def test_an_upload_is_spooled_read_and_removed_without_interning_its_file_name(tmp_path: Path) -> None:
    """The spool file's name is unique per upload: the API must not put it in the interned-strings table."""
    with interned_strings() as interned:
        spooled = run_spool(tmp_path, blocks(b'{"a": 1}\n', b"tail"))
        assert spooled.read() == b"".join(FileSource(spooled.path).blocks(4)) == b'{"a": 1}\ntail'
        spooled.remove()
        spooled.remove()  # a second remove (the upload's error path after the store took it) is a no-op
    name = Path(spooled.path).name
    assert not Path(spooled.path).exists() and not [text for text in interned if name in text], interned


@pytest.mark.parametrize(
    ("stream", "error"),
    [
        (lambda: blocks(b"x" * 600, b"y" * 600), PayloadTooLarge),
        (lambda: blocks(), InvalidInput),
        (lambda: blocks(b"", b""), InvalidInput),
        (lambda: blocks(b"x" * 100, b"y", fail_after=1), ConnectionResetError),
    ],
    ids=["over-limit", "no-blocks", "empty-blocks", "stream-fails"],
)
def test_spool_failures_leave_no_temp_file(tmp_path: Path, stream: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        run_spool(tmp_path, stream(), limit=1000)
    assert list(tmp_path.glob(f"{SPOOL_PREFIX}*")) == []
