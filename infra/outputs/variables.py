"""A session's variables as the pure resolver sees them: the `VariableSource` over stored outputs.

`extraction.variables.resolve.resolve` / `interpolate` and `extraction.variables.stream.VariableStream` run
unchanged against `SessionVariables`; this module only answers "what is `$name.path`" for one stored
version, reading no more of it than the answer needs:

* JSON (`infra.outputs.content` decides what may be JSON; appended content, `parts` > 1, is text): the path
  is walked while the document streams (`infra.outputs.json_stream`), the value built up to the limit. With a
  JSON content type the walk stops at the value; content only sniffed as JSON (`text/plain` starting
  with `{` or `[`) is parsed to its end, since only a complete parse proves it is JSON.
* Text: the whole text, refused up front when its character count is over the limit; any path into
  it is `NotJSON`. JSON-looking content that does not parse is text.

Names are read once per `SessionVariables` (one request sees one snapshot of the session's names);
records are fetched once per name. Every lookup blocks on Redis and the blob store: call it from a
worker thread (FastAPI's threadpool for sync routes, `run_in_threadpool` for streams).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from extraction.errors import NotFound
from extraction.variables.errors import not_json, unknown_variable, value_too_large
from extraction.variables.refs import Ref, format_ref
from infra.blobstore import BlobStore
from infra.outputs.content import HEAD_BYTES, iter_content, json_candidate, json_declared, read_content
from infra.outputs.json_stream import NotJSONDocument, lookup_json
from infra.stores.records import OutputRecord, RecordStores, SessionRecord, Space


class VariableNotFound(NotFound):
    """GET of a name the session does not have: a 404 (a `$name` in a tool call is a 422 `UnknownVariable`)."""

    code = "unknown_variable"


def variable_not_found(name: str, available: Sequence[str]) -> VariableNotFound:
    """The same words and `details` (`available`, `available_count`) as the resolver's error, as a 404."""
    err = unknown_variable(name, available)
    return VariableNotFound(err.message, **err.details)


class SessionVariables:
    """`VariableSource` for one session (tenant-checked by whoever opened the session)."""

    def __init__(self, records: RecordStores, blobs: BlobStore, session: SessionRecord, *, block_size: int) -> None:
        self.records, self.blobs, self.session, self.block_size = records, blobs, session, block_size
        self._handles: dict[str, str] | None = None
        self._records: dict[str, OutputRecord | None] = {}

    @property
    def handles(self) -> dict[str, str]:
        if self._handles is None:
            self._handles = self.records.names.aliases(self.session.id, Space.VARIABLE)
        return self._handles

    def names(self) -> Sequence[str]:
        return list(self.handles)

    def handle(self, name: str) -> str | None:
        return self.handles.get(name)

    def record(self, name: str) -> OutputRecord | None:
        """The current version of `name`, or None (a name whose version vanished counts as unknown)."""
        if name not in self._records:
            handle = self.handles.get(name)
            self._records[name] = self.records.outputs.find_output(handle, self.session.tenant) if handle else None
        return self._records[name]

    def existing(self, name: str) -> OutputRecord:
        """The current version of `name`; a 404 listing the session's names when there is none."""
        record = self.record(name)
        if record is None:
            raise variable_not_found(name, self.names())
        return record

    def all_records(self) -> list[OutputRecord]:
        """Every variable's current version, oldest first (one round trip)."""
        found = self.records.outputs.get_outputs(self.handles.values(), self.session.tenant)
        by_handle = {record.handle: record for record in found}
        current = [by_handle[h] for h in self.handles.values() if h in by_handle]
        return sorted(current, key=lambda record: (record.created_at, record.name or ""))

    def lookup(self, ref: Ref, *, max_chars: int | None = None) -> Any:
        record = self.record(ref.name)
        if record is None:
            raise unknown_variable(ref.name, self.names())
        return value_of(self.blobs, record, ref, max_chars=max_chars, block_size=self.block_size)


def value_of(blobs: BlobStore, record: OutputRecord, ref: Ref, *, max_chars: int | None, block_size: int) -> Any:
    """The value `ref` names inside the stored version `record` (rules in the module docstring)."""
    if _may_be_json(blobs, record):

        def blocks() -> Iterator[bytes]:
            return iter_content(blobs, record, block_size=block_size)

        complete = not json_declared(record.content_type)  # sniffed: the whole content must parse
        try:
            return lookup_json(blocks, ref, max_chars=max_chars, handle=record.handle, complete=complete)
        except NotJSONDocument:
            pass
    if ref.path:
        raise not_json(ref.name, format_ref(ref))
    return _text(blobs, record, ref, max_chars)


def _may_be_json(blobs: BlobStore, record: OutputRecord) -> bool:
    return record.parts == 1 and json_candidate(record.content_type, read_content(blobs, record, 0, HEAD_BYTES))


def _text(blobs: BlobStore, record: OutputRecord, ref: Ref, max_chars: int | None) -> str:
    chars = record.chars if record.chars is not None else record.stats.bytes
    if max_chars is not None and chars > max_chars:
        raise value_too_large(format_ref(ref), chars, max_chars, record.handle)
    return read_content(blobs, record, 0, record.stats.bytes).decode("utf-8", errors="replace")
