"""Oversize detection and the exact message the model sees instead of the output."""

import pytest

from extraction.documents.stats import DocumentStats
from extraction.errors import InvalidInput
from extraction.texts.oversize import is_oversized, too_large_message

HANDLE = "3f2b8c1e-6a4d-4f7e-9b1a-2c5d8e9f0a1b"


def stats(bytes_: int = 123456, lines: int = 789, tokens: int = 45678) -> DocumentStats:
    return DocumentStats(
        bytes=bytes_, lines=lines, tokens=tokens, avg_line_bytes=bytes_ / max(lines, 1), sha256="0" * 64
    )


def test_message_is_the_seed_text_character_for_character() -> None:
    expected = (
        "Tool output is too large (123456 bytes, 789 lines, 45678 tokens).\n"
        'Call tool_output(handle = "3f2b8c1e-6a4d-4f7e-9b1a-2c5d8e9f0a1b", extract = "what to extract").\n'
        "Provide precise and detailed instructions in `extract` about what you are looking for."
    )
    assert too_large_message(stats(), HANDLE) == expected


def test_message_uses_the_numbers_from_the_stats_and_has_no_trailing_newline() -> None:
    message = too_large_message(stats(5, 1, 2), "h-1")
    assert message.splitlines()[0] == "Tool output is too large (5 bytes, 1 lines, 2 tokens)."
    assert len(message.splitlines()) == 3 and not message.endswith("\n")


@pytest.mark.parametrize("handle", ["", 'a"b', "a\nb"])
def test_a_handle_that_would_break_the_call_is_refused(handle: str) -> None:
    with pytest.raises(InvalidInput):
        too_large_message(stats(), handle)


@pytest.mark.parametrize(
    ("bytes_", "tokens", "oversized"),
    [(100, 10, False), (101, 10, True), (100, 11, True), (101, 11, True), (0, 0, False)],
)
def test_oversized_when_either_limit_is_exceeded(bytes_: int, tokens: int, oversized: bool) -> None:
    assert is_oversized(stats(bytes_, 1, tokens), max_bytes=100, budget_tokens=10) is oversized
