"""One stored output opened as tables: loaded once per content, the Parquet kept next to its blob.

The loaded form lives in the blob store under `<blob_key>.duckdb/` (a manifest naming the
content's sha256 and the tables, and one Parquet file per table), where every worker can reach it
and whence it is deleted with the output (`query_prefix`, used by `delete_stored_output`; a
session's prefix covers it too). Every file lives in a per-job temp directory removed on `close`.

Opening an output (`open_tables`, a question) takes the first of:

1. **reused** — its own manifest is there: download the Parquet files (a fraction of the raw bytes);
2. **waited** — somebody holds the content's load lock (`infra.query.loaded_forms`: the preload queued at
   upload time, or another question): wait for it, up to `wait_seconds`, then 1 again;
3. **copied** — an output with the same content (tenant, sha256) was kept as tables: download those;
4. **loaded** — the raw content as a temp file (a hard link to a local blob, else downloaded block by block;
   `infra.blobstore.files`), loaded (`loading.load_tables`).

After 3 or 4 the Parquet is uploaded under the output's prefix by a thread, while the question is
answered (`close` waits for it): the first answer never waits for the upload. `preload_tables` does
1, 3 or 4 ahead of any question, at once and under the lock, and skips content somebody is loading; it
logs how long each part took (fetch, DuckDB's load, keeping the tables). What is kept opens: a load's
child checks that its tables open as a sandbox would before it answers (`infra.query.child`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel

from extraction.documents.structured import StructuredKind
from infra.blobstore import BlobStore
from infra.blobstore.files import fetch_file, put_kept
from infra.errors import BlobNotFound
from infra.outputs.content import iter_content
from infra.outputs.storing import loaded_form_prefix
from infra.query.engine import EngineLimits, LoadFailed
from infra.query.loaded_forms import Lease, LoadedForms, MemoryLoadedForms
from infra.query.process import ChildSandbox, load_in_child
from infra.query.sandbox import Rows, TableFile
from infra.stores.records import OutputRecord

log = logging.getLogger("toolout.query")

MANIFEST = "manifest.json"
FORMAT_VERSION = 3
"""2: table names unique ignoring case, with notes (a version-1 form may hold two tables of one name);
3: objects keyed by id as tables, CSV missing-value markers as NULL, NULL counts (older forms load again)."""
POLL_SECONDS = 0.05
"""How often a question waiting for a load looks again (one `exists` and one `SET NX`)."""

How = Literal["reused", "copied", "loaded"]
T = TypeVar("T")


class TableEntry(BaseModel):
    name: str
    file: str
    rows: int
    bytes: int = 0
    note: str = ""
    """How the table, its name or a column was made (the Schema shows it)."""
    nulls: dict[str, int] = {}
    """Each top-level column holding NULLs, with how many."""


class Manifest(BaseModel):
    version: int = FORMAT_VERSION
    sha256: str
    kind: str
    tables: list[TableEntry]


class QueryTables(Protocol):
    """What the query sub-agent's tools need from an output opened as tables."""

    def table_names(self) -> list[str]: ...

    def row_count(self, table: str) -> int: ...

    def note(self, table: str) -> str: ...

    def nulls(self, table: str) -> dict[str, int]: ...

    def columns(self, table: str) -> list[tuple[str, str]]: ...

    def sample(self, table: str, n: int) -> Rows: ...

    def query(self, sql: str, max_rows: int) -> Rows: ...


@dataclass
class Opened:
    """An output's tables on this worker: the sandbox, and how they got here (for the job and the bench)."""

    manifest: Manifest
    sandbox: ChildSandbox
    how: How
    """`reused` (this output's kept tables), `copied` (an identical output's) or `loaded` now."""
    bytes_read: int
    seconds: float
    """Opening took this long: waiting for a load, downloading, loading (not the upload after)."""
    work_dir: Path = field(repr=False)
    keeping: threading.Thread | None = field(default=None, repr=False)
    """The upload of what was copied or loaded, running while the question is answered."""

    @property
    def reused(self) -> bool:
        """True when no load ran here (the loaded form came from the blob store)."""
        return self.how != "loaded"

    def table_names(self) -> list[str]:
        return [t.name for t in self.manifest.tables]

    def row_count(self, table: str) -> int:
        return next(t.rows for t in self.manifest.tables if t.name == table)

    def note(self, table: str) -> str:
        return next(t.note for t in self.manifest.tables if t.name == table)

    def nulls(self, table: str) -> dict[str, int]:
        return next(t.nulls for t in self.manifest.tables if t.name == table)

    def columns(self, table: str) -> list[tuple[str, str]]:
        return self.sandbox.columns(table)

    def sample(self, table: str, n: int) -> Rows:
        return self.sandbox.sample(table, n)

    def query(self, sql: str, max_rows: int) -> Rows:
        return self.sandbox.query(sql, max_rows)

    def close(self) -> None:
        """Wait for the upload (it reads the work directory), then drop the sandbox and the files."""
        if self.keeping is not None:
            self.keeping.join()
        self.sandbox.close()
        shutil.rmtree(self.work_dir, ignore_errors=True)


