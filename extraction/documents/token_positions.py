"""Translate between token positions and byte offsets of a stored document, through its `TokenIndex`.

The index knows the exact token count at every piece boundary. Inside a piece, the piece is
read (one ranged read) and re-encoded exactly as the stats pass encoded it, which gives the byte
offset of every token boundary in it. Pieces are cached, because consecutive chunk cuts (the end
of one chunk, the start of the next) usually land in the same piece.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate
from typing import TypeVar

from extraction.documents.stats import TokenIndex
from extraction.documents.tokens import (
    decode_lossy,
    get_encoding,
    invalid_byte_positions,
    is_utf8_continuation,
    raw_offset_mapper,
    token_byte_lengths,
    token_byte_lengths_built,
    utf8_boundary_at_or_before,
)
from extraction.errors import ExtractionError

RangeReader = Callable[[int, int], bytes]
"""`read(start, end) -> bytes`: bytes [start, end) of the document."""

CACHED_PIECES = 8
V = TypeVar("V")
TABLE_AFTER_PIECES = 200
"""Pieces a run re-encodes before a token-length table pays for itself (see `token_boundaries`); a process
that built the table already (a worker, at warm-up) uses it from the first piece."""


@dataclass(frozen=True)
class Position:
    """A byte offset on a character boundary and the tokens around it.

    `tokens_before` counts tokens that end at or before the offset, `tokens_until` those that
    start before it; they differ only when the offset falls inside a token. A chunk [a, b) is
    charged `b.tokens_until - a.tokens_before`, which never undercounts.
    """

    offset: int
    tokens_before: int
    tokens_until: int


@dataclass(frozen=True)
class EncodedPiece:
    """One piece's raw bytes and the absolute byte offset of each of its token boundaries."""

    start: int
    raw: bytes
    boundaries: list[int]

    def char_boundary_at_or_before(self, offset: int) -> int:
        return self.start + utf8_boundary_at_or_before(self.raw, offset - self.start)


def token_boundaries(raw: bytes, start: int, encoding_name: str, *, with_table: bool = False) -> list[int]:
    """Absolute byte offsets of the token boundaries of `raw` (first = start, last = its end).

    Token byte lengths come from decoding the tokens, or from a per-encoding table once a run
    has encoded enough pieces to repay building it.
    """
    text, invalid = decode_lossy(raw)
    encoding = get_encoding(encoding_name)
    tokens = encoding.encode_ordinary(text)
    if with_table:
        lengths = map(token_byte_lengths(encoding_name).__getitem__, tokens)
    else:
        lengths = map(len, encoding.decode_tokens_bytes(tokens))
    if not invalid:  # the common case: absolute offsets straight from the lengths (no per-token Python step)
        return list(accumulate(lengths, initial=start))
    relative: Iterable[int] = map(raw_offset_mapper(invalid_byte_positions(raw)), accumulate(lengths, initial=0))
    return [start + offset for offset in relative]


class TokenPositions:
    """Token ↔ byte arithmetic over one document, reading only the pieces it needs."""

    def __init__(self, index: TokenIndex, read: RangeReader) -> None:
        self.index = index
        self._read = read
        self._raw: OrderedDict[int, bytes] = OrderedDict()
        self._encoded: OrderedDict[int, EncodedPiece] = OrderedDict()
        self.pieces_read = self.pieces_encoded = 0

    @property
    def size(self) -> int:
        return self.index.size

    @property
    def total_tokens(self) -> int:
        return self.index.total_tokens

    def piece_holding_token(self, token: int) -> int:
        return self._clamp_piece(bisect_right(self.index.tokens, token) - 1)

    def piece_holding_byte(self, offset: int) -> int:
        return self._clamp_piece(bisect_right(self.index.offsets, offset) - 1)

    def _clamp_piece(self, piece: int) -> int:
        return min(max(piece, 0), max(self.index.piece_count - 1, 0))

    def piece_boundary(self, piece: int) -> Position:
        """The exact position of the start of `piece` (or of the end sentinel)."""
        tokens = self.index.tokens[piece]
        return Position(self.index.offsets[piece], tokens, tokens)

    def raw(self, piece: int) -> bytes:
        """The bytes of `piece` (one ranged read while it stays among the recently used)."""
        if piece in self._raw:
            self._raw.move_to_end(piece)
            return self._raw[piece]
        start, end = self.index.offsets[piece], self.index.offsets[piece + 1]
        raw = bytes(self._read(start, end))
        if len(raw) != end - start:
            raise ExtractionError(
                f"document changed under its token index: read {start}:{end} gave {len(raw)} bytes",
                start=start,
                end=end,
                got=len(raw),
            )
        self.pieces_read += 1
        _remember(self._raw, piece, raw)
        return raw

    def encoded(self, piece: int) -> EncodedPiece:
        """Piece `piece` re-encoded exactly as the stats pass encoded it (cached like `raw`)."""
        if piece in self._encoded:
            self._encoded.move_to_end(piece)
            return self._encoded[piece]
        start = self.index.offsets[piece]
        raw = self.raw(piece)
        encoding = self.index.encoding
        with_table = self.pieces_encoded >= TABLE_AFTER_PIECES or token_byte_lengths_built(encoding)
        encoded = EncodedPiece(start, raw, token_boundaries(raw, start, encoding, with_table=with_table))
        self.pieces_encoded += 1
        _remember(self._encoded, piece, encoded)
        return encoded

    def piece_ends_with_newline(self, piece: int) -> bool:
        """Whether `piece` ends with '\\n', reading one byte unless the piece is cached."""
        if piece in self._raw:
            return self._raw[piece].endswith(b"\n")
        end = self.index.offsets[piece + 1]
        return bytes(self._read(end - 1, end)) == b"\n"

    def at_token(self, token: int) -> Position:
        """The last character boundary at or before the boundary of token `token`."""
        if token >= self.total_tokens:
            return self.piece_boundary(self.index.piece_count)
        piece = self.piece_holding_token(token)
        if token <= self.index.tokens[piece]:
            return self.piece_boundary(piece)
        encoded = self.encoded(piece)
        k = min(token - self.index.tokens[piece], len(encoded.boundaries) - 1)
        return self.at_byte(encoded.char_boundary_at_or_before(encoded.boundaries[k]))

    def at_byte(self, offset: int) -> Position:
        """The position of byte `offset` (expected on a character boundary)."""
        if offset >= self.size:
            return self.piece_boundary(self.index.piece_count)
        piece = self.piece_holding_byte(offset)
        if offset == self.index.offsets[piece]:
            return self.piece_boundary(piece)
        encoded = self.encoded(piece)
        base = self.index.tokens[piece]
        before = bisect_right(encoded.boundaries, offset) - 1
        until = bisect_left(encoded.boundaries, offset)
        return Position(offset, base + before, base + until)

    def next_char_boundary(self, offset: int) -> int:
        """The first character boundary after `offset` (at most 4 bytes on)."""
        piece = self.piece_holding_byte(offset)
        start, raw = self.index.offsets[piece], self.raw(piece)
        relative = offset - start + 1
        while relative < len(raw) and relative - (offset - start) < 4 and is_utf8_continuation(raw[relative]):
            relative += 1
        return start + relative


def _remember(cache: OrderedDict[int, V], key: int, value: V) -> None:
    cache[key] = value
    if len(cache) > CACHED_PIECES:
        cache.popitem(last=False)
