"""Streaming document stats and the token index built in the same pass."""

import hashlib
import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from extraction.documents.stats import PIECE_BYTES, DocumentStats, StatsCounter, TokenIndex, measure, piece_ends
from extraction.documents.tokens import get_encoding
from extraction.errors import Conflict, InvalidInput

ENCODING = get_encoding("o200k_base")
FRAGMENTS = ["word", " ", "\n", "é", "日本", "😀", '{"k": [1, 2]}', "\t", "  ", "\r\n", "ascii text line"]

documents = st.lists(st.sampled_from(FRAGMENTS), max_size=120).map(lambda parts: "".join(parts).encode())
raw_bytes = st.binary(max_size=400)


def split_into_blocks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in pairwise(points)]


def pieces(measured) -> list[tuple[int, int]]:
    offsets = measured.index.offsets
    return list(pairwise(offsets))


@pytest.mark.parametrize(
    ("data", "lines"),
    [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"\n", 1), (b"\n\n", 2), (b"a\n\nb\n", 3)],
)
def test_line_convention_counts_an_unterminated_last_line(data: bytes, lines: int) -> None:
    assert measure([data]).stats.lines == lines


def test_stats_of_a_small_document() -> None:
    data = "first line\nsecond — line\n".encode()
    stats = measure([data]).stats
    assert stats == DocumentStats(
        bytes=len(data),
        lines=2,
        tokens=len(ENCODING.encode_ordinary(data.decode())),
        avg_line_bytes=len(data) / 2,
        sha256=hashlib.sha256(data).hexdigest(),
        invalid_utf8=False,
        encoding="o200k_base",
    )


def test_empty_document() -> None:
    measured = measure([])
    assert measured.stats.model_dump() == {
        "bytes": 0,
        "lines": 0,
        "tokens": 0,
        "avg_line_bytes": 0.0,
        "sha256": hashlib.sha256(b"").hexdigest(),
        "invalid_utf8": False,
        "encoding": "o200k_base",
    }
    assert (measured.index.offsets, measured.index.tokens) == ([0], [0])


def test_invalid_utf8_is_counted_and_flagged() -> None:
    measured = measure([b"ok\n\xff\xfe broken \xc3"])
    assert measured.stats.invalid_utf8 is True
    assert measured.stats.tokens == len(ENCODING.encode_ordinary("ok\n\ufffd\ufffd broken \ufffd"))


@settings(max_examples=60, deadline=None)
@given(data=documents, cuts=st.lists(st.integers(0, 10_000), max_size=8), piece_bytes=st.integers(16, 80))
def test_block_splitting_never_changes_stats_or_index(data: bytes, cuts: list[int], piece_bytes: int) -> None:
    whole = measure([data], piece_bytes=piece_bytes)
    streamed = measure(split_into_blocks(data, cuts), piece_bytes=piece_bytes, threads=2)
    assert streamed == whole
    assert whole.stats.bytes == len(data)
    assert whole.stats.lines == data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    assert whole.stats.sha256 == hashlib.sha256(data).hexdigest()


@settings(max_examples=60, deadline=None)
@given(data=documents, piece_bytes=st.integers(16, 80))
def test_index_pieces_are_bounded_whole_characters_cut_at_newlines(data: bytes, piece_bytes: int) -> None:
    measured = measure([data], piece_bytes=piece_bytes)
    assert measured.index.size == len(data) and measured.index.total_tokens == measured.stats.tokens
    for number, (start, end) in enumerate(pieces(measured)):
        piece = data[start:end]
        text = piece.decode("utf-8")  # raises if a cut split a character
        last = number == measured.index.piece_count - 1
        assert len(piece) <= piece_bytes or last
        assert piece.endswith(b"\n") or b"\n" not in piece or last
        tokens = measured.index.tokens[number + 1] - measured.index.tokens[number]
        assert tokens == len(ENCODING.encode_ordinary(text)) >= 1


@settings(max_examples=40, deadline=None)
@given(data=documents)
def test_one_piece_documents_count_exactly_like_tiktoken(data: bytes) -> None:
    assert measure([data]).stats.tokens == len(ENCODING.encode_ordinary(data.decode()))


@settings(max_examples=60, deadline=None)
@given(data=raw_bytes, piece_bytes=st.integers(16, 64))
def test_arbitrary_bytes_never_crash(data: bytes, piece_bytes: int) -> None:
    measured = measure([data], piece_bytes=piece_bytes)
    try:
        data.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        valid = False
    assert measured.stats.invalid_utf8 is (not valid)
    assert measured.stats.bytes == len(data)
    assert measured.index.offsets[-1] == len(data)


def test_piece_cuts_prefer_the_last_newline_in_the_window() -> None:
    buffer = b"aaaa\nbbbb\ncccccccccccccccccccc"
    assert piece_ends(buffer, 16, final=True) == [10, 26, len(buffer)]
    assert piece_ends(buffer, 16, final=False) == [10, 26]


def test_long_line_is_split_on_character_boundaries() -> None:
    data = ("日本語" * 1000).encode()  # 3-byte characters, no newline
    measured = measure([data], piece_bytes=100)
    assert all((end - start) % 3 == 0 and end - start <= 100 for start, end in pieces(measured))


def test_token_index_round_trips_through_compact_json() -> None:
    index = measure([b"line one\nline two\n" * 50], piece_bytes=64).index
    text = index.model_dump_json()
    assert " " not in text and TokenIndex.model_validate_json(text) == index
    stored = json.loads(text)
    assert set(stored) == {"encoding", "offset_steps", "token_steps"}
    assert stored["offset_steps"][1:] == [b - a for a, b in pairwise(index.offsets)]
    assert TokenIndex(**index.model_dump()) == index
    assert TokenIndex.model_validate({"encoding": "o200k_base", "offsets": [0, 4], "tokens": [0, 1]}).size == 4


@pytest.mark.parametrize(
    ("offsets", "tokens"),
    [([], []), ([0, 5], [0]), ([1, 5], [1, 3]), ([0, 5, 5], [0, 1, 2]), ([0, 5, 9], [0, 3, 2])],
)
def test_token_index_rejects_inconsistent_data(offsets: list[int], tokens: list[int]) -> None:
    with pytest.raises(ValidationError):
        TokenIndex(encoding="o200k_base", offsets=offsets, tokens=tokens)


def test_counter_is_single_use() -> None:
    counter = StatsCounter()
    counter.feed(b"abc")
    counter.finish()
    with pytest.raises(Conflict):
        counter.feed(b"more")
    with pytest.raises(Conflict):
        counter.finish()


def test_piece_size_must_allow_progress() -> None:
    with pytest.raises(InvalidInput):
        StatsCounter(piece_bytes=3)


def test_other_encodings_are_recorded() -> None:
    measured = measure([b"hello world"], "cl100k_base")
    assert measured.stats.encoding == measured.index.encoding == "cl100k_base"
    assert measured.stats.tokens == 2


def test_a_long_line_without_newlines_is_streamed_in_bounded_pieces() -> None:
    unit = '{"id":12345,"name":"café ☕","tags":["x","y"],"n":-1.5e3},'.encode()
    data = unit * (2_000_000 // len(unit))
    measured = measure(data[i : i + 100_000] for i in range(0, len(data), 100_000))
    assert measured.stats.lines == 1 and measured.stats.avg_line_bytes == len(data)
    sizes = [end - start for start, end in pieces(measured)]
    assert max(sizes) <= PIECE_BYTES and measured.index.piece_count >= len(data) // PIECE_BYTES
    for start, end in pieces(measured):
        data[start:end].decode("utf-8")