@dataclass(frozen=True)
class Source:
    """One output to open, and where its content's loads are coordinated."""

    blobs: BlobStore
    record: OutputRecord
    forms: LoadedForms

    @property
    def prefix(self) -> str:
        return query_prefix(self.record)

    def try_hold(self) -> Lease | None:
        return self.forms.try_hold(self.record.tenant, self.record.stats.sha256)


Got = tuple[Manifest, How, int]
"""A loaded form in the work directory: its manifest, how it got there, the bytes read for it."""


def query_prefix(record: OutputRecord) -> str:
    """Where an output's loaded form lives: next to its blob (deleted with it by `infra.outputs.storing`)."""
    return loaded_form_prefix(record)


def open_tables(
    blobs: BlobStore,
    record: OutputRecord,
    kind: StructuredKind,
    limits: EngineLimits,
    *,
    temp_root: str | None = None,
    forms: LoadedForms | None = None,
    wait_seconds: float = 0.0,
) -> Opened:
    """The output's tables in a sandbox: kept, copied or loaded now (module docstring); what was not
    kept yet is uploaded while the caller answers. `forms` None: no other process is coordinated with."""
    started = time.perf_counter()
    source = Source(blobs, record, forms or MemoryLoadedForms())
    work = Path(tempfile.mkdtemp(prefix="toolout-query-", dir=temp_root))
    try:
        (manifest, how, read), lease = _obtain(source, kind, limits, work, wait_seconds)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    try:
        sandbox = _sandbox(manifest, limits, work)
    except BaseException:
        if lease is not None:
            lease.release()  # nothing will be kept: whoever waits for this content loads it (and fails) itself
        shutil.rmtree(work, ignore_errors=True)
        raise
    keeping = None if how == "reused" or record.inline is not None else _keep_later(source, manifest, work, lease)
    return Opened(manifest, sandbox, how, read, time.perf_counter() - started, work, _start(keeping))


def _sandbox(manifest: Manifest, limits: EngineLimits, work: Path) -> ChildSandbox:
    """The tables in a sandbox; `LoadFailed` when they cannot be opened, whatever the reason (a loaded
    form the document made unusable is for the fallback, not a failed job)."""
    try:
        files = [TableFile(t.name, work / t.file, t.rows) for t in manifest.tables]
        return ChildSandbox(files, limits, work / "spill")
    except LoadFailed:
        raise
    except Exception as exc:
        raise LoadFailed(f"the output's tables do not open ({type(exc).__name__})") from exc


def preload_tables(
    blobs: BlobStore,
    record: OutputRecord,
    kind: StructuredKind,
    limits: EngineLimits,
    forms: LoadedForms,
    *,
    temp_root: str | None = None,
) -> str:
    """Keep the output's tables in the blob store now, before any question: what was done (`kept already`,
    `busy` when somebody is loading this content, `copied`, `loaded`). Never waits for another load."""
    source = Source(blobs, record, forms)
    if record.inline is not None:
        return "inline"
    if _kept(source, source.prefix):
        return "kept already"
    lease = source.try_hold()
    if lease is None:
        return "busy"
    work = Path(tempfile.mkdtemp(prefix="toolout-preload-", dir=temp_root))
    try:
        if _kept(source, source.prefix):  # finished between the look and the lock
            return "kept already"
        clock = _Clock()
        manifest, how, _ = clock.run("load", lambda: _copy_or_load(source, kind, limits, work))
        clock.run("keep", lambda: _keep(source, manifest, work))
        log.info("output %s: preload %s in %s", record.handle, how, clock)
        return how
    finally:
        lease.release()
        shutil.rmtree(work, ignore_errors=True)


def _obtain(
    source: Source, kind: StructuredKind, limits: EngineLimits, work: Path, wait_seconds: float
) -> tuple[Got, Lease | None]:
    """The loaded form in `work`, and the lock held for it (None: reused, inline, or waited too long)."""
    if source.record.inline is not None:
        return _load(source, kind, limits, work), None
    deadline = time.monotonic() + wait_seconds
    while True:
        found = _cached(source, source.prefix, work)
        if found is not None:
            return (found[0], "reused", found[1]), None
        lease = source.try_hold()
        if lease is not None or time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)  # somebody is loading this content: their tables, not a second load
    try:
        return _copy_or_load(source, kind, limits, work), lease
    except BaseException:
        if lease is not None:
            lease.release()
        raise


