"""Streaming grep: right line numbers whatever the block size, grep-style context, early stop,
and the same answer as a naive per-line filter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.documents.grep import GrepResult, grep_lines, render_match
from extraction.documents.line_matchers import LineMatcher, LiteralMatcher
from extraction.documents.lines import build_line_index
from extraction.errors import InvalidInput
from tests.extraction.documents.test_lines import log, naive_lines
from tests.helpers import BytesReader


class SlowMatcher:
    """A matcher without the block fast path: grep must test every line itself."""

    def __init__(self, text: str) -> None:
        self.pattern = text

    def search(self, line: str) -> bool:
        return self.pattern in line


def naive_grep(data: bytes, search, *, before: int = 0, after: int = 0, max_matches: int = 10**9) -> str:
    """GNU `grep -n -B -A -m` semantics, one line at a time."""
    out: list[str] = []
    last = matches = after_until = 0
    for n, line in enumerate(naive_lines(data), 1):
        if matches < max_matches and search(line):
            first = max(1, n - before, last + 1)
            if (before or after) and last and first > last + 1:
                out.append("--")
            out += [f"{k:>6}-\t{naive_lines(data)[k - 1]}" for k in range(first, n)]
            out.append(f"{n:>6}:\t{line}")
            last, matches, after_until = n, matches + 1, n + after
        elif last < n <= after_until:
            out.append(f"{n:>6}-\t{line}")
            last = n
        elif matches >= max_matches:
            break
    return "\n".join(out)


def grep(data: bytes, pattern: str | LineMatcher, **kwargs) -> GrepResult:
    matcher = LiteralMatcher(pattern) if isinstance(pattern, str) else pattern
    return grep_lines(BytesReader(data), "k", matcher, **kwargs)


def test_numbers_matches_like_grep_n() -> None:
    result = grep(b"alpha\nbeta\ngamma beta\n", "beta")
    assert result.text == "     2:\tbeta\n     3:\tgamma beta"
    assert (result.matches, result.lines_scanned, result.truncated) == (2, 3, False)
    assert result.note == "2 matching line(s) for 'beta' in 3 lines."


@pytest.mark.parametrize("block_size", [1, 2, 7, 64, 1000, 8 << 20])
@pytest.mark.parametrize("needle", ["line 1 ", "line 500 ", "line 999 ", "line 1000 ", "99 pay"])
def test_line_numbers_at_start_middle_and_end_for_any_block_size(block_size: int, needle: str) -> None:
    data = log(1000)
    result = grep(data, needle, block_size=block_size)
    assert result.text == naive_grep(data, lambda line: needle in line)
    assert result.lines_scanned == 1000


def test_no_match_says_so() -> None:
    result = grep(log(123), "nothing")
    assert (result.text, result.matches) == ("", 0)
    assert result.note == "No matches for 'nothing' in 123 lines."
    assert result.render() == result.note


def test_empty_blob() -> None:
    assert grep(b"", "x").note == "No matches for 'x' in 0 lines."


def test_last_line_without_newline_crlf_and_invalid_utf8() -> None:
    data = b"a\r\nneedle\r\n\xffneedle\xfe\r\nlast needle"
    result = grep(data, "needle", block_size=3)
    assert result.text == "     2:\tneedle\n     3:\t\ufffdneedle\ufffd\n     4:\tlast needle"
    assert result.lines_scanned == 4


def test_a_match_spanning_a_block_boundary_is_found() -> None:
    data = b"x" * 10 + b"needle" + b"y" * 10 + b"\n"
    for block_size in range(1, 30):
        assert grep(data, "needle", block_size=block_size).matches == 1


def test_context_windows_merge_without_repeats_and_groups_are_separated() -> None:
    data = log(30)
    search = lambda line: line.startswith(("line 5 ", "line 7 ", "line 20 "))  # noqa: E731
    matcher = SlowMatcher("")
    matcher.search = search
    for block_size in (5, 40, 4096):
        result = grep(data, matcher, before=2, after=2, block_size=block_size)
        assert result.text == naive_grep(data, search, before=2, after=2)
    lines = result.text.split("\n")
    assert [line[:7] for line in lines] == [
        "     3-",
        "     4-",
        "     5:",
        "     6-",
        "     7:",
        "     8-",
        "     9-",
        "--",
        "    18-",
        "    19-",
        "    20:",
        "    21-",
        "    22-",
    ]


def test_no_separator_without_context() -> None:
    assert "--" not in grep(log(30), "1 pay").text


def test_max_matches_stops_reading_early() -> None:
    data = log(100_000)
    reader = BytesReader(data)
    result = grep_lines(reader, "k", LiteralMatcher("payload"), max_matches=3, after=1, block_size=4096)
    assert (
        result.text
        == "     1:\tline 1 payload\n     2:\tline 2 payload\n     3:\tline 3 payload\n     4-\tline 4 payload"
    )
    assert result.truncated and result.matches == 3
    assert "max_matches" in result.note and "line 3" in result.note
    assert reader.bytes_read <= 8192 < len(data)


def test_after_context_of_the_last_match_may_come_from_the_next_block() -> None:
    data = b"hit\n" + b"a\n" * 5
    result = grep(data, "hit", max_matches=1, after=3, block_size=4)
    assert result.text == "     1:\thit\n     2-\ta\n     3-\ta\n     4-\ta"


def test_long_lines_are_clipped_around_the_match() -> None:
    data = b"a" * 5000 + b"NEEDLE" + b"b" * 5000 + b"\n" + b"c" * 5000 + b"\n"
    result = grep(data, "NEEDLE", after=1, max_line_chars=20)
    match, context = result.text.split("\n")
    assert match == "     1:\t[line clipped: 4993 chars before] …aaaaaaaNEEDLEbbbbbbb… [line clipped: 4993 more chars]"
    assert context == f"     2-\t{'c' * 20}… [line clipped: 4980 more chars]"


def test_render_match_windows() -> None:
    assert render_match("short", (0, 1), 10) == "short"
    assert render_match("x" * 30, None, 10) == "x" * 10 + "… [line clipped: 20 more chars]"
    assert (
        render_match("a" * 10 + "b" * 30, (10, 40), 10)
        == "[line clipped: 10 chars before] …" + "b" * 10 + "… [line clipped: 20 more chars]"
    )


def test_lines_longer_than_the_long_line_cap_are_searched_in_windows_and_reported_once() -> None:
    line = b"z" * 1000 + b"needle" + b"z" * 1000 + b"needle" + b"z" * 3000
    data = b"first\n" + line + b"\nneedle after\n"
    result = grep(data, "needle", block_size=64, long_line_bytes=256, max_line_chars=10)
    assert [entry.split("\t")[0] for entry in result.text.split("\n")] == ["     2:", "     3:"]
    assert result.lines_scanned == 3


def test_a_long_line_shown_as_context_first_is_still_reported_as_a_match() -> None:
    data = b"hit\n" + b"q" * 300 + b"hit" + b"q" * 300 + b"\nafter\n"
    for index in (None, build_line_index([data], 2)):
        result = grep(data, "hit", after=1, block_size=16, long_line_bytes=64, max_line_chars=8, index=index)
        assert [entry.split("\t")[0] for entry in result.text.split("\n")] == ["     1:", "     2:", "     3-"]


def test_a_match_on_the_seam_of_a_long_line_window_is_found() -> None:
    for pad in range(240, 270):
        data = b"z" * pad + b"needle" + b"z" * 1000
        assert grep(data, "needle", block_size=16, long_line_bytes=256).matches == 1, pad


def test_literal_ignore_case_uses_casefold() -> None:
    data = "Straße\nSTRASSE\n\u212aelvin\nnothing\n".encode()
    assert grep(data, LiteralMatcher("strasse", ignore_case=True)).text == "     1:\tStraße\n     2:\tSTRASSE"
    assert grep(data, LiteralMatcher("kelvin", ignore_case=True)).matches == 1
    assert grep(b"ABC\nabc\n", LiteralMatcher("aBc", ignore_case=True)).matches == 2


def test_literal_matcher_refuses_empty_and_multiline_patterns() -> None:
    with pytest.raises(InvalidInput, match="empty"):
        LiteralMatcher("")
    with pytest.raises(InvalidInput, match="line break"):
        LiteralMatcher("a\nb")


def test_a_needle_that_crosses_lines_in_the_raw_bytes_is_not_a_match() -> None:
    assert grep(b"ab\r\ncd\n", "b\r").matches == 0
    assert grep(b"x\xff\n", "x\ufffd").matches == 1


@pytest.mark.parametrize(
    ("kwargs", "word"), [({"before": -1}, "before"), ({"after": -2}, "after"), ({"max_matches": 0}, "max_matches")]
)
def test_bad_arguments_are_invalid_input(kwargs: dict, word: str) -> None:
    with pytest.raises(InvalidInput, match=word):
        grep(b"a\n", "a", **kwargs)


CONTENT = st.lists(
    st.sampled_from(
        [b"a", b"b", b"ab", b"A", b"B", b"\n", b"\n", b"\r\n", b"\r", b"\xff", "ß".encode(), "é".encode(), b"SS"]
    ),
    max_size=150,
).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(
    CONTENT,
    st.sampled_from(["a", "ab", "b\r", "ss", "é", "ba", "\ufffd"]),
    st.booleans(),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(1, 6),
    st.integers(1, 20),
    st.none() | st.integers(1, 4),
)
def test_grep_equals_a_naive_filter(data, needle, ignore_case, before, after, max_matches, block_size, every) -> None:
    matcher = LiteralMatcher(needle, ignore_case)
    expected = naive_grep(data, matcher.search, before=before, after=after, max_matches=max_matches)
    index = None if every is None else build_line_index([data], every)
    for candidate in (matcher, SlowMatcher(needle) if not ignore_case else matcher):
        result = grep(
            data, candidate, before=before, after=after, max_matches=max_matches, block_size=block_size, index=index
        )
        assert result.text == expected
        if not result.truncated:
            assert result.lines_scanned == len(naive_lines(data))
    folded = needle.casefold() if ignore_case else needle
    hits = [line for line in naive_lines(data) if folded in (line.casefold() if ignore_case else line)]
    assert result.matches == min(len(hits), max_matches)


def test_the_index_gives_the_same_numbers_without_counting_every_block() -> None:
    data = log(50_000)
    index = build_line_index([data], 64)
    for needle in ("line 1 ", "line 25000 ", "line 49999 ", "absent"):
        plain, indexed = grep(data, needle, block_size=4096), grep(data, needle, block_size=4096, index=index)
        assert indexed == plain and indexed.lines_scanned == 50_000


def test_the_index_copes_with_samples_older_than_the_held_blocks() -> None:
    data = b"".join(b"%d " % i + b"x" * 50 + b"\n" for i in range(1, 200)) + b"needle\n"
    reader = BytesReader(data)
    result = grep_lines(reader, "k", LiteralMatcher("needle"), block_size=16, index=build_line_index([data], 100))
    assert result.text == "   200:\tneedle"
