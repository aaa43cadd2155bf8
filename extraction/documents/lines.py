"""Line-numbered Read over a stored output, driven by a sparse line index.

A stored output can be a gigabyte; an agent asks for "lines 120000-122000". The `LineIndex`
records where every K-th line starts, so a read seeks to the nearest sampled line and reads
forward only the bytes it needs (in bounded, growing blocks) — never a scan from the top.

What a line is (shared with `extraction.documents.grep`): the bytes between two `\\n`; a trailing `\\n`
does not open an empty last line; one trailing `\\r` is dropped (CRLF files); bytes are
decoded as UTF-8 with `errors="replace"`. An empty blob has 0 lines.

Read output follows Claude Code's Read tool: ``f"{n:>6}\\t{line}"`` per line joined by `\\n`;
lines longer than `max_line_chars` end in ``… [line clipped: N more chars]``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator

from pydantic import BaseModel, Field

from extraction.errors import InvalidInput
from extraction.protocols import BlobReader

NL = b"\n"
CR = 0x0D
DEFAULT_EVERY = 1024
DEFAULT_LIMIT = 2000
DEFAULT_MAX_LINE_CHARS = 2000
_CONTINUATION = bytes(range(0x80, 0xC0))
_FIRST_READ = 64 << 10
_MAX_READ = 1 << 20


def nth_newline(data: bytes, n: int, start: int = 0, end: int | None = None, *, hint: float = 64.0) -> int:
    """Index of the `n`-th (1-based) newline in `data[start:end]`, or -1 when there are fewer.

    Why not a `find` loop: that is one Python step per line. Here `count` (a C loop) is run
    over a window guessed from `hint` (expected bytes per line), the window is grown when it
    holds too few newlines, and the few surplus ones are walked back with `rfind` — about one
    pass over the bytes between `start` and the answer.
    """
    end = len(data) if end is None else end
    lo, need = start, n
    while True:
        hi = min(end, lo + int(hint * need * 1.05) + 64)
        have = data.count(NL, lo, hi)
        if have >= need:
            break
        if hi >= end:
            return -1
        lo, need = hi, need - have
    lo, hi, need, have = _narrow(data, lo, hi, need, have)
    pos = hi
    for _ in range(have - need + 1):
        pos = data.rfind(NL, lo, pos)
    return pos


def _narrow(data: bytes, lo: int, hi: int, need: int, have: int) -> tuple[int, int, int, int]:
    """Bisect [lo, hi) until at most 64 surplus newlines remain, so the `rfind` walk stays short."""
    while have - need > 64:
        mid = (lo + hi) // 2
        left = data.count(NL, lo, mid)
        if left >= need:
            hi, have = mid, left
        else:
            lo, need, have = mid, need - left, have - left
    return lo, hi, need, have


class LineIndex(BaseModel):
    """Byte offset of every `every`-th line start (line 1, every+1, 2*every+1, …), plus totals.

    Compact on purpose (stored as JSON next to the blob): ~10 000 ints for 1 GB of 100-byte lines.
    """

    every: int = Field(DEFAULT_EVERY, ge=1)
    size: int = Field(0, ge=0)
    lines: int = Field(0, ge=0)
    offsets: list[int] = Field(default_factory=lambda: [0], min_length=1)  # offsets[i]: start of line i*every+1

    def locate(self, line: int) -> tuple[int, int]:
        """(byte offset of the nearest sampled line at or before `line`, lines left to skip)."""
        slot = min((line - 1) // self.every, len(self.offsets) - 1)
        return self.offsets[slot], line - 1 - slot * self.every

    def line_at(self, pos: int, newlines: Callable[[int, int], int]) -> int:
        """Number of the line holding byte `pos`, counting (with `newlines(a, b)`) only from the
        nearest sampled line — at most `every` lines of bytes instead of everything before `pos`.
        """
        slot = bisect_right(self.offsets, pos) - 1
        return slot * self.every + 1 + newlines(self.offsets[slot], pos)


class LineIndexBuilder:
    """Builds a `LineIndex` from blocks as they stream by (at ingest, or on first use)."""

    def __init__(self, every: int = DEFAULT_EVERY) -> None:
        if every < 1:
            raise InvalidInput("line index stride must be at least 1", every=every)
        self._every = every
        self._offsets = [0]
        self._since = 0  # newlines since the last sampled line start
        self._size = 0
        self._last = NL[0]
        self._hint = 64.0

    def feed(self, block: bytes) -> None:
        """Account for the next block of the blob (any size, any split point)."""
        pos = 0
        while (hit := nth_newline(block, self._every - self._since, pos, hint=self._hint)) >= 0:
            self._hint = max(1.0, (hit + 1 - pos) / (self._every - self._since))
            self._offsets.append(self._size + hit + 1)
            self._since, pos = 0, hit + 1
        self._since += block.count(NL, pos)
        self._size += len(block)
        if block:
            self._last = block[-1]

    def finish(self) -> LineIndex:
        """The index; a sample that would start at the very end (after a final newline) is dropped."""
        offsets = list(self._offsets)
        if len(offsets) > 1 and offsets[-1] == self._size:
            offsets.pop()
        newlines = (len(self._offsets) - 1) * self._every + self._since
        lines = newlines + (1 if self._size and self._last != NL[0] else 0)
        return LineIndex(every=self._every, size=self._size, lines=lines, offsets=offsets)


def build_line_index(blocks: Iterable[bytes], every: int = DEFAULT_EVERY) -> LineIndex:
    """Index an in-memory or streamed blob in one pass."""
    builder = LineIndexBuilder(every)
    for block in blocks:
        builder.feed(block)
    return builder.finish()


def index_blob(reader: BlobReader, key: str, *, every: int = DEFAULT_EVERY, block_size: int = 8 << 20) -> LineIndex:
    """Index a stored blob on first use, when ingest did not already build one."""
    return build_line_index(reader.iter_range(key, 0, None, block_size=block_size), every)


# --- rendering one line ---------------------------------------------------------------------


def head_cap(max_chars: int) -> int:
    """Bytes that surely hold `max_chars` + 1 characters (UTF-8 is at most 4 bytes a char)."""
    return 4 * max_chars + 4


def count_chars(data: bytes) -> int:
    """Characters in UTF-8 bytes without decoding them: every byte that is not a continuation byte."""
    return len(data.translate(None, _CONTINUATION))


def clip_text(text: str, extra_chars: int, max_chars: int, *, exact: bool = True) -> str:
    """`text` cut to `max_chars` with a marker saying how much was left out."""
    more = len(text) - max_chars + extra_chars
    if more <= 0:
        return text
    plus = "" if exact else "+"
    return f"{text[:max_chars]}… [line clipped: {more}{plus} more chars]"


def render_line(raw: bytes, max_chars: int) -> str:
    """One raw line (no `\\n`, maybe a trailing `\\r`) as display text, decoding only what is shown."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    cap = head_cap(max_chars)
    if len(raw) <= cap:
        return clip_text(decode(raw), 0, max_chars)
    return clip_text(decode(raw[:cap]), count_chars(raw[cap:]), max_chars)


