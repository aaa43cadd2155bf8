"""Document stats and the token index, measured in one streaming pass.

A stored output can be a gigabyte, so nothing here holds the whole document: `StatsCounter`
is fed byte blocks, cuts them into pieces (≤ `piece_bytes`, ending on a newline when the piece
holds one, otherwise on a UTF-8 character boundary) and tokenizes the pieces in parallel
batches. The pieces it tokenized become the `TokenIndex`, which later lets the chunk planner
find any token position with one ranged read of one piece instead of re-tokenizing everything.

Piece boundaries depend only on the document, never on how it was split into blocks, so the
same bytes always give the same stats and index.

Conventions:
* `lines` is the number of '\\n' bytes, plus one when the data is non-empty and does not end
  with '\\n' (an unterminated last line still counts; an empty document has 0 lines).
* `tokens` is the sum of the pieces' token counts. Tokenizing the whole text at once may differ
  by a few tokens at piece boundaries; the index and the stats agree with each other exactly.
* Invalid UTF-8 never raises: each bad byte is tokenized as U+FFFD and `invalid_utf8` is set.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from itertools import accumulate, pairwise

from pydantic import BaseModel, model_serializer, model_validator

from extraction.documents.tokens import (
    DEFAULT_ENCODING,
    CountBatch,
    decode_lossy,
    tiktoken_counter,
    utf8_boundary_at_or_before,
)
from extraction.errors import Conflict, InvalidInput

PIECE_BYTES = 16 << 10
"""Largest tokenized piece. Small pieces make the chunk planner nearly free: a 10% snap window of
a typical chunk (≥ 40k tokens) always holds a piece boundary, whose token count the index knows,
and when it must re-encode a piece that costs ~1.5 ms. The index stays small (64k entries per GB,
about 0.7 MB of JSON) and tiktoken's per-call overhead is still negligible at this size."""

BATCH_BYTES = 1 << 20
"""Text handed to one `encode_ordinary_batch` call; bounds the token lists alive at once (~10 MB)."""

MIN_PIECE_BYTES = 16


class DocumentStats(BaseModel):
    """What the mode choice, the oversize message and the prompts need to know about a document."""

    bytes: int
    lines: int
    tokens: int
    avg_line_bytes: float
    sha256: str
    invalid_utf8: bool = False
    encoding: str = DEFAULT_ENCODING


class TokenIndex(BaseModel):
    """Cumulative token counts at the start of each tokenized piece.

    `offsets[i]` is the byte offset where piece i starts and `tokens[i]` the tokens before it.
    The last entry is a sentinel for the end of the document (`offsets[-1]` = size,
    `tokens[-1]` = total), so piece i spans `offsets[i]:offsets[i+1]`. An empty document has
    just the sentinel `[0]`, `[0]`.

    Serialised compactly as differences (`offset_steps`, `token_steps`): piece sizes and piece
    token counts are 4-5 digit numbers where absolute offsets of a 1 GB document take 10.
    Validation accepts both that form and the plain `offsets`/`tokens` lists.
    """

    encoding: str
    offsets: list[int]
    tokens: list[int]

    @model_validator(mode="before")
    @classmethod
    def _from_steps(cls, data: object) -> object:
        if isinstance(data, dict) and "offset_steps" in data:
            return {
                "encoding": data.get("encoding"),
                "offsets": list(accumulate(data["offset_steps"])),
                "tokens": list(accumulate(data.get("token_steps", []))),
            }
        return data

    @model_serializer(mode="plain")
    def _to_steps(self) -> dict[str, object]:
        return {"encoding": self.encoding, "offset_steps": _steps(self.offsets), "token_steps": _steps(self.tokens)}

    @model_validator(mode="after")
    def _consistent(self) -> TokenIndex:
        if not self.offsets or len(self.offsets) != len(self.tokens):
            raise ValueError("offsets and tokens must be non-empty and of equal length")
        if self.offsets[0] != 0 or self.tokens[0] != 0:
            raise ValueError("the index must start at byte 0 with 0 tokens")
        if any(b <= a for a, b in pairwise(self.offsets)):
            raise ValueError("offsets must be strictly increasing")
        if any(b < a for a, b in pairwise(self.tokens)):
            raise ValueError("cumulative tokens must not decrease")
        return self

    @property
    def size(self) -> int:
        return self.offsets[-1]

    @property
    def total_tokens(self) -> int:
        return self.tokens[-1]

    @property
    def piece_count(self) -> int:
        return len(self.offsets) - 1


def _steps(values: list[int]) -> list[int]:
    return [b - a for a, b in zip([0, *values], values, strict=False)]


class Measured(BaseModel):
    """The result of one pass: the stats and the index built alongside them."""

    stats: DocumentStats
    index: TokenIndex


def default_threads() -> int:
    """One tokenizer thread per core, capped: beyond 8 the batches are too small to share."""
    return max(1, min(8, os.cpu_count() or 1))


def next_piece_end(buffer: bytes | bytearray, start: int, piece_bytes: int) -> int:
    """End of the piece starting at `start`, given more than `piece_bytes` bytes follow it.

    The piece ends after the last newline in its window, else on a character boundary; the
    decision reads only the window, which is why block boundaries never change it.
    """
    window_end = start + piece_bytes
    newline = buffer.rfind(b"\n", start, window_end)
    if newline >= 0:
        return newline + 1
    return utf8_boundary_at_or_before(buffer, window_end, floor=start + 1)