def _copy_or_load(source: Source, kind: StructuredKind, limits: EngineLimits, work: Path) -> Got:
    """An identical output's kept tables, else a load."""
    tenant, sha256 = source.record.tenant, source.record.stats.sha256
    other = source.forms.kept_at(tenant, sha256)
    copied = _cached(source, other, work) if other and other != source.prefix else None
    if copied is not None:
        return copied[0], "copied", copied[1]
    if other and other != source.prefix:
        source.forms.forget(tenant, sha256, other)  # its tables are gone: nobody should look there again
    return _load(source, kind, limits, work)


def _kept(source: Source, prefix: str) -> Manifest | None:
    """The manifest under `prefix`, when it is this content's in this format."""
    key = prefix + MANIFEST
    if not source.blobs.exists(key):
        return None
    manifest = Manifest.model_validate_json(source.blobs.get_bytes(key))
    if manifest.sha256 != source.record.stats.sha256 or manifest.version != FORMAT_VERSION:
        return None
    return manifest


def _cached(source: Source, prefix: str, work: Path) -> tuple[Manifest, int] | None:
    """The tables kept under `prefix`, downloaded into `work`, and the bytes read (None: not kept there)."""
    manifest = _kept(source, prefix)
    if manifest is None:
        return None
    try:
        read = sum(fetch_file(source.blobs, prefix + t.file, work / t.file) for t in manifest.tables)
    except BlobNotFound:
        return None  # deleted under us (the identical output went away): load instead
    return manifest, read


class _Clock:
    """Seconds per part of a preload, for its log line (`fetch 0.41s, duckdb 6.20s, …`)."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    def run(self, part: str, work: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return work()
        finally:
            self.parts[part] = self.parts.get(part, 0.0) + time.perf_counter() - started

    def __str__(self) -> str:
        return f"{sum(self.parts.values()):.2f}s (" + ", ".join(f"{k} {v:.2f}s" for k, v in self.parts.items()) + ")"


def _fetch(source: Source, raw: Path) -> int:
    """The raw content as the file `raw`: linked or downloaded (`infra.blobstore.files`), or an inline one written."""
    if source.record.inline is None:
        return fetch_file(source.blobs, source.record.blob_key, raw)
    with raw.open("wb") as f:
        return sum(f.write(block) for block in iter_content(source.blobs, source.record))


def _load(source: Source, kind: StructuredKind, limits: EngineLimits, work: Path) -> Got:
    raw, clock = work / "content", _Clock()
    read = clock.run("fetch", lambda: _fetch(source, raw))
    tables = clock.run("duckdb", lambda: load_in_child(raw, kind, work, limits))
    log.info("output %s: %d bytes loaded as tables in %s", source.record.handle, read, clock)
    raw.unlink()
    if not tables:
        raise LoadFailed("the output loads as no table")
    entries = [
        TableEntry(
            name=t.name,
            file=t.file,
            rows=t.rows,
            bytes=(work / t.file).stat().st_size,
            note=t.note,
            nulls=dict(t.nulls),
        )
        for t in tables
    ]
    if len({t.name.lower() for t in tables}) != len(tables):
        raise LoadFailed("the output loads as tables of the same name")
    manifest = Manifest(sha256=source.record.stats.sha256, kind=kind.value, tables=entries)
    return manifest, "loaded", read


def _keep_later(source: Source, manifest: Manifest, work: Path, lease: Lease | None) -> threading.Thread:
    """A thread that uploads the tables, then frees the load lock (whoever waits finds them kept)."""

    def run() -> None:
        try:
            _keep(source, manifest, work)
        except Exception:  # the answer stands; the next question loads again
            log.warning("output %s: could not keep its tables", source.record.handle, exc_info=True)
        finally:
            if lease is not None:
                lease.release()

    return threading.Thread(target=run, name="toolout-keep-tables", daemon=True)


def _start(thread: threading.Thread | None) -> threading.Thread | None:
    if thread is not None:
        thread.start()
    return thread


def _keep(source: Source, manifest: Manifest, work: Path) -> None:
    """Upload the Parquet files, then the manifest (a reader that finds the manifest finds every file),
    then point the content's other outputs at them."""
    blobs, prefix = source.blobs, source.prefix
    for table in manifest.tables:
        put_kept(blobs, prefix + table.file, work / table.file)  # the sandbox still reads ours
    blobs.put_bytes(prefix + MANIFEST, manifest.model_dump_json().encode())
    source.forms.remember(source.record.tenant, manifest.sha256, prefix)
