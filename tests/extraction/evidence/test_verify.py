"""The verifier on a real byte stream: ranged reads through the line index, every citation an item, none dropped."""

from __future__ import annotations

from extraction.documents.lines import build_line_index
from extraction.evidence.citations import Citation
from extraction.evidence.model import Match, SourceKind
from extraction.evidence.summary import all_verified, sources_line, unverified_warning
from extraction.evidence.verify import verify_all
from extraction.evidence.window import read_window

DATA = "".join(f"{n:06d} event kind={'error' if n == 2500 else 'ok'} value={n * 7}\n" for n in range(1, 50001)).encode()


class CountingReader:
    """Bytes in memory, counting what is read: the verifier must read windows, not the output."""

    def __init__(self, data: bytes) -> None:
        self.data, self.read = data, 0

    def size(self, key: str) -> int:
        return len(self.data)

    def read_range(self, key: str, start: int, end: int) -> bytes:
        chunk = self.data[start:end]
        self.read += len(chunk)
        return chunk


def check(citations: list[Citation], data: bytes = DATA, every: int = 64):
    reader, index = CountingReader(data), build_line_index([data], every=every)
    items = verify_all(citations, lambda a, b: read_window(reader, "k", index, a, b), index.lines)
    return items, reader


def test_a_true_quote_verifies_with_its_byte_range_and_little_is_read():
    items, reader = check([Citation(start_line=2500, end_line=2500, quote="kind=error value=17500")])
    item = items[0]
    assert item.verified and item.match is Match.EXACT
    assert DATA[item.start_byte : item.end_byte] == b"002500 event kind=error value=17500\n"
    assert reader.read < len(DATA) // 10


def test_every_citation_becomes_an_item_verified_or_not_with_a_reason():
    cited = [
        Citation(start_line=2500, end_line=2500, quote="kind=error"),
        Citation(start_line=10, end_line=10, quote="kind=error value=70"),  # invented: line 10 is ok
        Citation(start_line=90000, end_line=90000, quote="anything"),
        Citation(start_line=2503, end_line=2503, quote="kind=error value=17500"),  # 3 lines off
    ]
    items, _ = check(cited)
    assert [i.verified for i in items] == [True, False, False, True]
    assert "not on lines 10" in items[1].why and "not in the output" in items[2].why
    assert (items[3].start_line, items[3].match, items[3].shift) == (2500, Match.REANCHORED, -3)
    assert not all_verified(items)
    warning = unverified_warning(items)
    assert warning.startswith("WARNING: 2 quote(s)") and "L10-L10" in warning
    assert sources_line(items) == "SOURCES: L2500, L10?, L90000?, L2500 (2 of 4 quotes verified)"


def test_a_quote_outside_what_its_chunk_showed_is_refused_even_if_true():
    cited = Citation(
        start_line=2500, end_line=2500, quote="kind=error", source=SourceKind.CHUNK, chunk=2, allowed=[(1, 1000)]
    )
    item = check([cited])[0][0]
    assert not item.verified and "lies outside what chunk 2 showed (lines 1-1000)" in item.why


def test_a_quote_across_its_chunks_edge_is_refused():
    cited = Citation(
        start_line=1000,
        end_line=1001,
        quote="value=7000 001001 event",
        source=SourceKind.CHUNK,
        chunk=1,
        allowed=[(1, 1000)],
    )
    item = check([cited])[0][0]
    assert not item.verified and "crosses the edge of what chunk 1 showed" in item.why


def test_a_line_longer_than_the_read_bound_is_reported_not_guessed():
    data = b"short\n" + b"x" * (5 << 20) + b"\nend\n"
    item = check([Citation(start_line=2, end_line=2, quote="xxxx")], data)[0][0]
    assert not item.verified and "too long to check" in item.why


def test_crlf_lines_and_the_last_line_without_newline():
    data = b"a first\r\nsecond line\r\nthird"
    items, _ = check(
        [Citation(start_line=2, end_line=2, quote="second line"), Citation(start_line=3, end_line=3, quote="third")],
        data,
        every=1,
    )
    assert all(i.verified for i in items)
    assert data[items[1].start_byte : items[1].end_byte] == b"third"
