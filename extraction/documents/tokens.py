"""Tokenizer selection and the byte/text helpers every token count in the engine shares.

Token counts decide chunk sizes and the mode choice, so the stats pass and the chunk planner must decode
bytes to text in exactly the same way; `decode_lossy` is that one way.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from functools import cache, lru_cache

import tiktoken
import tiktoken.model

DEFAULT_ENCODING = "o200k_base"
"""Used for models tiktoken does not know: the newest OpenAI encoding is the best general guess."""

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
_REPLACEMENT = "\ufffd"
_REPLACEMENT_UTF8_BYTES = 3


def encoding_name_for_model(model: str) -> str:
    """The tiktoken encoding for a (possibly litellm-prefixed) model name, e.g. `openai/gpt-4o` → `o200k_base`.

    litellm prefixes the provider (`azure/`, `openrouter/openai/`); tiktoken only knows bare names.
    """
    bare = model.strip().rsplit("/", 1)[-1]
    try:
        return tiktoken.model.encoding_name_for_model(bare)
    except KeyError:
        return DEFAULT_ENCODING


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """The named encoding, loaded once per process (loading parses a multi-megabyte BPE file)."""
    return tiktoken.get_encoding(name)


CountBatch = Callable[[list[str]], list[int]]
"""Token counts of texts, in order, each exactly as `count_tokens` (tiktoken's `encode_ordinary`) counts it.

The stats pass takes one of these so a faster tokenizer can be plugged in from outside the engine
(`infra.outputs.tokenizers`); whatever it is, it must agree with tiktoken text by text, because the chunk
planner later re-encodes single pieces with tiktoken and trusts the index's counts for them.
"""


def tiktoken_counter(encoding_name: str = DEFAULT_ENCODING, *, threads: int = 1) -> CountBatch:
    """The reference `CountBatch`: tiktoken's batch encoder on `threads` threads (it releases the GIL)."""
    encoding = get_encoding(encoding_name)

    def count_batch(texts: list[str]) -> list[int]:
        return [len(tokens) for tokens in encoding.encode_ordinary_batch(texts, num_threads=threads)]

    return count_batch


def count_tokens(text: str, encoding_name: str = DEFAULT_ENCODING) -> int:
    """Tokens in `text`; special-token look-alikes (`<|endoftext|>`) count as plain text, never raise."""
    return len(get_encoding(encoding_name).encode_ordinary(text))


def decode_lossy(data: bytes | bytearray) -> tuple[str, bool]:
    """Text to tokenize for `data` and whether it held invalid UTF-8.

    Each invalid byte becomes one U+FFFD. One-per-byte (rather than Python's one-per-run) keeps
    the mapping back to raw byte offsets trivial (see `raw_offset_mapper`).
    """
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        escaped = data.decode("utf-8", "surrogateescape")
        return _ESCAPED_BYTE.sub(_REPLACEMENT, escaped), True


def invalid_byte_positions(data: bytes | bytearray) -> list[int]:
    """Offsets of the bytes `decode_lossy` replaces (empty for valid UTF-8)."""
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        pass
    escaped = data.decode("utf-8", "surrogateescape")
    positions, char_pos, byte_pos = [], 0, 0
    for match in _ESCAPED_BYTE.finditer(escaped):
        byte_pos += len(escaped[char_pos : match.start()].encode("utf-8", "surrogateescape"))
        positions.append(byte_pos)
        char_pos, byte_pos = match.start() + 1, byte_pos + 1
    return positions


def raw_offset_mapper(invalid_positions: list[int]) -> Callable[[int], int]:
    """Map an offset in the UTF-8 of `decode_lossy`'s text back to an offset in the raw bytes.

    Every replaced byte grew from 1 to 3 bytes; an offset inside a replacement maps to the start
    of the invalid byte, so the mapping never moves past data.
    """
    if not invalid_positions:
        return lambda offset: offset
    starts = [raw + 2 * i for i, raw in enumerate(invalid_positions)]

    def to_raw(offset: int) -> int:
        i = bisect_right(starts, offset) - 1
        if i >= 0 and offset < starts[i] + _REPLACEMENT_UTF8_BYTES:
            return invalid_positions[i]
        return offset - 2 * (i + 1)

    return to_raw


def is_utf8_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def utf8_boundary_at_or_before(data: bytes | bytearray, pos: int, floor: int = 0) -> int:
    """`pos` moved back (by at most 3 bytes, never below `floor`) so it does not split a character.

    Invalid data may have longer runs of continuation bytes; we stop after 3 anyway, because the
    decoder replaces those bytes one by one and any cut between them is as good as another.
    """
    steps = 0
    while pos > floor and pos < len(data) and is_utf8_continuation(data[pos]) and steps < 3:
        pos, steps = pos - 1, steps + 1
    return pos


_BUILT_TABLES: set[str] = set()


@lru_cache(maxsize=4)
def token_byte_lengths(encoding_name: str) -> tuple[int, ...]:
    """Byte length of every token id, so token boundaries become byte offsets without decoding."""
    encoding = get_encoding(encoding_name)
    lengths = []
    for token in range(encoding.n_vocab):
        try:
            lengths.append(len(encoding.decode_single_token_bytes(token)))
        except KeyError:
            lengths.append(0)
    _BUILT_TABLES.add(encoding_name)
    return tuple(lengths)


def token_byte_lengths_built(encoding_name: str) -> bool:
    """Whether this process already paid for `token_byte_lengths(encoding_name)` (a worker builds it at warm-up)."""
    return encoding_name in _BUILT_TABLES
