"""The chunk planner: budgets, rebalanced counts, and cuts that cover every byte within budget."""

from itertools import pairwise

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extraction.documents.chunking import (
    Chunk,
    chunk_budget,
    estimate_chunk_count,
    plan_chunks,
    rebalanced_chunk_tokens,
)
from extraction.documents.stats import PIECE_BYTES, measure
from extraction.documents.tokens import get_encoding
from extraction.errors import ChunkBudgetError, InvalidInput

ENCODING = get_encoding("o200k_base")
MULTILINE = [
    "word ",
    "other words ",
    "\n",
    "é",
    "日本語",
    "😀",
    '{"k": [1, 2]}',
    "\t",
    "12345 ",
    "x\n",
    "long-ish sentence here. ",
]
SINGLE_LINE = [f for f in MULTILINE if "\n" not in f]
NEWLINE_HEAVY = ["\n", "\n\n", "a\n", "é\n", " \n"]


def document(fragments: list[str], min_size: int = 0):
    return st.lists(st.sampled_from(fragments), min_size=min_size, max_size=600).map(
        lambda parts: "".join(parts).encode()
    )


any_document = st.one_of(document(MULTILINE), document(SINGLE_LINE), document(NEWLINE_HEAVY))


class CountingReader:
    """A ranged reader over bytes that remembers what was read."""

    def __init__(self, data: bytes) -> None:
        self.data, self.reads = data, []

    def __call__(self, start: int, end: int) -> bytes:
        self.reads.append((start, end))
        return self.data[start:end]


def plan(
    data: bytes, budget: int, *, piece_bytes: int = 64, overlap: float = 0.10, snap: float = 0.10, reader=None
) -> list[Chunk]:
    index = measure([data], piece_bytes=piece_bytes).index
    return plan_chunks(
        index, reader or CountingReader(data), size=len(data), budget_tokens=budget, overlap=overlap, snap_fraction=snap
    )


def assert_covering(chunks: list[Chunk], size: int) -> None:
    assert chunks[0].start == 0 and chunks[-1].end == size
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for previous, current in pairwise(chunks):
        assert previous.start < current.start <= previous.end < current.end


# --- budget and counts -------------------------------------------------------------------------
def test_chunk_budget_is_context_minus_output_minus_prompt() -> None:
    assert chunk_budget(128_000, 16_000, 2_000) == 110_000


@pytest.mark.parametrize(
    ("context", "output", "prompt"), [(8_000, 8_000, 500), (1_000, 500, 300), (4_000, 3_000, 1_000)]
)
def test_chunk_budget_refuses_no_or_tiny_room_and_says_why(context: int, output: int, prompt: int) -> None:
    with pytest.raises(ChunkBudgetError) as caught:
        chunk_budget(context, output, prompt)
    assert str(context) in caught.value.message and str(prompt) in caught.value.message
    assert caught.value.details["budget_tokens"] == context - output - prompt


def test_chunk_budget_rejects_negative_inputs() -> None:
    with pytest.raises(InvalidInput):
        chunk_budget(10_000, -1, 0)


@pytest.mark.parametrize(
    ("total", "budget", "overlap", "count"),
    [
        (0, 1000, 0.1, 1),
        (1000, 1000, 0.1, 1),
        (1001, 1000, 0.1, 2),
        (1900, 1000, 0.1, 2),
        (1901, 1000, 0.1, 3),
        (10_000, 1000, 0.0, 10),
        (10_001, 1000, 0.0, 11),
        (1500, 1000, 0.5, 2),
        (1501, 1000, 0.5, 3),
    ],
)
def test_estimate_uses_the_full_budget_with_overlap(total: int, budget: int, overlap: float, count: int) -> None:
    assert estimate_chunk_count(total, budget, overlap) == count


