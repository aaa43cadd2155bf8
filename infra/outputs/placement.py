"""Where a stored output goes in its session — a variable or a file, under a write mode — without losing a write.

The write modes of docs/spec/directives.md §Write modes over immutable versions (`infra.outputs.versions`):

* `replace`: the part becomes the new version; the variable keeps its `created_at`.
* `append`: a new version holding the current content, a newline when it does not end with one,
  then the part (`extraction.buffers.store.append_separator`); with no current version the part
  itself. The content type follows `extraction.buffers.store.appended_content_type` (JSON + JSON
  is text: two documents in a row are not one JSON value).
* `new`: a fresh name (`extraction.variables.names.fresh_name`: `foo`, `foo_2`, …) or file path
  (`extraction.directives.file_paths.fresh_file_path`: `a.md`, `a_2.md`, …).
* no name (`Target.key is None`): the default name `<tool>_<n>`, `n` counted per tool per session.

Every attempt ends with one compare-and-set of the alias (`RecordNames.bind_alias`): it binds only if
the alias still points where the attempt started from. A writer that loses a race (two appends to
one variable, two `new` writes wanting `foo_2`) throws its version away and tries again from what
won, so concurrent writes are serialised and none is lost. The version an alias leaves is retired,
not deleted: a job extracting from it keeps working, and the sweeper removes it later.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from extraction.directives.file_paths import fresh_file_path
from extraction.directives.specs import WriteMode
from extraction.errors import Conflict
from extraction.variables.names import default_name, fresh_name, tool_base_name
from infra.errors import BackendUnavailable, BlobNotFound
from infra.outputs.versions import Part
from infra.stores.records import OutputRecord, RecordStores, Space

log = logging.getLogger("toolout.placement")

MAX_ATTEMPTS = 50
"""Compare-and-set rounds before a write gives up with 409 (only under heavy contention on one name)."""

LAGGING_READ_DELAYS = (0.1, 0.3, 1.0)
"""Seconds to wait before reading a bound version's blob again when the store said it was missing.

S3-compatible servers may answer 404 for an object written moments ago (eventual read-after-write); a version
whose alias still points at it exists, so the store is behind, not the client wrong."""


@dataclass(frozen=True)
class Target:
    """Where an output goes: `space`, the name or (expanded, validated) path `key`, the write mode.

    `key=None` asks for the default name `<tool>_<n>` (variables only).
    """

    space: Space = Space.VARIABLE
    key: str | None = None
    mode: WriteMode = WriteMode.REPLACE


DEFAULT_TARGET = Target()


@dataclass(frozen=True)
class _Attempt:
    key: str
    expected: str | None
    current: OutputRecord | None


def place(records: RecordStores, part: Part, target: Target) -> OutputRecord:
    """Write `part` to `target`; returns the version now bound there (with its `name` or `path` set)."""
    placed: OutputRecord | None = None
    try:
        for _ in range(MAX_ATTEMPTS):
            placed = _try(records, part, target)
            if placed is not None:
                return placed
        raise Conflict(
            f"too many concurrent writes to {target.space.value} {target.key!r}; try again",
            space=target.space.value,
            key=target.key,
        )
    finally:
        _drop_unused_part(records, part, placed)


def _try(records: RecordStores, part: Part, target: Target) -> OutputRecord | None:
    attempt = _start(records, part, target)
    current = attempt.current
    appending = target.mode is WriteMode.APPEND and current is not None
    version = _appended(records, part, target, attempt) if appending else part.version()
    if version is None:
        return None
    version = version.model_copy(update=_placement_fields(target.space, attempt.key, current, version))
    records.outputs.put_output(version)
    try:
        swap = records.names.bind_alias(
            version.session_id, target.space, attempt.key, version.handle, expected=attempt.expected
        )
    except BaseException:
        _drop(records, part, version)
        raise
    if not swap.bound:
        _drop(records, part, version)
        return None
    if current is not None and current.handle != version.handle:
        records.retention.retire_output(current, part.writer.options.clock())
    return version


def _appended(records: RecordStores, part: Part, target: Target, attempt: _Attempt) -> OutputRecord | None:
    """The current version's content joined with the part's; None when the alias moved meanwhile (retry from
    what won).

    Its blob missing while the alias still points at it means the store lags behind its own write: read again
    after `LAGGING_READ_DELAYS`, then answer 503 (the client may retry), never 404 for a variable that exists.
    """
    current, delays = attempt.current, iter(LAGGING_READ_DELAYS)
    assert current is not None
    while True:
        try:
            return part.writer.appended(current, part)
        except BlobNotFound:
            if records.names.alias(current.session_id, target.space, attempt.key) != attempt.expected:
                return None
            delay = next(delays, None)
            if delay is None:
                raise _lagging_store(current) from None
        log.warning("the blob of %s is not readable yet; reading it again in %.1f s", current.handle, delay)
        time.sleep(delay)


def _lagging_store(current: OutputRecord) -> BackendUnavailable:
    waited = sum(LAGGING_READ_DELAYS)
    return BackendUnavailable(
        f"the blob store did not show the content of {current.handle} within {waited:.1f} s of a read finding it "
        "missing; try again",
        handle=current.handle,
    )


def _placement_fields(space: Space, key: str, current: OutputRecord | None, version: OutputRecord) -> dict[str, object]:
    fields: dict[str, object] = {"name": key} if space is Space.VARIABLE else {"path": key}
    fields["created_at"] = current.created_at if current is not None else version.updated_at or version.created_at
    return fields


def _start(records: RecordStores, part: Part, target: Target) -> _Attempt:
    """Which key this attempt writes, and what it expects the alias to hold now."""
    session = part.writer.session
    if target.key is None:
        return _Attempt(_default_name(records, session.id, part.meta.tool_name), None, None)
    if target.mode is WriteMode.NEW:
        existing = records.names.aliases(session.id, target.space)
        fresh = fresh_name if target.space is Space.VARIABLE else fresh_file_path
        return _Attempt(fresh(target.key, existing), None, None)
    handle = records.names.alias(session.id, target.space, target.key)
    current = records.outputs.find_output(handle, session.tenant) if handle else None
    return _Attempt(target.key, handle, current)


def _default_name(records: RecordStores, session_id: str, tool: str) -> str:
    """The next `<tool>_<n>` not already taken (an explicit name may have taken one)."""
    taken = records.names.aliases(session_id, Space.VARIABLE)
    while (name := default_name(tool, records.names.next_count(session_id, tool_base_name(tool)))) in taken:
        continue
    return name


def _drop(records: RecordStores, part: Part, version: OutputRecord) -> None:
    """A version that lost its compare-and-set: its record goes; its blobs too, unless they are the part's."""
    records.outputs.delete_output(version)
    if part.materialised is None or version.handle != part.materialised.handle:
        part.writer.discard(version)


def _drop_unused_part(records: RecordStores, part: Part, placed: OutputRecord | None) -> None:
    """The part was written as a version but an append placed a combined one instead: remove it."""
    version = part.materialised
    if version is None or (placed is not None and placed.handle == version.handle):
        return
    records.outputs.delete_output(version)
    part.writer.discard(version)
