"""Line index and line-numbered Read: seeks through the index, reads only what it needs, and
agrees with a naive split for any content, window and block size."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.documents.lines import (
    LineIndex,
    LineIndexBuilder,
    build_line_index,
    index_blob,
    nth_newline,
    read_lines,
    render_line,
)
from extraction.errors import InvalidInput
from tests.helpers import BytesReader


def naive_lines(data: bytes) -> list[str]:
    """The definition: split on \\n, no empty line after a final \\n, drop one trailing \\r, decode with replace."""
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return [(p[:-1] if p.endswith(b"\r") else p).decode("utf-8", "replace") for p in parts]


def naive_offsets(data: bytes, every: int) -> list[int]:
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A and i + 1 < len(data)]
    return starts[::every] if data else [0]


def numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + i:>6}\t{line}" for i, line in enumerate(lines))


def blocks_of(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def log(n: int) -> bytes:
    return b"".join(b"line %d payload\n" % i for i in range(1, n + 1))


# --- nth_newline and the index ---------------------------------------------------------------


@given(st.binary(max_size=400).map(lambda b: b.replace(b"x", b"\n")), st.integers(1, 50), st.integers(0, 50))
def test_nth_newline_matches_a_find_loop(data: bytes, n: int, start: int) -> None:
    pos, expected = start - 1, None
    for _ in range(n):
        pos = data.find(b"\n", pos + 1)
        if pos < 0:
            expected = -1
            break
    assert nth_newline(data, n, start, hint=3.0) == (pos if expected is None else -1)


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r\n", b"\xff", "é".encode()]), max_size=120).map(b"".join),
    st.integers(1, 5),
    st.integers(1, 17),
)
def test_index_is_the_same_however_the_blob_is_split(data: bytes, every: int, block: int) -> None:
    index = build_line_index(blocks_of(data, block), every)
    assert index.lines == len(naive_lines(data))
    assert index.size == len(data)
    assert index.offsets == naive_offsets(data, every)


def test_index_of_empty_and_trailing_newline_blobs() -> None:
    assert build_line_index([]).lines == 0
    assert build_line_index([b""]).offsets == [0]
    assert build_line_index([b"a\n"], every=1).offsets == [0]
    assert build_line_index([b"a\nb"], every=1) == LineIndex(every=1, size=3, lines=2, offsets=[0, 2])


def test_index_round_trips_through_json_and_stays_sparse() -> None:
    data = log(10_000)
    index = build_line_index(blocks_of(data, 4096), every=1024)
    assert len(index.offsets) == 10
    assert LineIndex.model_validate_json(index.model_dump_json()) == index
    assert index_blob(BytesReader(data), "k", every=1024, block_size=999) == index


def test_builder_rejects_a_zero_stride() -> None:
    with pytest.raises(InvalidInput):
        LineIndexBuilder(0)


# --- read_lines --------------------------------------------------------------------------------


def setup(data: bytes, every: int = 8) -> tuple[BytesReader, LineIndex]:
    return BytesReader(data), build_line_index([data], every)


def test_reads_the_start_in_claude_code_layout() -> None:
    reader, index = setup(log(50))
    result = read_lines(reader, "k", index, limit=3)
    assert result.text == "     1\tline 1 payload\n     2\tline 2 payload\n     3\tline 3 payload"
    assert (result.first_line, result.last_line, result.total_lines, result.truncated) == (1, 3, 50, True)
    assert "offset=4" in result.note and result.render().startswith(result.text)


@pytest.mark.parametrize("offset", [1, 7, 8, 9, 16, 17, 333, 998, 1000])
def test_middle_and_end_windows_across_small_blocks(offset: int) -> None:
    data = log(1000)
    reader, index = setup(data)
    result = read_lines(reader, "k", index, offset=offset, limit=5, max_block=7)
    expected = naive_lines(data)[offset - 1 : offset + 4]
    assert result.text == numbered(expected, offset)
    assert result.last_line == offset + len(expected) - 1
    assert result.truncated == (result.last_line < 1000)


def test_reads_only_near_the_window_not_the_whole_blob() -> None:
    data = log(200_000)
    reader, index = setup(data, every=1024)
    result = read_lines(reader, "k", index, offset=150_000, limit=10)
    assert result.text.startswith("150000\tline 150000 payload")
    assert reader.bytes_read <= 64 << 10
    assert reader.calls == 1


def test_offset_past_the_end_is_an_empty_window_with_a_note() -> None:
    reader, index = setup(log(3))
    result = read_lines(reader, "k", index, offset=4)
    assert (result.text, result.last_line, result.total_lines) == ("", 3, 3)
    assert "past the end" in result.note and "3 lines" in result.note
    assert reader.bytes_read == 0


def test_empty_blob() -> None:
    reader, index = setup(b"")
    result = read_lines(reader, "k", index)
    assert result.text == "" and result.total_lines == 0 and "empty" in result.note


@pytest.mark.parametrize(
    ("kwargs", "word"), [({"offset": 0}, "offset"), ({"limit": 0}, "limit"), ({"offset": -3}, "offset")]
)
def test_bad_window_is_invalid_input_naming_the_argument(kwargs: dict, word: str) -> None:
    reader, index = setup(log(3))
    with pytest.raises(InvalidInput, match=word):
        read_lines(reader, "k", index, **kwargs)


def test_no_trailing_newline_crlf_and_invalid_utf8() -> None:
    data = b"one\r\ntwo\r\n\xff\xfebad\r\nlast"
    reader, index = setup(data, every=1)
    assert read_lines(reader, "k", index).text == numbered(["one", "two", "\ufffd\ufffdbad", "last"], 1)
    assert read_lines(reader, "k", index, offset=4).text == "     4\tlast"


def test_long_lines_are_clipped_with_the_exact_remaining_count() -> None:
    long_ascii = b"a" * 10_000
    long_utf8 = "é".encode() * 10_000
    data = b"short\n" + long_ascii + b"\r\n" + long_utf8 + b"\nend\n"
    reader, index = setup(data, every=2)
    result = read_lines(reader, "k", index, max_line_chars=100, max_block=999)
    lines = result.text.split("\n")
    assert lines[1] == f"     2\t{'a' * 100}… [line clipped: 9900 more chars]"
    assert lines[2] == f"     3\t{'é' * 100}… [line clipped: 9900 more chars]"
    assert lines[3] == "     4\tend"
    assert result.clipped_lines == 2 and "clipped" in result.note


def test_a_huge_last_line_is_not_read_to_its_end() -> None:
    data = b"head\n" + b"x" * 5_000_000 + b"\n"
    reader, index = setup(data, every=1)
    result = read_lines(reader, "k", index, offset=2, limit=1, max_line_chars=10)
    assert result.text.startswith("     2\txxxxxxxxxx… [line clipped: ")
    assert result.text.endswith("+ more chars]")
    assert reader.bytes_read <= 64 << 10


def test_render_line_clips_by_characters() -> None:
    assert render_line(b"abc\r", 5) == "abc"
    assert render_line("ü".encode() * 4, 2) == "üü… [line clipped: 2 more chars]"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"a", b"xyz", b"\n", b"\n", b"\r\n", b"\r", b"\xc3", "ß".encode(), b"\xff"]), max_size=200
    ).map(b"".join),
    st.integers(1, 60),
    st.integers(1, 60),
    st.integers(1, 7),
    st.integers(1, 13),
)
def test_any_window_equals_the_naive_split(data: bytes, offset: int, limit: int, every: int, block: int) -> None:
    lines = naive_lines(data)
    reader, index = BytesReader(data), build_line_index(blocks_of(data, 5), every)
    result = read_lines(reader, "k", index, offset=offset, limit=limit, max_block=block, max_line_chars=10_000)
    assert result.text == numbered(lines[offset - 1 : offset - 1 + limit], offset)
    assert result.total_lines == len(lines)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "bc", "\n", "\r\n", "é", "字", "🙂"]), max_size=120).map(
        lambda p: "".join(p).encode()
    ),
    st.integers(1, 8),
    st.integers(1, 30),
    st.integers(1, 9),
)
def test_clipping_counts_characters_for_any_split(data: bytes, max_chars: int, limit: int, block: int) -> None:
    lines = naive_lines(data)
    result = read_lines(
        BytesReader(data), "k", build_line_index([data], 3), limit=limit, max_line_chars=max_chars, max_block=block
    )
    got = result.text.split("\n") if result.text else []
    assert len(got) == min(limit, len(lines))
    for n, (shown, line) in enumerate(zip(got, lines, strict=False), 1):
        body = shown.split("\t", 1)[1]
        if len(line) <= max_chars:
            assert body == line
        elif body.endswith("+ more chars]"):  # the window's last line, not read to its end
            assert n == len(got)
            assert body.startswith(f"{line[:max_chars]}… [line clipped: ")
            assert int(body.rsplit(": ", 1)[1].split("+")[0]) <= len(line) - max_chars
        else:
            assert body == f"{line[:max_chars]}… [line clipped: {len(line) - max_chars} more chars]"
