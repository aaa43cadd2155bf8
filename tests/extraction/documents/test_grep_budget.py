"""Grep's time budget, on a fake clock: the matches so far and where it stopped, never a hang."""

from __future__ import annotations

import pytest

from extraction.documents.grep import SLICE, GrepResult, grep_lines
from extraction.documents.line_matchers import LiteralMatcher
from extraction.documents.lines import build_line_index
from extraction.errors import InvalidInput
from tests.helpers import BytesReader


class TickingClock:
    """Each reading is `step` seconds after the last: time passes as grep works, and only then."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.reads = 0.0, step, 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


def lines(count: int, width: int = 60) -> bytes:
    return b"".join(f"line {n} hit".ljust(width, ".").encode() + b"\n" for n in range(1, count + 1))


def grep(data: bytes, clock, **kwargs) -> GrepResult:
    return grep_lines(BytesReader(data), "k", LiteralMatcher("hit"), max_matches=10**6, clock=clock, **kwargs)


def matched_lines(result: GrepResult) -> list[int]:
    return [int(entry.split(":")[0]) for entry in result.text.splitlines()]


@pytest.mark.parametrize("indexed", [False, True])
def test_between_blocks_it_stops_with_the_matches_so_far_and_the_line_it_stopped_at(indexed: bool) -> None:
    data = lines(100)  # 61 bytes a line, 5 lines a block of 305 bytes
    index = build_line_index([data], every=4) if indexed else None
    result = grep(data, TickingClock(1.0), time_budget=3.5, block_size=305, index=index)
    # the clock is read at the start, then between blocks (elapsed 1, 2, 3, 4): blocks 1-4 are searched
    assert result.stopped_after_seconds == 4.0
    assert result.truncated and result.lines_scanned == 20
    assert matched_lines(result) == list(range(1, 21)) and result.matches == 20
    assert result.note == (
        "Stopped after 4.0 seconds at line 21 (the grep time budget is 3.5 s): 20 matching line(s) for 'hit' "
        "in the 20 lines searched; later lines were not searched. Narrow the pattern."
    )
    assert "Stopped after 4.0 seconds at line 21" in result.render()


@pytest.mark.parametrize("indexed", [False, True])
def test_inside_one_big_block_the_clock_is_read_between_slices(indexed: bool) -> None:
    data = lines(3 * SLICE // 64, width=63)  # three slices' worth of 64-byte lines, one block
    index = build_line_index([data], every=1000) if indexed else None
    per_slice = SLICE // 64
    for budget, slices in ((0.5, 1), (1.5, 2)):
        result = grep(data, TickingClock(1.0), time_budget=budget, block_size=len(data) + 1, index=index)
        # the clock is read after each slice but the last (elapsed 1, 2):
        # line 1 (searched with the carry, before the slices) and `slices` slices are searched
        searched = 1 + slices * per_slice
        assert result.lines_scanned == searched and matched_lines(result) == list(range(1, searched + 1))
        assert f"at line {searched + 1:,} " in (result.note or "")


def test_a_budget_that_is_never_spent_changes_nothing() -> None:
    data = lines(500)
    for block_size in (7, 305, 1 << 20):
        timed = grep(data, lambda: 0.0, time_budget=1.0, block_size=block_size, before=2, after=1)
        plain = grep_lines(
            BytesReader(data), "k", LiteralMatcher("hit"), max_matches=10**6, block_size=block_size, before=2, after=1
        )
        assert timed == plain and timed.stopped_after_seconds is None


def test_after_context_is_not_owed_past_the_stop() -> None:
    data = lines(20)
    result = grep(data, TickingClock(1.0), time_budget=2.5, block_size=61 * 2, after=3)
    # blocks 1-3 (lines 1-6) are searched; line 6's after-context would need the unsearched block 4
    assert result.lines_scanned == 6 and result.text.splitlines()[-1].startswith("     6:")


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(InvalidInput, match="time_budget must be positive"):
        grep(b"a\n", TickingClock(1.0), time_budget=0)


@pytest.mark.parametrize("ignore_case", [False, True])
def test_slices_of_a_big_block_find_what_one_scan_finds(ignore_case: bool) -> None:
    data = b"".join(b"%s row %d\n" % (b"HIT" if n % 997 == 0 else b"miss", n) for n in range(300_000))
    assert len(data) > 3 * SLICE
    index = build_line_index([data])
    for idx in (None, index):
        options = {"before": 2, "after": 2, "max_matches": 10**6, "index": idx}
        matcher = LiteralMatcher("hit" if ignore_case else "HIT", ignore_case)
        sliced = grep_lines(BytesReader(data), "k", matcher, time_budget=60, clock=lambda: 0.0, **options)
        whole = grep_lines(BytesReader(data), "k", matcher, **options)
        assert sliced == whole and sliced.matches == 301
