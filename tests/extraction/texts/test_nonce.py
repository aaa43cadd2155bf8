"""The nonce is random per job and shapes the exact wrapper tags the prompts ask for."""

import re

import pytest

from extraction.texts.nonce import close_tag, new_nonce, open_tag, wrap


def test_nonces_are_16_hex_chars_and_never_repeat() -> None:
    nonces = {new_nonce() for _ in range(1000)}
    assert len(nonces) == 1000
    assert all(re.fullmatch(r"[0-9a-f]{16}", nonce) for nonce in nonces)


def test_tags_are_the_exact_seed_wrapper() -> None:
    assert open_tag("abc123") == '<ai-agent-abc123-FINAL format="text">'
    assert close_tag("abc123") == "</ai-agent-abc123-FINAL>"


def test_wrap_puts_each_tag_on_its_own_line() -> None:
    assert wrap("n1", "the answer") == '<ai-agent-n1-FINAL format="text">\nthe answer\n</ai-agent-n1-FINAL>'


@pytest.mark.parametrize("bad", ["", "a-b", "a b", "x>y", "<NONCE>"])
def test_nonces_that_cannot_round_trip_through_a_tag_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        open_tag(bad)
