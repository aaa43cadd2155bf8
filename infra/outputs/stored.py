"""Line-numbered Read and Grep over one stored output — the one implementation behind both the REST
routes and the read-grep sub-agent's tools, so what an agent sees over REST is what the sub-agent sees.
"""

from __future__ import annotations

from typing import Any

from extraction.documents.grep import GrepResult, grep_lines
from extraction.documents.line_matchers import LineMatcher
from extraction.documents.lines import (
    DEFAULT_MAX_LINE_CHARS,
    LineIndex,
    ReadResult,
    build_line_index,
    index_blob,
    read_lines,
)
from extraction.errors import NotFound
from infra.blobstore import BlobStore
from infra.outputs.content import content_reader
from infra.outputs.grep_engine import compile_matcher
from infra.outputs.views import with_header
from infra.settings import Settings
from infra.stores.records import OutputRecord

DEFAULT_READ_LIMIT = 2000
DEFAULT_MAX_MATCHES = 100


def grep_time_budget(settings: Settings) -> float | None:
    """The deployment's time budget for one grep (`TOOLOUT_GREP_TIME_BUDGET_SECONDS`; 0 = none)."""
    return settings.grep_time_budget_seconds or None


class StoredOutput:
    """A stored output opened for reading by line; the line index is loaded once (or built on first use).

    An output kept inline in its record is read from there (`infra.outputs.content`), its line index built in memory.
    Every grep is bounded by `grep_time_budget` seconds (None: unbounded): past it, the matches so far and
    where it stopped.
    """

    def __init__(
        self,
        blobs: BlobStore,
        record: OutputRecord,
        *,
        block_size: int = 8 << 20,
        grep_time_budget: float | None = None,
    ) -> None:
        self._blobs = blobs
        self._grep_budget = grep_time_budget
        self._reader = content_reader(blobs, record)
        self.record = record
        self._block = block_size
        self._index: LineIndex | None = None

    def line_index(self) -> LineIndex:
        if self._index is None:
            if self.record.inline is not None:
                self._index = build_line_index([self.record.inline])
            else:
                self._index = self._load_index() or self._build_index()
        return self._index

    def _load_index(self) -> LineIndex | None:
        key = self.record.lines_key
        if not key or not self._blobs.exists(key):
            return None
        return LineIndex.model_validate_json(self._blobs.get_bytes(key))

    def _build_index(self) -> LineIndex:
        """Outputs stored before line indexes existed get one on first use, kept for next time."""
        index = index_blob(self._blobs, self.record.blob_key, block_size=self._block)
        if self.record.lines_key:
            self._blobs.put_bytes(self.record.lines_key, index.model_dump_json().encode())
        return index

    def read(
        self, *, offset: int = 1, limit: int = DEFAULT_READ_LIMIT, max_line_chars: int = DEFAULT_MAX_LINE_CHARS
    ) -> ReadResult:
        return read_lines(
            self._reader,
            self.record.blob_key,
            self.line_index(),
            offset=offset,
            limit=limit,
            max_line_chars=max_line_chars,
        )

    def grep(
        self,
        pattern: str,
        *,
        regex: bool = False,
        ignore_case: bool = False,
        before: int = 0,
        after: int = 0,
        max_matches: int = DEFAULT_MAX_MATCHES,
    ) -> GrepResult:
        matcher = compile_matcher(pattern, regex=regex, ignore_case=ignore_case)
        return self.grep_matcher(matcher, before=before, after=after, max_matches=max_matches)

    def grep_matcher(
        self,
        matcher: LineMatcher,
        *,
        before: int = 0,
        after: int = 0,
        max_matches: int = DEFAULT_MAX_MATCHES,
        max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    ) -> GrepResult:
        """Grep with a matcher already built (buffer_ops compiles one pattern for many buffers)."""
        return grep_lines(
            self._reader,
            self.record.blob_key,
            matcher,
            before=before,
            after=after,
            max_matches=max_matches,
            max_line_chars=max_line_chars,
            block_size=self._block,
            index=self.line_index(),
            time_budget=self._grep_budget,
        )


class PinnedTools:
    """The sub-agent's Read and Grep, pinned to one handle: any other filename is a tool error, never access."""

    def __init__(self, output: StoredOutput) -> None:
        self._output = output

    def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        handle = str(arguments.get("handle", ""))
        if handle != self._output.record.handle:
            raise NotFound(f"no such file {handle!r}: the only file you can access is {self._output.record.handle!r}")
        options = {k: v for k, v in arguments.items() if k != "handle" and v is not None}
        record = self._output.record
        if name == "Read":
            return with_header(record, self._output.read(**_only(options, {"offset", "limit"})).render())
        if name == "Grep":
            found = self._output.grep(
                **_only(options, {"pattern", "regex", "ignore_case", "before", "after", "max_matches"})
            )
            return with_header(record, found.render())
        raise NotFound(f"unknown tool {name!r}: only Read and Grep are available")


def _only(options: dict[str, Any], allowed: set[str]) -> dict[str, Any]:
    unknown = set(options) - allowed
    if unknown:
        from extraction.errors import InvalidInput

        raise InvalidInput(f"unknown argument(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    return options