def piece_ends(buffer: bytes | bytearray, piece_bytes: int, *, final: bool) -> list[int]:
    """Ends of the pieces `buffer` can be cut into now; with `final`, the tail becomes the last piece."""
    ends, start = [], 0
    while len(buffer) - start > piece_bytes:
        start = next_piece_end(buffer, start, piece_bytes)
        ends.append(start)
    if final and start < len(buffer):
        ends.append(len(buffer))
    return ends


def group_into_batches(ends: list[int], batch_bytes: int) -> list[list[int]]:
    """Consecutive runs of piece ends spanning about `batch_bytes` each."""
    batches, current, batch_start = [], [], 0
    for end in ends:
        current.append(end)
        if end - batch_start >= batch_bytes:
            batches.append(current)
            current, batch_start = [], end
    if current:
        batches.append(current)
    return batches


class StatsCounter:
    """Streams a document once and measures it: bytes, lines, sha256, tokens and the token index."""

    def __init__(
        self,
        encoding_name: str = DEFAULT_ENCODING,
        *,
        threads: int | None = None,
        piece_bytes: int = PIECE_BYTES,
        batch_bytes: int = BATCH_BYTES,
        count_batch: CountBatch | None = None,
    ) -> None:
        """`count_batch` counts a batch of pieces (default: tiktoken on `threads` threads); see `CountBatch`."""
        if piece_bytes < MIN_PIECE_BYTES:
            raise InvalidInput(f"piece_bytes must be at least {MIN_PIECE_BYTES}", piece_bytes=piece_bytes)
        self.encoding_name = encoding_name
        self._count = count_batch or tiktoken_counter(encoding_name, threads=threads or default_threads())
        self._piece_bytes, self._batch_bytes = piece_bytes, max(batch_bytes, piece_bytes)
        self._sha = hashlib.sha256()
        self._size = self._newlines = self._pending_start = self._tokens = 0
        self._last_byte: int | None = None
        self._invalid = self._finished = False
        self._pending = bytearray()
        self._offsets, self._cumulative = [0], [0]

    def feed(self, block: bytes | bytearray | memoryview) -> None:
        """Account for the next block of the document; blocks may be of any size, even empty."""
        if self._finished:
            raise Conflict("StatsCounter.feed called after finish()")
        view = memoryview(block)
        self._sha.update(view)
        self._size += len(view)
        for offset in range(0, len(view), self._batch_bytes):
            self._append(view[offset : offset + self._batch_bytes])

    def _append(self, part: memoryview) -> None:
        """Take a batch-sized part at a time, so a huge block never sits in the buffer twice."""
        before = len(self._pending)
        self._pending += part
        self._newlines += self._pending.count(b"\n", before)
        self._last_byte = self._pending[-1]
        if len(self._pending) >= self._batch_bytes + self._piece_bytes:
            self._tokenize_pending(final=False)

    def finish(self) -> Measured:
        """Tokenize what is left and return the stats with the index; the counter is then spent."""
        if self._finished:
            raise Conflict("StatsCounter.finish called twice")
        self._tokenize_pending(final=True)
        self._finished = True
        return Measured(stats=self._stats(), index=self._index())

    def _tokenize_pending(self, *, final: bool) -> None:
        ends = piece_ends(self._pending, self._piece_bytes, final=final)
        consumed = 0
        for batch in group_into_batches(ends, self._batch_bytes):
            self._tokenize_batch(consumed, batch)
            consumed = batch[-1]
        del self._pending[:consumed]
        self._pending_start += consumed

    def _tokenize_batch(self, start: int, ends: list[int]) -> None:
        texts = []
        for end in ends:
            text, invalid = decode_lossy(self._pending[start:end])
            texts.append(text)
            self._invalid |= invalid
            start = end
        counts = self._count(texts)
        for end, count in zip(ends, counts, strict=True):
            self._tokens += count
            self._offsets.append(self._pending_start + end)
            self._cumulative.append(self._tokens)

    def _lines(self) -> int:
        unterminated = self._size > 0 and self._last_byte != ord("\n")
        return self._newlines + int(unterminated)

    def _stats(self) -> DocumentStats:
        lines = self._lines()
        return DocumentStats(
            bytes=self._size,
            lines=lines,
            tokens=self._tokens,
            avg_line_bytes=self._size / lines if lines else 0.0,
            sha256=self._sha.hexdigest(),
            invalid_utf8=self._invalid,
            encoding=self.encoding_name,
        )

    def _index(self) -> TokenIndex:
        return TokenIndex(encoding=self.encoding_name, offsets=self._offsets, tokens=self._cumulative)


def measure(
    blocks: Iterable[bytes],
    encoding_name: str = DEFAULT_ENCODING,
    *,
    threads: int | None = None,
    piece_bytes: int = PIECE_BYTES,
    count_batch: CountBatch | None = None,
) -> Measured:
    """Measure a document given as an iterable of byte blocks (e.g. `BlobReader.iter_range`).

    `count_batch` replaces tiktoken for counting pieces (`infra.outputs.tokenizers.store_counter` at store time).
    """
    counter = StatsCounter(encoding_name, threads=threads, piece_bytes=piece_bytes, count_batch=count_batch)
    for block in blocks:
        counter.feed(block)
    return counter.finish()
