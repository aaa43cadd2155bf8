"""The stored output's lines as the verifier reads them: by byte range, through the output's line index.

Nothing here loads an output whole: a line number is found by counting newlines from the nearest
indexed line, and a citation's lines (with the few around them that re-anchoring may use) are one
ranged read (`extraction.evidence.window`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from extraction.documents.lines import NL, LineIndex
from extraction.evidence.citations import Citation
from extraction.evidence.model import EvidenceItem, UnreadRange
from extraction.evidence.verify import verify_all
from extraction.evidence.window import Window, read_window
from extraction.strategies.coverage import FailedRange
from infra.blobstore import BlobStore
from infra.outputs.content import content_reader
from infra.outputs.stored import StoredOutput
from infra.stores.records import OutputRecord


class OutputLines:
    """One output opened for line lookups and quote checks (its line index loaded once)."""

    def __init__(self, blobs: BlobStore, record: OutputRecord, *, block_size: int = 8 << 20) -> None:
        self._reader = content_reader(blobs, record)
        self._key = record.blob_key
        self._stored = StoredOutput(blobs, record, block_size=block_size)

    @property
    def index(self) -> LineIndex:
        return self._stored.line_index()

    def line_of(self, position: int) -> int:
        """The number of the line holding byte `position` (the last line for a position at the end)."""
        index = self.index
        if index.lines == 0:
            return 1
        clamped = min(max(0, position), max(0, index.size - 1))
        return min(index.lines, index.line_at(clamped, self._newlines))

    def lines_of(self, start: int, end: int) -> tuple[int, int]:
        """The lines bytes [start, end) touch."""
        return self.line_of(start), self.line_of(max(start, end - 1))

    def byte_range(self, first: int, last: int) -> tuple[int | None, int | None]:
        """Where lines `first` … `last` start and end, read at their two edges only (None when out of reach)."""
        head, tail = self.window(first, first), self.window(last, last)
        if not head.lines or not tail.lines:
            return None, None
        return head.starts[0], tail.end

    def window(self, first: int, last: int) -> Window:
        return read_window(self._reader, self._key, self.index, first, last)

    def verify(self, citations: Iterable[Citation]) -> list[EvidenceItem]:
        """Each citation checked against the lines it names."""
        return verify_all(citations, self.window, self.index.lines)

    def unread(self, failed: Sequence[FailedRange]) -> list[UnreadRange]:
        """The parts a partial answer did not read, as lines and bytes."""
        return [
            UnreadRange(
                start_line=self.line_of(part.start),
                end_line=self.lines_of(part.start, part.end)[1],
                start_byte=part.start,
                end_byte=part.end,
                reason=part.reason,
            )
            for part in failed
        ]

    def _newlines(self, start: int, end: int) -> int:
        return self._reader.read_range(self._key, start, end).count(NL)
