"""A few consecutive lines of a stored output and the bytes they span, read by byte range through the line index.

The verifier needs the cited lines and a few around them, never the whole output: the read starts at
the indexed line nearest before the window and stops once the window's last line ends, or at a byte
bound (a single line of a gigabyte is not read to check one quote in it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extraction.documents.lines import NL, LineIndex, decode
from extraction.protocols import BlobReader

MAX_WINDOW_BYTES = 4 << 20
"""The most one check reads: past it, the lines left are reported as unreadable, never guessed."""
_FIRST_READ = 64 << 10


@dataclass(frozen=True)
class Window:
    """Lines `first_line` … of the output, `starts[i]` the byte offset of line `first_line + i`, `end` past the last."""

    first_line: int
    lines: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    end: int = 0

    @property
    def last_line(self) -> int:
        return self.first_line + len(self.lines) - 1

    def holds(self, start: int, end: int) -> bool:
        return self.first_line <= start and end <= self.last_line

    def text(self, start: int, end: int) -> str:
        """Lines `start` … `end` joined by newlines (the window must hold them)."""
        return "\n".join(self.lines[start - self.first_line : end - self.first_line + 1])

    def byte_span(self, start: int, end: int) -> tuple[int, int]:
        """Where lines `start` … `end` begin and end (past the last one's newline)."""
        after = end - self.first_line + 1
        return self.starts[start - self.first_line], self.starts[after] if after < len(self.starts) else self.end


def read_window(
    reader: BlobReader, key: str, index: LineIndex, first: int, last: int, *, max_bytes: int = MAX_WINDOW_BYTES
) -> Window:
    """Lines `first` … `last` (clamped to the output), as far as `max_bytes` of reading reaches."""
    first, last = max(1, first), min(index.lines, last)
    if first > last:
        return Window(first)
    offset, skip = index.locate(first)
    stop = min(index.size, offset + max_bytes)
    data = _read_enough(reader, key, offset, stop, skip + last - first + 1)
    return _cut(data, offset, first, skip, last - first + 1, eof=offset + len(data) >= index.size)


def _read_enough(reader: BlobReader, key: str, start: int, stop: int, newlines: int) -> bytes:
    """Bytes from `start` until they hold `newlines` newlines or reach `stop`."""
    buffer, size, position = bytearray(), _FIRST_READ, start
    while position < stop and buffer.count(NL) < newlines:
        block = reader.read_range(key, position, min(stop, position + size))
        if not block:
            break
        buffer += block
        position += len(block)
        size *= 2
    return bytes(buffer)


def _cut(data: bytes, offset: int, first: int, skip: int, want: int, *, eof: bool) -> Window:
    position = 0
    for _ in range(skip):
        position = data.find(NL, position) + 1
        if position == 0:
            return Window(first)
    window = Window(first)
    while len(window.lines) < want and position < len(data):
        newline = data.find(NL, position)
        if newline == -1 and not eof:
            break  # the line runs past the byte bound: not read, not guessed
        stop = len(data) if newline == -1 else newline
        window.starts.append(offset + position)
        window.lines.append(decode(data[position:stop].removesuffix(b"\r")))
        position = stop + 1
    return Window(first, window.lines, window.starts, offset + min(position, len(data)))