def test_overlap_is_capped_at_half_and_never_negative() -> None:
    assert estimate_chunk_count(10_000, 1000, 0.9) == estimate_chunk_count(10_000, 1000, 0.5) == 19
    with pytest.raises(InvalidInput):
        estimate_chunk_count(10_000, 1000, -0.1)
    with pytest.raises(InvalidInput):
        plan(b"some text", 100, overlap=float("nan"))


def test_rebalanced_size_spreads_tokens_evenly() -> None:
    # 1901 tokens need 3 chunks of the 1000 budget; evenly, C + 2·0.9·C ≈ 1901 → C = 679
    size = rebalanced_chunk_tokens(1901, 3, 0.1)
    assert size == 679 and size + 2 * size * 0.9 >= 1901


# --- plans -------------------------------------------------------------------------------------
def test_a_document_within_budget_is_one_chunk() -> None:
    data = b"short document\n"
    tokens = len(ENCODING.encode_ordinary(data.decode()))
    assert plan(data, 1000) == [Chunk(index=0, start=0, end=len(data), tokens=tokens)]


def test_an_empty_document_is_one_empty_chunk() -> None:
    assert plan(b"", 100) == [Chunk(index=0, start=0, end=0, tokens=0)]


def test_two_chunks_are_even_and_overlap_by_about_a_tenth() -> None:
    data = "".join(f"line {i} of the report\n" for i in range(300)).encode()
    total = len(ENCODING.encode_ordinary(data.decode()))
    chunks = plan(data, budget=int(total * 0.6), piece_bytes=256)
    assert len(chunks) == 2
    assert_covering(chunks, len(data))
    first, second = chunks
    assert abs(first.tokens - second.tokens) <= 0.1 * first.tokens
    overlap_tokens = len(ENCODING.encode_ordinary(data[second.start : first.end].decode()))
    assert 0.04 * first.tokens <= overlap_tokens <= 0.16 * first.tokens
    assert all(data[c.start - 1 : c.start] in (b"", b"\n") and data[c.end - 1 : c.end] == b"\n" for c in chunks)


def test_cuts_snap_to_line_boundaries_inside_pieces_too() -> None:
    data = "".join(f"row {i}: value={i * 7}\n" for i in range(400)).encode()
    chunks = plan(data, budget=300, piece_bytes=4096)
    assert len(chunks) > 3
    assert all(data[c.end - 1 : c.end] == b"\n" for c in chunks)
    assert all(c.start == 0 or data[c.start - 1 : c.start] == b"\n" for c in chunks)


def test_no_overlap_makes_chunks_touch() -> None:
    data = ("token soup " * 2000).encode()
    chunks = plan(data, budget=500, overlap=0.0)
    assert_covering(chunks, len(data))
    assert all(a.end == b.start for a, b in pairwise(chunks))
    assert sum(c.tokens for c in chunks) == measure([data], piece_bytes=64).stats.tokens


