"""One stored output opened as tables: loaded once per content, the Parquet kept next to its blob.

The loaded form lives in the blob store under `<blob_key>.duckdb/` (a manifest naming the
content's sha256 and the tables, and one Parquet file per table), where every worker can reach it
and whence it is deleted with the output (`query_prefix`, used by `delete_stored_output`; a
session's prefix covers it too). A worker opening an output finds the manifest and downloads the
Parquet files (a fraction of the raw bytes), or else downloads the raw content to a temp file
block by block, loads it (`loading.load_tables`) and uploads what it made. Every file lives
in a per-job temp directory removed on `close`.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from extraction.documents.structured import StructuredKind
from infra.blobstore import BlobStore
from infra.content import iter_content
from infra.outputs import loaded_form_prefix
from infra.query.engine import EngineLimits, LoadFailed
from infra.query.loading import load_tables
from infra.query.sandbox import Rows, Sandbox, TableFile
from infra.records import OutputRecord

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class TableEntry(BaseModel):
    name: str
    file: str
    rows: int
    bytes: int = 0


class Manifest(BaseModel):
    version: int = FORMAT_VERSION
    sha256: str
    kind: str
    tables: list[TableEntry]


class QueryTables(Protocol):
    """What the query sub-agent's tools need from an output opened as tables."""

    def table_names(self) -> list[str]: ...

    def row_count(self, table: str) -> int: ...

    def columns(self, table: str) -> list[tuple[str, str]]: ...

    def sample(self, table: str, n: int) -> Rows: ...

    def query(self, sql: str, max_rows: int) -> Rows: ...


@dataclass
class Opened:
    """An output's tables on this worker: the sandbox, and how they got here (for the job and the bench)."""

    manifest: Manifest
    sandbox: Sandbox
    reused: bool
    """True when the loaded form came from the blob store (no load ran)."""
    bytes_read: int
    work_dir: Path = field(repr=False)

    def table_names(self) -> list[str]:
        return [t.name for t in self.manifest.tables]

    def row_count(self, table: str) -> int:
        return next(t.rows for t in self.manifest.tables if t.name == table)

    def columns(self, table: str) -> list[tuple[str, str]]:
        return self.sandbox.columns(table)

    def sample(self, table: str, n: int) -> Rows:
        return self.sandbox.sample(table, n)

    def query(self, sql: str, max_rows: int) -> Rows:
        return self.sandbox.query(sql, max_rows)

    def close(self) -> None:
        self.sandbox.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)


def query_prefix(record: OutputRecord) -> str:
    """Where an output's loaded form lives: next to its blob (deleted with it by `infra.outputs`)."""
    return loaded_form_prefix(record)


def open_tables(
    blobs: BlobStore, record: OutputRecord, kind: StructuredKind, limits: EngineLimits, *, temp_root: str | None = None
) -> Opened:
    """The output's tables in a sandbox; loaded now (and kept in the blob store) unless already kept."""
    work = Path(tempfile.mkdtemp(prefix="toolout-query-", dir=temp_root))
    try:
        manifest, reused, read = _cached(blobs, record, work) or _load(blobs, record, kind, limits, work)
        files = [TableFile(t.name, work / t.file, t.rows) for t in manifest.tables]
        return Opened(manifest, Sandbox(files, limits, work / "spill"), reused, read, work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _cached(blobs: BlobStore, record: OutputRecord, work: Path) -> tuple[Manifest, bool, int] | None:
    key = query_prefix(record) + MANIFEST
    if record.inline is not None or not blobs.exists(key):
        return None
    manifest = Manifest.model_validate_json(blobs.get_bytes(key))
    if manifest.sha256 != record.stats.sha256 or manifest.version != FORMAT_VERSION:
        return None
    read = sum(_download(blobs, query_prefix(record) + t.file, work / t.file) for t in manifest.tables)
    return manifest, True, read


def _load(
    blobs: BlobStore, record: OutputRecord, kind: StructuredKind, limits: EngineLimits, work: Path
) -> tuple[Manifest, bool, int]:
    raw = work / "content"
    with raw.open("wb") as f:
        read = sum(f.write(block) for block in iter_content(blobs, record))
    tables = load_tables(raw, kind, work, limits)
    raw.unlink()
    if not tables:
        raise LoadFailed("the output loads as no table")
    entries = [TableEntry(name=t.name, file=t.file, rows=t.rows, bytes=(work / t.file).stat().st_size) for t in tables]
    manifest = Manifest(sha256=record.stats.sha256, kind=kind.value, tables=entries)
    if record.inline is None:
        _keep(blobs, record, manifest, work)
    return manifest, False, read


def _keep(blobs: BlobStore, record: OutputRecord, manifest: Manifest, work: Path) -> None:
    """Upload the Parquet files, then the manifest (a reader that finds the manifest finds every file)."""
    for table in manifest.tables:
        copy = work / f"{table.file}.upload"
        shutil.copyfile(work / table.file, copy)  # put_file may move its file; the sandbox still reads ours
        blobs.put_file(query_prefix(record) + table.file, copy)
        copy.unlink(missing_ok=True)
    blobs.put_bytes(query_prefix(record) + MANIFEST, manifest.model_dump_json().encode())


def _download(blobs: BlobStore, key: str, path: Path) -> int:
    with path.open("wb") as f:
        return sum(f.write(block) for block in blobs.iter_range(key))
