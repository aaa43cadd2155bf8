"""Range header parsing: valid single ranges select bytes, anything malformed is ignored, never an error."""

import pytest

from api.errors import RangeNotSatisfiable
from api.ranges import parse_range


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-9", (0, 10)),
        ("bytes=10-19", (10, 20)),
        ("bytes=90-", (90, 100)),
        ("bytes=95-1000", (95, 100)),
        ("bytes=-10", (90, 100)),
        ("bytes=-1000", (0, 100)),
        ("bytes=99-99", (99, 100)),
        (" bytes=0-0 ", (0, 1)),
    ],
)
def test_valid_single_ranges(header: str, expected: tuple[int, int]) -> None:
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "bytes=",
        "bytes=-",
        "bytes=5-2",
        "bytes=a-b",
        "items=0-9",
        "bytes=0-9,20-29",
        "bytes=1.5-3",
        "bytes= 1-2",
        "bytes=٣-٤",
        "x" * 5000,
    ],
)
def test_malformed_or_unsupported_ranges_are_ignored(header: str | None) -> None:
    assert parse_range(header, 100) is None


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=100-200", "bytes=5000-5001", "bytes=-0"])
def test_ranges_past_the_end_are_unsatisfiable(header: str) -> None:
    with pytest.raises(RangeNotSatisfiable) as caught:
        parse_range(header, 100)
    assert caught.value.details["size"] == 100