@pytest.mark.parametrize("wanted", [1, 2, 500])
def test_any_chunk_count(wanted: int) -> None:
    data = ("lorem ipsum dolor sit amet, " * 12_000).encode()  # one long line
    total = measure([data], piece_bytes=4096).stats.tokens
    budget = max(8, -(-total // (1 + (wanted - 1) * 0.9)))
    chunks = plan(data, budget, piece_bytes=4096)
    expected = estimate_chunk_count(total, budget, 0.10)
    assert wanted - 3 <= expected <= wanted and len(chunks) in (expected, expected + 1)
    assert_covering(chunks, len(data))
    assert max(c.tokens for c in chunks) <= budget


def test_the_planner_reads_only_pieces_near_cuts() -> None:
    data = "".join(f"entry {i} {'x' * (i % 50)}\n" for i in range(20_000)).encode()
    reader = CountingReader(data)
    chunks = plan(data, budget=20_000, piece_bytes=8192, reader=reader)
    read_bytes = sum(end - start for start, end in reader.reads)
    assert len(chunks) >= 5
    assert len(reader.reads) <= 4 * len(chunks) and read_bytes <= 2 * 8192 * len(chunks)


def test_index_and_document_size_must_agree() -> None:
    index = measure([b"abc"]).index
    with pytest.raises(InvalidInput):
        plan_chunks(index, lambda a, b: b"", size=4, budget_tokens=100)
    with pytest.raises(ChunkBudgetError):
        plan_chunks(index, lambda a, b: b"", size=3, budget_tokens=7)


# --- properties --------------------------------------------------------------------------------
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=any_document,
    budget=st.integers(8, 400),
    piece_bytes=st.integers(16, 200),
    overlap=st.sampled_from([0.0, 0.1, 0.25, 0.5]),
    snap=st.sampled_from([0.0, 0.1, 0.3]),
)
def test_every_byte_is_covered_and_no_chunk_exceeds_the_budget(
    data: bytes, budget: int, piece_bytes: int, overlap: float, snap: float
) -> None:
    chunks = plan(data, budget, piece_bytes=piece_bytes, overlap=overlap, snap=snap)
    assert_covering(chunks, len(data)) if data else None
    for chunk in chunks:
        text = data[chunk.start : chunk.end].decode("utf-8")  # cuts never split a character
        assert chunk.tokens <= budget
        assert len(ENCODING.encode_ordinary(text)) <= budget


@settings(max_examples=40, deadline=None)
@given(data=document(MULTILINE, min_size=200), budget=st.integers(60, 300))
def test_rebalancing_leaves_no_tiny_last_chunk(data: bytes, budget: int) -> None:
    chunks = plan(data, budget, piece_bytes=128)
    if len(chunks) > 1:
        estimate = estimate_chunk_count(measure([data], piece_bytes=128).stats.tokens, budget, 0.10)
        assert len(chunks) <= estimate + 2
        assert chunks[-1].tokens >= 0.4 * max(c.tokens for c in chunks)


@settings(max_examples=40, deadline=None)
@given(data=st.binary(min_size=1, max_size=1500), budget=st.integers(8, 120))
def test_invalid_utf8_plans_cover_everything(data: bytes, budget: int) -> None:
    chunks = plan(data, budget, piece_bytes=64)
    assert_covering(chunks, len(data))
    assert all(c.tokens <= budget for c in chunks)


# --- a large single line -----------------------------------------------------------------------
@pytest.mark.slow
def test_a_long_minified_json_line_is_measured_and_chunked() -> None:
    """One 12 MB line: 750 pieces, 500 chunks cut inside it. (The 50 MB log and the 20 MB line of
    `make demo`, and tests/integration/test_slice.py, run the same path at full size on the stack.)"""
    unit = b'{"id":12345,"name":"caf\xc3\xa9","tags":["x","y"],"n":-1.5e3},'
    data = b"[" + unit * (12_000_000 // len(unit)) + b"{}]"
    measured = measure(data[i : i + (8 << 20)] for i in range(0, len(data), 8 << 20))
    assert measured.stats.lines == 1
    assert max(b - a for a, b in pairwise(measured.index.offsets)) <= PIECE_BYTES
    total = measured.stats.tokens
    for wanted in (1, 2, 500):
        budget = -(-total // (1 + (wanted - 1) * 0.9))
        reader = CountingReader(data)
        chunks = plan_chunks(measured.index, reader, size=len(data), budget_tokens=budget)
        expected = estimate_chunk_count(total, budget, 0.10)
        assert wanted - 3 <= expected <= wanted and len(chunks) in (expected, expected + 1)
        assert_covering(chunks, len(data))
        assert all(c.tokens <= budget for c in chunks)
        assert sum(b - a for a, b in reader.reads) <= 3 * PIECE_BYTES * len(chunks)
    middle = chunks[len(chunks) // 2]
    exact = len(ENCODING.encode_ordinary(data[middle.start : middle.end].decode()))
    assert exact <= middle.tokens <= exact * 1.01  # the index counts pieces separately: a few tokens more
