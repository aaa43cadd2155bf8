"""The chunk planner of full-chunked mode: byte ranges of even token size that cover the document.

Sizes are *rebalanced*: the chunk count n is estimated with the largest chunk the budget allows,
then the chunk size C is chosen so that C + (n − 1)·C·(1 − overlap) ≈ total tokens. Every chunk
is then about the same size and there is no tiny last chunk.

Cuts are placed on token boundaries using the `TokenIndex` (see `token_positions`), moved back to
a UTF-8 character boundary, and preferably onto a line boundary found in the last
`snap_fraction` of the chunk. A line boundary that is also an index piece boundary is preferred
over any other, because its token count is known without reading or re-encoding anything. The
next chunk starts about `overlap` of a chunk before the previous end (± `snap_fraction`/2 to
land on a line start), and the chunk plan adapts after each cut so snapping never leaves a remainder.

Guarantees (property-tested): chunk 0 starts at 0, the last chunk ends at `size`, consecutive
chunks overlap or touch (every byte is in some chunk), every chunk has at least one byte, and
every chunk's token count — tokens starting in it, counted with the index — is within budget.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from pydantic import BaseModel

from extraction.documents.stats import TokenIndex
from extraction.documents.token_positions import Position, RangeReader, TokenPositions
from extraction.errors import ChunkBudgetError, InvalidInput

MIN_CHUNK_TOKENS = 256
"""Below this, chunks hold too little text for a useful map call; the model is the wrong one."""

MIN_PLAN_TOKENS = 8
"""The planner's hard floor: one character may take 4 tokens, and a chunk must hold a character."""

MAX_OVERLAP = 0.5
MAX_SNAP_FRACTION = 0.5
PIECE_BOUNDARY_TOLERANCE = 0.05
"""A non-line piece boundary may replace an exact cut within this share of the snap window (0.5% of
a chunk by default): small enough that the shifts do not add up to an extra chunk."""
NEWLINE_BOUNDARY_CHECKS = 4
"""How many piece boundaries in a cut window are probed for a preceding newline (1-byte reads)."""


class Chunk(BaseModel):
    """Bytes [start, end) of the document, the `index`-th chunk (0-based), holding `tokens` tokens."""

    index: int
    start: int
    end: int
    tokens: int


def chunk_budget(max_context_tokens: int, max_output_tokens: int, prompt_tokens: int) -> int:
    """Tokens one chunk may take: the context minus the reserved answer and the prompt around it."""
    for name, value in (
        ("max_context_tokens", max_context_tokens),
        ("max_output_tokens", max_output_tokens),
        ("prompt_tokens", prompt_tokens),
    ):
        if value < 0:
            raise InvalidInput(f"{name} must not be negative, got {value}", **{name: value})
    budget = max_context_tokens - max_output_tokens - prompt_tokens
    if budget < MIN_CHUNK_TOKENS:
        raise ChunkBudgetError(
            f"no room for a chunk: context {max_context_tokens} − output {max_output_tokens} − prompt {prompt_tokens}"
            f" = {budget} tokens, need at least {MIN_CHUNK_TOKENS}",
            max_context_tokens=max_context_tokens,
            max_output_tokens=max_output_tokens,
            prompt_tokens=prompt_tokens,
            budget_tokens=budget,
            minimum=MIN_CHUNK_TOKENS,
        )
    return budget


def normalize_fraction(name: str, value: float, cap: float) -> float:
    """`value` capped at `cap`; negative or NaN values are a caller mistake."""
    if math.isnan(value) or value < 0:
        raise InvalidInput(f"{name} must be between 0 and {cap}, got {value}", **{name: value})
    return min(value, cap)


