"""Token ↔ byte arithmetic through the token index, including pieces with invalid UTF-8."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.documents.stats import measure
from extraction.documents.token_positions import TokenPositions, token_boundaries
from extraction.documents.tokens import get_encoding, is_utf8_continuation, token_byte_lengths, token_byte_lengths_built
from extraction.errors import ExtractionError

ENCODING = get_encoding("o200k_base")
mixed_bytes = st.lists(
    st.sampled_from([b"word ", b"\n", "é".encode(), "😀".encode(), b"\xff", b"\x80", b"{}", b"  "]), max_size=80
).map(b"".join)


def positions_for(data: bytes, piece_bytes: int = 32) -> TokenPositions:
    return TokenPositions(measure([data], piece_bytes=piece_bytes).index, lambda a, b: data[a:b])


def test_boundaries_of_valid_text_are_the_token_byte_ends() -> None:
    raw = "naïve tokens\n".encode()
    tokens = ENCODING.encode_ordinary(raw.decode())
    expected, offset = [100], 100
    for token in tokens:
        offset += len(ENCODING.decode_single_token_bytes(token))
        expected.append(offset)
    assert token_boundaries(raw, 100, "o200k_base") == expected


def test_boundaries_of_invalid_bytes_map_back_to_raw_offsets() -> None:
    boundaries = token_boundaries(b"ab\xffcd", 0, "o200k_base")
    assert boundaries[0] == 0 and boundaries[-1] == 5
    assert boundaries == sorted(boundaries)


@settings(max_examples=30, deadline=None)
@given(data=mixed_bytes)
def test_the_length_table_gives_the_same_boundaries_as_decoding(data: bytes) -> None:
    assert token_boundaries(data, 7, "o200k_base", with_table=True) == token_boundaries(data, 7, "o200k_base")


@settings(max_examples=80, deadline=None)
@given(data=mixed_bytes)
def test_token_positions_are_monotone_character_boundaries(data: bytes) -> None:
    positions = positions_for(data)
    previous = 0
    for token in range(positions.total_tokens + 1):
        found = positions.at_token(token)
        assert previous <= found.offset <= len(data)
        assert (
            found.offset == len(data)
            or not is_utf8_continuation(data[found.offset])
            or _inside_invalid_run(data, found.offset)
        )
        assert found.tokens_before <= found.tokens_until <= token
        assert positions.at_byte(found.offset) == found
        previous = found.offset


def _inside_invalid_run(data: bytes, offset: int) -> bool:
    """A lone continuation byte (invalid UTF-8) is a legitimate place to cut."""
    try:
        data[max(0, offset - 3) : offset + 1].decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def test_piece_boundaries_need_no_reads() -> None:
    data = b"line\n" * 100
    reads = []
    index = measure([data], piece_bytes=32).index
    positions = TokenPositions(index, lambda a, b: reads.append((a, b)) or data[a:b])
    for piece in range(index.piece_count + 1):
        assert positions.at_token(index.tokens[piece]).offset == index.offsets[piece]
    assert reads == []


def test_pieces_are_read_once_while_cached() -> None:
    data = ("some words here " * 40 + "\n") * 20
    data = data.encode()
    reads = []
    index = measure([data], piece_bytes=1024).index
    positions = TokenPositions(index, lambda a, b: reads.append((a, b)) or data[a:b])
    inside = index.tokens[3] + 5
    first = positions.at_token(inside)
    assert positions.at_token(inside) == first and positions.at_byte(first.offset) == first
    assert reads == [(index.offsets[3], index.offsets[4])]
    assert positions.pieces_encoded == 1


def test_a_short_read_means_the_document_changed() -> None:
    data = ("word " * 400).encode()
    index = measure([data], piece_bytes=256).index
    positions = TokenPositions(index, lambda a, b: data[a : b - 1])
    with pytest.raises(ExtractionError):
        positions.at_token(index.tokens[1] + 3)


def test_a_process_that_built_the_token_length_table_is_known_to_have_it() -> None:
    """A worker builds it at warm-up; planning then uses it from the first piece instead of after 200."""
    token_byte_lengths("o200k_base")
    assert token_byte_lengths_built("o200k_base") and not token_byte_lengths_built("no-such-encoding")
