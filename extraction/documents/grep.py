"""Streaming Grep over a stored output: numbered matching lines with grep-style context.

Output format (one line per entry, joined by `\\n`)::

    {n:>6}:\\t{line}     a matching line
    {n:>6}-\\t{line}     a context line (before/after)
    --                  between groups that are not adjacent, as `grep -n -C` prints

Long lines are clipped to `max_line_chars`: a match line keeps a window around the first match
(``[line clipped: N chars before] …window… [line clipped: M more chars]``), a context line keeps
its head (``head… [line clipped: M more chars]``). `matches` counts matching lines, not occurrences.

Why it is built around blocks, not lines: a Python loop per line is far slower than `grep -n`.
The blob streams through in large blocks; a matcher that offers `candidate_offsets` finds hits
in a whole block at once (C `bytes.find`, or RE2 in infra), and only the lines around a hit are
cut out, decoded and checked with `search(line)` — the definition of a match. Matchers without
the fast path get every line. What a line is (newlines, CRLF, decoding) is defined in
`extraction.documents.lines`.

A time budget (`time_budget` seconds on `clock`) bounds one grep: RE2 is linear, but a heavy pattern
over a multi-GB output still takes minutes. The clock is read between slices of about `SLICE` bytes,
so the overshoot is one slice's search; past the budget the matches so far come back with a note
that says where it stopped.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from operator import itemgetter

from pydantic import BaseModel

from extraction.documents.line_matchers import LineMatcher, every_line
from extraction.documents.lines import (
    DEFAULT_MAX_LINE_CHARS,
    NL,
    LineIndex,
    decode,
    numbered,
    render_line,
    render_match,
)
from extraction.errors import InvalidInput
from extraction.protocols import BlobReader

DEFAULT_BLOCK = 8 << 20
DEFAULT_LONG_LINE = 64 << 20
_NL = NL[0]
_FAR = 256 << 10  # past this distance a line number is cheaper to get from the index than by counting
SLICE = 1 << 20  # the clock is read between slices this size (a heavy RE2 pattern can spend the whole budget on one)
_pos = itemgetter(0)
Cursor = tuple[int, int | None]  # (line start in the buffer, its line number if known)


class GrepResult(BaseModel):
    """Matching lines with context. `text` holds only the grep lines; `note` sums up (or says
    "No matches …"); `render()` joins both for the agent. `truncated`: stopped at `max_matches`.
    """

    text: str
    matches: int
    lines_scanned: int
    truncated: bool = False
    note: str | None = None
    stopped_after_seconds: float | None = None
    """Set when the time budget ran out: the grep stopped there, `lines_scanned` lines were searched."""

    def render(self) -> str:
        return "\n\n".join(part for part in (self.text, self.note) if part)


def _line_end(buf: bytes, pos: int, end: int) -> int:
    nl = buf.find(NL, pos, end)
    return end if nl < 0 else nl


def _after(le: int, end: int, ln: int) -> tuple[int, int]:
    """Cursor past the line ending at `le`; a line cut off at `end` keeps its number (it goes on)."""
    return (le + 1, ln + 1) if le < end else (end, ln)


def _strip_cr(raw: bytes) -> bytes:
    return raw[:-1] if raw.endswith(b"\r") else raw


class _Numbering:
    """Line numbers from a `LineIndex`, so grep need not count the newlines of every block.

    `bytes.count` over every block costs as much as the search itself. With the index, a hit's
    number is counted from the nearest sampled line only. The last two blocks are held for
    that; older bytes are re-read (only when lines average more than block_size/every bytes).
    """

    def __init__(self, index: LineIndex, reader: BlobReader, key: str) -> None:
        self.index, self.reader, self.key = index, reader, key
        self.held: list[tuple[int, bytes]] = []

    def hold(self, start: int, block: bytes) -> None:
        self.held = [*self.held[-1:], (start, block)]

    def line_at(self, pos: int) -> int:
        return self.index.line_at(pos, self._newlines)

    def _newlines(self, a: int, b: int) -> int:
        first = self.held[0][0] if self.held else b
        n = self.reader.read_range(self.key, a, min(b, first)).count(NL) if a < first else 0
        for start, data in self.held:
            lo, hi = max(a, start), min(b, start + len(data))
            n += data.count(NL, lo - start, hi - start) if lo < hi else 0
        return n


class _GrepRun:
    """State of one grep across segments: output so far, context bookkeeping, stop condition."""

    def __init__(
        self,
        matcher: LineMatcher,
        before: int,
        after: int,
        max_matches: int,
        max_chars: int,
        numbering: _Numbering | None,
        budget: _Budget | None = None,
    ) -> None:
        self.matcher, self.before, self.after, self.numbering = matcher, before, after, numbering
        self.budget = budget
        self.timed_out_at: int | None = None  # the first line not searched, once the time budget ran out
        self.max_matches, self.max_chars = max_matches, max_chars
        self.out: list[str] = []
        self.matches = 0
        self.last_emitted = 0  # last line number written to `out`
        self.last_match = 0
        self.after_until = 0  # after-context runs through this line
        self.searching = True
        self.tail: list[tuple[int, str]] = []  # rendered last lines of earlier segments, for before-context
        fast = getattr(matcher, "candidate_offsets", None)
        self._hits = fast if callable(fast) else every_line
        self._base = 0  # blob offset of the buffer being scanned
        self._cut = False  # the buffer's last line is a window of a longer line

    @property
    def done(self) -> bool:
        return not self.searching and self.last_emitted >= self.after_until

    def out_of_time(self, line: Callable[[], int]) -> bool:
        """True (and stop searching, at `line()`) once the time budget is spent."""
        if self.timed_out_at is None and self.budget is not None and self.budget.spent():
            self.timed_out_at = line()
            self.searching = False
            self.after_until = self.last_emitted  # no after-context owed past the stop
        return self.timed_out_at is not None

    def scan(self, buf: bytes, start: int, end: int, ln: int | None, base: int, *, cut: bool = False) -> int | None:
        """Grep the whole lines in `buf[start:end]` (`buf[0]` is blob byte `base`), the first
        numbered `ln` (None: unknown, ask the index). `cut`: the last line goes on past `end`.
        Returns the number of the line at `end`, or None when nothing needs it (the index knows).
        """
        self._base, self._cut = base, cut
        cur: Cursor = (start, ln)
        count = cur
        if self.searching:
            for hit in self._hits(buf, start, end):
                cur, count, stop = self._hit(buf, start, end, hit, cur, count)
                if stop:
                    break
        cur = self._flush_after(buf, cur, end, sys.maxsize)
        known = max(cur, count, key=_pos)
        end_ln = self._line_of(buf, end, known) if self._needs_end_line() else self._counted(buf, end, known)
        # a window of a long line is no line of its own; `before` made the end line needed (never None)
        if self.searching and self.before and not cut and end_ln is not None:
            self._remember_tail(buf, start, end, end_ln)
        return end_ln

    def _needs_end_line(self) -> bool:
        return self.numbering is None or bool(self.before) or self.after_until > self.last_emitted

    def _line_of(self, buf: bytes, pos: int, known: Cursor) -> int:
        """Line number at `buf[pos]`: counted on from a known cursor, or looked up in the index."""
        counted = self._counted(buf, pos, known)
        if counted is not None:
            return counted
        if self.numbering is None:  # without an index every cursor carries its line number
            raise AssertionError("grep lost its line count without a line index")
        return self.numbering.line_at(self._base + pos)

    def _counted(self, buf: bytes, pos: int, known: Cursor) -> int | None:
        """The line number counted on from `known`, when that is cheap (near) or the only way (no index)."""
        at, n = known
        if n is not None and (self.numbering is None or pos - at <= _FAR):
            return n + buf.count(NL, at, pos)
        return None

    def _hit(
        self, buf: bytes, start: int, end: int, hit: int, cur: Cursor, count: Cursor
    ) -> tuple[Cursor, Cursor, bool]:
        """Check one candidate; emit it with context if it matches. Returns (cursor, count cursor, stop)."""
        ls = max(start, buf.rfind(NL, start, hit) + 1)
        if ls < count[0] or ls >= end:
            return cur, count, False
        hit_ln, le = self._line_of(buf, ls, count), _line_end(buf, ls, end)
        count = (ls, hit_ln)
        if hit_ln <= self.last_emitted:  # the rest of a split long line that was already shown
            return cur, count, False
        text = decode(_strip_cr(buf[ls:le]))
        if not self.matcher.search(text):
            return cur, count, False
        self._flush_after(buf, cur, end, hit_ln - 1)
        self._emit_before(buf, start, ls, hit_ln)
        self._emit(hit_ln, render_match(text, self._span(text), self.max_chars), ":")
        self.matches += 1
        self.last_match = hit_ln
        self.after_until = hit_ln + self.after
        self.searching = self.matches < self.max_matches
        cur = _after(le, end, hit_ln)
        return cur, cur, not self.searching

    def _span(self, text: str) -> tuple[int, int] | None:
        span = getattr(self.matcher, "span", None)
        return span(text) if callable(span) else None

    def _flush_after(self, buf: bytes, cur: Cursor, end: int, upto: int) -> Cursor:
        """Write pending after-context lines from the cursor, through `upto` at most."""
        pos, ln = cur
        if ln is None or self.after_until <= self.last_emitted:
            return cur
        while pos < end and ln <= min(self.after_until, upto):
            le = _line_end(buf, pos, end)
            if le == end and self._cut:  # shown once complete: its next window may still match
                break
            if ln > self.last_emitted:
                self._emit(ln, render_line(buf[pos:le], self.max_chars), "-")
            pos, ln = _after(le, end, ln)
        return pos, ln

    def _emit_before(self, buf: bytes, start: int, ls: int, hit_ln: int) -> None:
        """Write the before-context of a match at `hit_ln` (and `--` if a gap precedes it)."""
        first = max(1, hit_ln - self.before, self.last_emitted + 1)
        lines = []
        pos, n = ls, hit_ln
        while n > first and pos > start:
            ps = max(start, buf.rfind(NL, start, pos - 1) + 1)
            lines.append((n - 1, render_line(buf[ps : pos - 1], self.max_chars)))
            pos, n = ps, n - 1
        lines += [entry for entry in reversed(self.tail) if first <= entry[0] < n]
        lines.reverse()
        if (
            (self.before or self.after)
            and self.last_emitted
            and (lines[0][0] if lines else hit_ln) > self.last_emitted + 1
        ):
            self.out.append("--")
        for n, text in lines:
            self._emit(n, text, "-")

    def _emit(self, ln: int, text: str, mark: str) -> None:
        self.out.append(numbered(ln, text, mark))
        self.last_emitted = ln

    def _remember_tail(self, buf: bytes, start: int, end: int, end_ln: int) -> None:
        """Keep the last `before` unprinted lines (rendered) for a match early in the next segment."""
        complete = buf[end - 1] == _NL
        le, n = (end - 1, end_ln - 1) if complete else (end, end_ln)
        fresh: list[tuple[int, str]] = []
        while len(fresh) < self.before and n > self.last_emitted:
            ls = max(start, buf.rfind(NL, start, le) + 1)
            fresh.append((n, render_line(buf[ls:le], self.max_chars)))
            if ls == start:
                break
            le, n = ls - 1, n - 1
        fresh.reverse()
        oldest = fresh[0][0] if fresh else sys.maxsize
        kept = [e for e in self.tail if self.last_emitted < e[0] < oldest]
        self.tail = (kept + fresh)[-self.before :]

    def result(self, lines_scanned: int) -> GrepResult:
        if self.timed_out_at is not None:
            lines = self.timed_out_at - 1
        else:
            lines = self.last_emitted if not self.searching else lines_scanned
        return GrepResult(
            text="\n".join(self.out),
            matches=self.matches,
            lines_scanned=lines,
            truncated=not self.searching,
            note=self._note(lines),
            stopped_after_seconds=None if self.timed_out_at is None or self.budget is None else self.budget.elapsed,
        )

    def _note(self, lines: int) -> str:
        pattern = self.matcher.pattern
        if self.timed_out_at is not None and self.budget is not None:
            return (
                f"Stopped after {self.budget.elapsed:.1f} seconds at line {self.timed_out_at:,} (the grep time "
                f"budget is {self.budget.seconds:g} s): {self.matches} matching line(s) for '{pattern}' in the "
                f"{lines:,} lines searched; later lines were not searched. Narrow the pattern."
            )
        if not self.matches:
            return f"No matches for '{pattern}' in {lines:,} lines."
        if not self.searching:
            return (
                f"Stopped after {self.matches} matching lines (max_matches); the last is line {self.last_match:,} "
                "and later lines were not searched. Narrow the pattern or raise max_matches."
            )
        return f"{self.matches} matching line(s) for '{pattern}' in {lines:,} lines."


class _Budget:
    """`seconds` on `clock` from the moment the grep starts."""

    def __init__(self, seconds: float, clock: Callable[[], float]) -> None:
        self.seconds, self.clock = seconds, clock
        self.started = clock()
        self.elapsed = 0.0

    def spent(self) -> bool:
        self.elapsed = self.clock() - self.started
        return self.elapsed >= self.seconds


def grep_lines(
    reader: BlobReader,
    key: str,
    matcher: LineMatcher,
    *,
    before: int = 0,
    after: int = 0,
    max_matches: int = 100,
    block_size: int = DEFAULT_BLOCK,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    long_line_bytes: int = DEFAULT_LONG_LINE,
    index: LineIndex | None = None,
    time_budget: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> GrepResult:
    """Stream blob `key` once and return its matching lines, numbered, with context.

    Pass the blob's `index` when there is one: line numbers then come from it instead of
    counting every newline (about twice as fast). Stops reading as soon as `max_matches`
    matching lines and their after-context are out.
    A line longer than `long_line_bytes` is searched in windows of that size overlapping by
    up to 64 KiB (memory stays bounded; a match longer than the overlap that straddles two
    windows can be missed) and is reported once.
    With `time_budget` (seconds on `clock`), it stops once that much time is spent and says at which line
    (`stopped_after_seconds`, the note); the clock is read between slices of about `SLICE` bytes.
    """
    _check_grep_args(before, after, max_matches, block_size, max_line_chars, long_line_bytes)
    if time_budget is not None and time_budget <= 0:
        raise InvalidInput(f"time_budget must be positive, got {time_budget}", time_budget=time_budget)
    numbering = _Numbering(index, reader, key) if index is not None else None
    budget = _Budget(time_budget, clock) if time_budget is not None else None
    run = _GrepRun(matcher, before, after, max_matches, max_line_chars, numbering, budget)
    blocks = reader.iter_range(key, 0, None, block_size=block_size)
    try:
        lines = _stream(run, blocks, long_line_bytes, numbering)
    finally:
        close = getattr(blocks, "close", None)
        if callable(close):
            close()
    return run.result(index.lines if lines is None and index is not None else lines or 0)


def _check_grep_args(
    before: int, after: int, max_matches: int, block_size: int, max_chars: int, long_line: int
) -> None:
    values = {"before": before, "after": after, "max_matches": max_matches, "block_size": block_size,
              "max_line_chars": max_chars, "long_line_bytes": long_line}  # fmt: skip
    for (name, value), least in zip(values.items(), (0, 0, 1, 1, 1, 2), strict=True):
        if value < least:
            raise InvalidInput(f"{name} must be at least {least}, got {value}", **{name: value})


def _stream(run: _GrepRun, blocks: Iterator[bytes], long_line: int, numbering: _Numbering | None) -> int | None:
    """Feed whole lines to `run` block by block, searching each block in place (the few bytes of
    the line that straddles two blocks are joined apart). Returns the line count, None if unknown.
    """
    carry: list[bytes] = []
    carried, at = 0, 0  # bytes carried over, blob offset after `block`
    ln: int | None = 1  # number of the line at the carry (None: unknown, the index knows)
    for block in blocks:
        if run.done or (at and run.out_of_time(partial(_line_number, numbering, ln, at - carried))):
            break  # the clock is read between blocks (and slices): the first block is always searched
        if numbering is not None:
            numbering.hold(at, block)
        at += len(block)
        first = block.find(NL)
        if first < 0:
            carry.append(block)
            carried += len(block)
            if carried >= long_line:
                ln, carry, carried = _cut_long_line(run, b"".join(carry), ln, at - carried, long_line)
            continue
        head = b"".join([*carry, block[: first + 1]])
        ln = run.scan(head, 0, len(head), ln, at - len(block) - carried)
        last = block.rfind(NL)
        if last > first and not run.done:
            ln = _scan_slices(run, block, first + 1, last + 1, ln, at - len(block), numbering)
        carry, carried = [block[last + 1 :]], len(block) - last - 1
    tail = b"".join(carry)
    if tail and not run.done:
        return run.scan(tail, 0, len(tail), ln, at - carried)
    return ln - 1 if ln is not None and not tail else ln


def _scan_slices(
    run: _GrepRun, block: bytes, start: int, end: int, ln: int | None, base: int, numbering: _Numbering | None
) -> int | None:
    """`run.scan` over `block[start:end]`; with a time budget, in slices of whole lines, the clock read between."""
    if run.budget is None:
        return run.scan(block, start, end, ln, base)
    while True:  # the clock was read before this block: the first slice goes without
        cut = block.find(NL, min(start + SLICE, end) - 1, end) + 1 or end
        ln = run.scan(block, start, cut, ln, base)
        start = cut
        if start >= end or run.done or run.out_of_time(partial(_line_number, numbering, ln, base + start)):
            return ln


def _line_number(numbering: _Numbering | None, ln: int | None, offset: int) -> int:
    """The number of the line starting at blob `offset`: known (`ln`), or from the index."""
    if ln is not None:
        return ln
    if numbering is None:  # without an index every cursor carries its line number
        raise AssertionError("grep lost its line count without a line index")
    return numbering.line_at(offset)


def _cut_long_line(
    run: _GrepRun, part: bytes, ln: int | None, base: int, long_line: int
) -> tuple[int | None, list[bytes], int]:
    """Search the first window of an over-long line; keep an overlap so a match on the seam is found."""
    if not run.done:
        ln = run.scan(part, 0, len(part), ln, base, cut=True)
    keep = part[-min(64 << 10, long_line // 2) :]
    return ln, [keep], len(keep)