def estimate_chunk_count(total_tokens: int, budget_tokens: int, overlap: float = 0.10) -> int:
    """Chunks needed when each takes the full budget: the least n with B + (n − 1)·B·(1 − overlap) ≥ total."""
    overlap = normalize_fraction("overlap", overlap, MAX_OVERLAP)
    if budget_tokens < 1:
        raise ChunkBudgetError(f"chunk budget must be positive, got {budget_tokens}", budget_tokens=budget_tokens)
    if total_tokens <= budget_tokens:
        return 1
    step = budget_tokens * (1 - overlap)
    return 1 + math.ceil((total_tokens - budget_tokens) / step - 1e-9)


def rebalanced_chunk_tokens(total_tokens: int, count: int, overlap: float) -> int:
    """The even chunk size C with C + (count − 1)·C·(1 − overlap) ≈ total (rounded up)."""
    return max(1, math.ceil(total_tokens / (1 + (count - 1) * (1 - overlap)) - 1e-9))


def plan_chunks(
    index: TokenIndex,
    read: RangeReader,
    *,
    size: int,
    budget_tokens: int,
    overlap: float = 0.10,
    snap_fraction: float = 0.10,
) -> list[Chunk]:
    """Plan the chunks of a `size`-byte document; `read(start, end)` is a ranged read of it.

    Reads only the index pieces holding cut points (a few per chunk at most). An empty document
    gives one empty chunk, so callers never special-case zero chunks.
    """
    if index.size != size:
        raise InvalidInput(
            f"token index covers {index.size} bytes but the document has {size}", index_bytes=index.size, size=size
        )
    if budget_tokens < MIN_PLAN_TOKENS:
        raise ChunkBudgetError(
            f"chunk budget of {budget_tokens} tokens is below the minimum of {MIN_PLAN_TOKENS}",
            budget_tokens=budget_tokens,
        )
    planner = _Planner(
        TokenPositions(index, read),
        budget_tokens,
        normalize_fraction("overlap", overlap, MAX_OVERLAP),
        normalize_fraction("snap_fraction", snap_fraction, MAX_SNAP_FRACTION),
    )
    return planner.plan()


@dataclass(frozen=True)
class _Window:
    """Where a cut may go: token range [lo, hi] and byte range (after, limit].

    Without a line boundary there, the cut goes to the `exact` token, or to a piece boundary
    within `tolerance` tokens of it (no re-encoding needed; the small shift hardly moves the chunk plan).
    """

    lo: int
    hi: int
    exact: int
    after: int
    limit: int
    tolerance: int