def render_match(text: str, span: tuple[int, int] | None, max_chars: int) -> str:
    """A long match line cut to a `max_chars` window centred on the match."""
    if len(text) <= max_chars:
        return text
    s, e = span or (0, 0)
    pad = max(0, (max_chars - (e - s)) // 2)
    left = max(0, min(s - pad, len(text) - max_chars))
    right = len(text) - left - max_chars
    pre = f"[line clipped: {left} chars before] …" if left else ""
    post = f"… [line clipped: {right} more chars]" if right > 0 else ""
    return f"{pre}{text[left : left + max_chars]}{post}"


def decode(raw: bytes) -> str:
    """The one decoding rule for stored outputs: UTF-8, invalid bytes become U+FFFD."""
    return raw.decode("utf-8", "replace")


def numbered(n: int, text: str, mark: str = "") -> str:
    """Claude Code's Read layout: line number right-aligned in 6 columns, then a tab."""
    return f"{n:>6}{mark}\t{text}"


# --- Read -------------------------------------------------------------------------------------


class ReadResult(BaseModel):
    """A window of numbered lines. `last_line < first_line` means the window is empty.

    `text` holds only the numbered lines; `note` says what the agent should know beyond them
    (window past the end, more lines follow, lines were clipped); `render()` joins both.
    """

    text: str
    first_line: int
    last_line: int
    total_lines: int
    truncated: bool = False
    clipped_lines: int = 0
    note: str | None = None

    def render(self) -> str:
        """What a tool call returns to the agent."""
        return "\n\n".join(part for part in (self.text, self.note) if part)


class _Collector:
    """Cuts streamed bytes into at most `want` lines, keeping only the displayable head of each.

    The tail of a long line is counted (in characters), not kept, so a 1 GB single-line JSON
    costs a scan, not a gigabyte of memory. Once the last wanted line's head is full, reading
    stops even if that line goes on (its clipped count is then a lower bound).
    """

    def __init__(self, want: int, max_chars: int) -> None:
        self.want, self.max_chars, self.cap = want, max_chars, head_cap(max_chars)
        self.lines: list[str] = []
        self.clipped = 0
        self._head, self._extra, self._last, self._open = bytearray(), 0, 0, False

    def feed(self, block: bytes) -> bool:
        """Take one block; True once no more bytes are needed."""
        pos = 0
        while len(self.lines) < self.want:
            nl = block.find(NL, pos)
            self._add(block, pos, len(block) if nl < 0 else nl)
            if nl < 0:
                return len(self.lines) == self.want - 1 and len(self._head) >= self.cap
            self._close(exact=True)
            pos = nl + 1
        return True

    def finish(self, *, eof: bool) -> list[str]:
        """The collected lines, closing a line left open by the end of the data or an early stop."""
        if self._open and len(self.lines) < self.want:
            self._close(exact=eof)
        return self.lines

    def _add(self, block: bytes, start: int, end: int) -> None:
        if end <= start:
            self._open = True
            return
        room = max(0, min(end, start + self.cap - len(self._head)) - start)
        self._head += block[start : start + room]
        if start + room < end:
            self._extra += count_chars(block[start + room : end])
        self._last, self._open = block[end - 1], True

    def _close(self, *, exact: bool) -> None:
        head, extra = bytes(self._head), self._extra
        # A CR last seen ends a CRLF line; when reading stopped early it may still be one (the LF in the
        # next block), so it is never counted: the `N+` of an unfinished line must stay a lower bound.
        if self._last == CR:
            head, extra = (head, extra - 1) if extra else (head[:-1], extra)
        text = decode(head)
        self.clipped += len(text) + extra > self.max_chars
        self.lines.append(clip_text(text, extra, self.max_chars, exact=exact))
        self._head, self._extra, self._last, self._open = bytearray(), 0, 0, False


def read_lines(
    reader: BlobReader,
    key: str,
    index: LineIndex,
    *,
    offset: int = 1,
    limit: int = DEFAULT_LIMIT,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    max_block: int = _MAX_READ,
) -> ReadResult:
    """Lines `offset` … `offset + limit - 1` (1-based) of blob `key`, numbered like Claude Code's Read.

    Reads start at the indexed line nearest before `offset` and go forward in blocks of
    64 KiB doubling up to `max_block`, stopping as soon as the window is complete.
    """
    _check_read_args(offset, limit, max_line_chars, max_block)
    if offset > index.lines:
        return _past_end(offset, index)
    want = min(limit, index.lines - offset + 1)
    start, skip = index.locate(offset)
    blocks = _ranged_blocks(reader, key, start, index.size, max_block)
    collector = _Collector(want, max_line_chars)
    eof = _collect(collector, _skip_lines(blocks, skip))
    lines = collector.finish(eof=eof)
    text = "\n".join(numbered(offset + i, line) for i, line in enumerate(lines))
    return _window_result(text, offset, len(lines), index.lines, collector.clipped, max_line_chars)


def _check_read_args(offset: int, limit: int, max_line_chars: int, max_block: int) -> None:
    if offset < 1:
        raise InvalidInput(
            f"offset must be a line number of at least 1 (lines are numbered from 1), got {offset}", offset=offset
        )
    if limit < 1:
        raise InvalidInput(f"limit must be at least 1 line, got {limit}", limit=limit)
    if max_line_chars < 1:
        raise InvalidInput(f"max_line_chars must be at least 1, got {max_line_chars}", max_line_chars=max_line_chars)
    if max_block < 1:
        raise InvalidInput(f"max_block must be at least 1 byte, got {max_block}", max_block=max_block)


def _past_end(offset: int, index: LineIndex) -> ReadResult:
    note = (
        "The output is empty (0 lines)."
        if index.lines == 0
        else f"Offset {offset} is past the end: the output has {index.lines} lines (use offset 1-{index.lines})."
    )
    return ReadResult(text="", first_line=offset, last_line=offset - 1, total_lines=index.lines, note=note)


def _ranged_blocks(reader: BlobReader, key: str, start: int, end: int, max_block: int) -> Iterator[bytes]:
    """Ranged reads from `start`, growing from 64 KiB so short windows cost one small request."""
    size = min(_FIRST_READ, max_block)
    while start < end:
        data = reader.read_range(key, start, min(end, start + size))
        if not data:
            return
        yield data
        start += len(data)
        size = min(size * 2, max_block)


def _skip_lines(blocks: Iterator[bytes], skip: int) -> Iterator[bytes]:
    """The same stream, starting `skip` lines later (found with `count`, not a per-line loop)."""
    for block in blocks:
        hit = nth_newline(block, skip) if skip else -1
        if hit >= 0 or not skip:
            yield block[hit + 1 :] if skip else block
            yield from blocks
            return
        skip -= block.count(NL)


def _collect(collector: _Collector, blocks: Iterator[bytes]) -> bool:
    """Feed blocks until the collector is satisfied; True when the data ran out first."""
    return all(not collector.feed(block) for block in blocks)


def _window_result(text: str, first: int, count: int, total: int, clipped: int, max_chars: int) -> ReadResult:
    last = first + count - 1
    notes = []
    if last < total:
        notes.append(f"Showing lines {first}-{last} of {total}. Use offset={last + 1} to read more.")
    if clipped:
        notes.append(f"{clipped} line(s) longer than {max_chars} chars were clipped; grep for text inside them.")
    return ReadResult(
        text=text,
        first_line=first,
        last_line=last,
        total_lines=total,
        truncated=last < total,
        clipped_lines=clipped,
        note=" ".join(notes) or None,
    )
