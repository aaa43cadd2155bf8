"""What a partial answer says it does not cover, and when too much is lost to answer at all."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from extraction.strategies.coverage import (
    MAX_LISTED,
    REASON_CHARS,
    FailedRange,
    chunks_lost,
    coverage_warning,
    headline,
    limit_reason,
    over_limit,
)

NO_REPORT = 'no valid final report after 2 attempt(s): no final-report wrapper <ai-agent-abc-FINAL format="text">'
HTTP_500 = "model call failed (InternalServerError): litellm.InternalServerError: OpenAIException - boom"


def chunk(index: int, start: int, end: int, reason: str = NO_REPORT) -> FailedRange:
    return FailedRange(level=0, index=index, chunks=[index], start=start, end=end, reason=reason)


def test_one_failed_chunk_names_its_byte_range_and_the_reasons_headline() -> None:
    warning = coverage_warning([chunk(56, 7_340_032, 7_471_104)], 57)
    assert warning == (
        "WARNING: 1 of 57 chunks could not be read (bytes 7,340,032-7,471,103: no valid final report after "
        "2 attempt(s)); the answer below does not cover it."
    )


def test_neighbouring_chunks_failing_alike_are_one_range_and_other_reasons_are_listed_apart() -> None:
    failed = [chunk(4, 400, 520), chunk(3, 300, 420), chunk(9, 900, 1020, HTTP_500), chunk(12, 1200, 1320)]
    assert coverage_warning(failed, 20) == (
        "WARNING: 4 of 20 chunks could not be read (bytes 300-519: no valid final report after 2 attempt(s); "
        "bytes 900-1,019: model call failed (InternalServerError); bytes 1,200-1,319: no valid final report "
        "after 2 attempt(s)); the answer below does not cover them."
    )


def test_separate_ranges_with_one_reason_share_it() -> None:
    warning = coverage_warning([chunk(1, 100, 200), chunk(5, 500, 600)], 10)
    assert "(bytes 100-199 and 500-599: no valid final report after 2 attempt(s))" in warning


def test_a_failed_reduce_group_names_the_chunks_it_held() -> None:
    group = FailedRange(level=1, index=2, chunks=[10, 11, 12], start=1000, end=1320, reason=HTTP_500)
    assert coverage_warning([group, chunk(0, 0, 120)], 40) == (
        "WARNING: 4 of 40 chunks could not be read (bytes 0-119: no valid final report after 2 attempt(s); "
        "bytes 1,000-1,319 (chunks 11-13, reduce group 3 of level 1): model call failed (InternalServerError)); "
        "the answer below does not cover them."
    )


def test_no_failure_no_warning() -> None:
    assert coverage_warning([], 5) is None


def test_long_reasons_are_clipped_and_many_ranges_summarised() -> None:
    reasons = [f"{i} {'x' * 200}" for i in range(MAX_LISTED + 3)]
    failed = [chunk(i * 2, i * 1000, i * 1000 + 10, reasons[i]) for i in range(len(reasons))]
    warning = coverage_warning(failed, 100)
    clipped = [reason[: REASON_CHARS - 3] + "..." for reason in reasons]
    assert [warning.count(text) for text in clipped] == [1] * MAX_LISTED + [0] * 3
    assert "x" * (REASON_CHARS - 2) not in warning
    assert warning.endswith("; and 3 more); the answer below does not cover them.") and len(warning) < 900


def test_one_reason_for_many_ranges_still_lists_only_a_few() -> None:
    failed = [chunk(i * 2, i * 1000, i * 1000 + 10) for i in range(40)]
    warning = coverage_warning(failed, 100)
    assert warning.count("-") == MAX_LISTED and "and 5,000-5,009: no valid final report" in warning
    assert warning.endswith("; and 34 more); the answer below does not cover them.")


def test_headline_keeps_what_failed_and_drops_the_details() -> None:
    assert headline(HTTP_500) == "model call failed (InternalServerError)"
    assert headline("plain reason") == "plain reason"
    assert headline(": odd") == ": odd"


@pytest.mark.parametrize(
    ("lost", "total", "fraction", "over"),
    [
        (0, 20, 0.25, False),
        (5, 20, 0.25, False),  # exactly a quarter is still answered
        (6, 20, 0.25, True),  # 30%
        (1, 1, 0.25, True),  # a single chunk that failed leaves nothing
        (1, 57, 0.0, True),  # 0: any failure falls back (the behaviour before partial answers)
        (9, 10, 1.0, False),
        (10, 10, 1.0, True),  # nothing left to reduce, whatever the setting
        (7, 35, 0.2, False),  # 0.2 * 35 is 7.000000000000001 in floats: still exactly a fifth
        (3, 10, 0.3, False),  # 0.3 * 10 is 3.0000000000000004
        (14, 20, 0.7, False),  # 0.7 * 20 is 13.999999999999998
    ],
)
def test_the_limit(lost: int, total: int, fraction: float, over: bool) -> None:
    assert over_limit(lost, total, fraction) is over


def test_the_limit_reason_counts_chunks_and_quotes_the_first_failure() -> None:
    failed = [chunk(9, 900, 1000, HTTP_500), chunk(2, 200, 300)]
    group = FailedRange(level=1, index=0, chunks=[4, 5, 6], start=400, end=700, reason=HTTP_500)
    assert chunks_lost([*failed, group]) == 5
    assert limit_reason([*failed, group], 12, 0.25) == (
        "5 of 12 chunks could not be read, more than max_failed_chunk_fraction=0.25 allows "
        "(first: chunk 3, bytes 200-299: no valid final report after 2 attempt(s))"
    )


def test_a_failure_names_at_least_one_chunk() -> None:
    with pytest.raises(ValidationError):
        FailedRange(level=1, index=0, chunks=[], start=0, end=1, reason="r")
