"""Encoding choice per model, cached encodings, and the lossy decoding shared by stats and planner."""

import pytest
import tiktoken

from extraction.documents.tokens import (
    DEFAULT_ENCODING,
    count_tokens,
    decode_lossy,
    encoding_name_for_model,
    get_encoding,
    invalid_byte_positions,
    raw_offset_mapper,
    token_byte_lengths,
    utf8_boundary_at_or_before,
)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("azure/gpt-4o-mini", "o200k_base"),
        ("openrouter/openai/gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo-0125", "cl100k_base"),
        ("anthropic/claude-sonnet-4", DEFAULT_ENCODING),
        ("some-local-model", DEFAULT_ENCODING),
        ("", DEFAULT_ENCODING),
    ],
)
def test_encoding_follows_tiktoken_map_after_stripping_the_provider(model: str, encoding: str) -> None:
    assert encoding_name_for_model(model) == encoding


def test_get_encoding_is_cached_and_real() -> None:
    assert get_encoding("o200k_base") is get_encoding("o200k_base")
    assert isinstance(get_encoding("cl100k_base"), tiktoken.Encoding)


def test_count_tokens_treats_special_tokens_as_text() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1
    assert count_tokens("", "cl100k_base") == 0


def test_decode_lossy_replaces_each_invalid_byte_once() -> None:
    assert decode_lossy("héllo".encode()) == ("héllo", False)
    text, invalid = decode_lossy(b"a\xff\xfeb\xc3")
    assert (text, invalid) == ("a\ufffd\ufffdb\ufffd", True)


def test_invalid_positions_and_mapping_back_to_raw_offsets() -> None:
    raw = "é".encode() + b"\xff" + b"x" + b"\x80"
    positions = invalid_byte_positions(raw)
    assert positions == [2, 4]
    to_raw = raw_offset_mapper(positions)
    reencoded = decode_lossy(raw)[0].encode()
    # é(2) FFFD(3) x(1) FFFD(3): offsets in re-encoded text → raw
    assert [to_raw(o) for o in (0, 2, 3, 4, 5, 6, 9)] == [0, 2, 2, 2, 3, 4, 5]
    assert to_raw(len(reencoded)) == len(raw)
    assert invalid_byte_positions(b"valid") == []


def test_utf8_boundary_moves_back_over_continuation_bytes_only() -> None:
    data = "a😀b".encode()  # a, 4-byte emoji, b
    assert [utf8_boundary_at_or_before(data, p) for p in range(len(data) + 1)] == [0, 1, 1, 1, 1, 5, 6]
    assert utf8_boundary_at_or_before(data, 3, floor=2) == 2


def test_token_byte_lengths_match_decoded_tokens() -> None:
    lengths = token_byte_lengths("o200k_base")
    encoding = get_encoding("o200k_base")
    tokens = encoding.encode_ordinary("naïve 日本語 text\n")
    assert sum(lengths[t] for t in tokens) == len("naïve 日本語 text\n".encode())