class _Planner:
    """One planning run: walks the document once, cutting chunk after chunk."""

    def __init__(self, positions: TokenPositions, budget: int, overlap: float, snap_fraction: float) -> None:
        self.positions, self.budget, self.overlap, self.snap = positions, budget, overlap, snap_fraction
        self.total = positions.total_tokens

    def plan(self) -> list[Chunk]:
        chunks: list[Chunk] = []
        start = end = Position(0, 0, 0)
        remaining = estimate_chunk_count(self.total, self.budget, self.overlap)
        while True:
            left = self.total - start.tokens_before
            remaining = max(remaining, estimate_chunk_count(left, self.budget, self.overlap))
            chunk_tokens = rebalanced_chunk_tokens(left, remaining, self.overlap)
            if remaining == 1 or start.tokens_before + chunk_tokens >= self.total:
                end = self.positions.piece_boundary(self.positions.index.piece_count)
            else:
                end = self._cut_end(start, end, chunk_tokens)
            chunks.append(self._chunk(len(chunks), start, end))
            if end.offset >= self.positions.size:
                return chunks
            start = self._next_start(start, end, chunk_tokens)
            remaining -= 1

    @staticmethod
    def _chunk(number: int, start: Position, end: Position) -> Chunk:
        return Chunk(index=number, start=start.offset, end=end.offset, tokens=end.tokens_until - start.tokens_before)

    def _cut_end(self, start: Position, previous_end: Position, chunk_tokens: int) -> Position:
        """The end of a chunk of about `chunk_tokens` from `start`, past `previous_end`.

        Within ± snap/2 of the target, never over budget.
        """
        target = start.tokens_before + chunk_tokens
        half_window = int(chunk_tokens * self.snap / 2)
        ceiling = min(target + half_window, start.tokens_before + self.budget)
        after = max(start.offset, previous_end.offset)
        window = _Window(
            target - half_window, ceiling, target, after, self.positions.size, self._tolerance(chunk_tokens)
        )
        return self._cut(window) or self._smallest_step(start, after)

    def _smallest_step(self, start: Position, after: int) -> Position:
        """One character past `after` (the previous end), or past `start` if that would break the budget.

        Only reached with budgets of a few tokens, where one character can be several tokens.
        """
        candidate = self.positions.at_byte(self.positions.next_char_boundary(after))
        if candidate.tokens_until - start.tokens_before <= self.budget or after == start.offset:
            return candidate
        return self.positions.at_byte(self.positions.next_char_boundary(start.offset))

    def _next_start(self, start: Position, end: Position, chunk_tokens: int) -> Position:
        """Where the next chunk starts: `overlap` of a chunk before `end`, at a line start if one is near."""
        overlap_tokens = round(chunk_tokens * self.overlap)
        target = end.tokens_before - overlap_tokens
        if overlap_tokens == 0 or target <= start.tokens_until:
            return end
        half_window = int(chunk_tokens * self.snap / 2)
        ceiling = min(target + half_window, end.tokens_before)
        window = _Window(target - half_window, ceiling, target, start.offset, end.offset, self._tolerance(chunk_tokens))
        return self._cut(window) or end

    def _tolerance(self, chunk_tokens: int) -> int:
        return int(chunk_tokens * self.snap * PIECE_BOUNDARY_TOLERANCE)

    def _cut(self, window: _Window) -> Position | None:
        """A line boundary in the window if there is one, else a piece boundary, else the exact token."""
        return (
            self._newline_piece_boundary(window)
            or self._newline_inside_piece(window)
            or self._closest_piece_boundary(window)
            or self._exact(window)
        )

    def _boundaries_in(self, window: _Window) -> list[int]:
        """Index pieces whose start lies in the window, latest first."""
        tokens, offsets = self.positions.index.tokens, self.positions.index.offsets
        first = max(1, bisect_left(tokens, window.lo))
        last = min(self.positions.index.piece_count - 1, bisect_right(tokens, window.hi) - 1)
        return [j for j in range(last, first - 1, -1) if window.after < offsets[j] <= window.limit]

    def _newline_piece_boundary(self, window: _Window) -> Position | None:
        for piece in self._boundaries_in(window)[:NEWLINE_BOUNDARY_CHECKS]:
            if self.positions.piece_ends_with_newline(piece - 1):
                return self.positions.piece_boundary(piece)
        return None

    def _newline_inside_piece(self, window: _Window) -> Position | None:
        """The last line start in the piece holding `hi`, between `lo` and `hi`."""
        positions = self.positions
        piece = positions.piece_holding_token(window.hi)
        piece_start, raw = positions.index.offsets[piece], positions.raw(piece)
        if b"\n" not in raw:
            return None
        upper = min(positions.at_token(window.hi).offset, window.limit)
        lower = max(piece_start, window.after)
        if positions.index.tokens[piece] < window.lo:
            lower = max(lower, positions.at_token(window.lo).offset)
        newline = raw.rfind(b"\n", lower - piece_start, upper - piece_start)
        return positions.at_byte(piece_start + newline + 1) if newline >= 0 else None

    def _closest_piece_boundary(self, window: _Window) -> Position | None:
        """A piece boundary within `tolerance` of the exact token: as good as exact, and free."""
        tokens = self.positions.index.tokens
        pieces = [j for j in self._boundaries_in(window) if abs(tokens[j] - window.exact) <= window.tolerance]
        if not pieces:
            return None
        return self.positions.piece_boundary(min(pieces, key=lambda j: abs(tokens[j] - window.exact)))

    def _exact(self, window: _Window) -> Position | None:
        found = self.positions.at_token(window.exact)
        return found if window.after < found.offset <= window.limit else None
