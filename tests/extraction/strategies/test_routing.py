"""Mode choice (docs/spec/tool-output.md §Mode choice): auto picks full-chunked or read-grep; explicit modes win."""

import pytest

from extraction.errors import InvalidInput
from extraction.strategies.routing import Mode, RoutingDecision, route


def test_mode_values_are_the_tool_schema_enum_and_query() -> None:
    """Seed 002's enum, then `query` (offered to the model only when asked: `tool_output_tool(offer_query=True)`)."""
    assert [m.value for m in Mode] == ["auto", "full-chunked", "read-grep", "truncate", "query"]
    assert Mode.FULL_CHUNKED == "full-chunked"


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("auto", Mode.AUTO),
        (" Read-Grep ", Mode.READ_GREP),
        ("full_chunked", Mode.FULL_CHUNKED),
        (Mode.TRUNCATE, Mode.TRUNCATE),
    ],
)
def test_parse_accepts_the_values_leniently(text: str, mode: Mode) -> None:
    assert Mode.parse(text) is mode


def test_parse_lists_the_allowed_values() -> None:
    with pytest.raises(InvalidInput) as caught:
        Mode.parse("summarize")
    assert "auto, full-chunked, read-grep, truncate, query" in caught.value.message
    assert caught.value.details["allowed"] == ["auto", "full-chunked", "read-grep", "truncate", "query"]


def test_auto_takes_full_chunked_when_the_document_fits_the_chunk_limit() -> None:
    decision = route("auto", chunk_count=1, avg_line_bytes=52)
    assert decision == RoutingDecision(mode=Mode.FULL_CHUNKED, reason="auto: 1 chunk ≤ max_chunks_for_full_mode=1")


def test_auto_takes_full_chunked_for_long_lines_whatever_the_chunk_count() -> None:
    decision = route(Mode.AUTO, chunk_count=37, avg_line_bytes=52311)
    assert decision.mode is Mode.FULL_CHUNKED
    assert decision.reason.startswith("auto: avg line 52311 bytes > 1000")
    assert "37 chunks" in decision.reason


def test_auto_takes_read_grep_for_many_chunks_of_ordinary_lines() -> None:
    decision = route("auto", chunk_count=5, avg_line_bytes=1000)
    assert decision.mode is Mode.READ_GREP
    assert decision.reason == "auto: 5 chunks > max_chunks_for_full_mode=1 and avg line 1000 bytes ≤ 1000"


def test_thresholds_are_configurable() -> None:
    assert route("auto", chunk_count=3, avg_line_bytes=80, max_chunks_for_full=3).mode is Mode.FULL_CHUNKED
    assert route("auto", chunk_count=4, avg_line_bytes=80, max_chunks_for_full=3).mode is Mode.READ_GREP
    assert route("auto", chunk_count=4, avg_line_bytes=80.5, long_line_bytes=80).mode is Mode.FULL_CHUNKED
    assert "avg line 80.5 bytes > 80" in route("auto", chunk_count=4, avg_line_bytes=80.5, long_line_bytes=80).reason


@pytest.mark.parametrize("mode", [Mode.FULL_CHUNKED, Mode.READ_GREP, Mode.TRUNCATE])
def test_explicit_modes_override_auto(mode: Mode) -> None:
    for chunks, line in ((1, 10), (500, 10), (500, 90_000)):
        assert route(mode.value, chunk_count=chunks, avg_line_bytes=line) == RoutingDecision(
            mode=mode, reason=f"requested: {mode.value}"
        )


def test_negative_numbers_are_refused() -> None:
    with pytest.raises(InvalidInput):
        route("auto", chunk_count=-1, avg_line_bytes=10)
    with pytest.raises(InvalidInput):
        route("auto", chunk_count=1, avg_line_bytes=10, max_chunks_for_full=-1)
    with pytest.raises(InvalidInput):
        route("bogus", chunk_count=1, avg_line_bytes=10)


def test_auto_routes_structured_data_over_one_chunk_to_query() -> None:
    decision = route("auto", chunk_count=57, avg_line_bytes=20_000_000, structured="json")
    assert decision.mode is Mode.QUERY and decision.reason.startswith("auto: structured data (json) in 57 chunks")
    assert route("auto", chunk_count=1, avg_line_bytes=10, structured="csv").mode is Mode.FULL_CHUNKED
    assert route("query", chunk_count=1, avg_line_bytes=10).mode is Mode.QUERY
