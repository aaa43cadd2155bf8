"""What a quote may differ in from the stored lines, and how far it may sit from where it was cited."""

from __future__ import annotations

import pytest

from extraction.evidence.matching import MIN_QUOTE_CHARS, REANCHOR_LINES, find_quote, normalise, quote_forms
from extraction.evidence.model import Match
from extraction.evidence.window import Window


def window(lines: list[str], first: int = 1) -> Window:
    starts, position = [], 0
    for line in lines:
        starts.append(position)
        position += len(line.encode()) + 1
    return Window(first, lines, starts, position)


LINES = [f"line {n} filler" for n in range(1, 31)]
LINES[11] = "2026-01-01 ERROR   payment failed order=ZX-9911"


@pytest.mark.parametrize(
    ("quote", "match"),
    [
        ("ERROR   payment failed", Match.EXACT),
        ("error payment failed", Match.NORMALISED),
        ("ERROR\tpayment\n failed", Match.NORMALISED),
        ("\uff25\uff32\uff32\uff2f\uff32 payment", Match.NORMALISED),  # full-width letters equal ASCII after NFKC
        ("… payment failed …", Match.EXACT),
        ("...order=ZX-9911", Match.EXACT),
        ('"payment failed order=ZX-9911"', Match.EXACT),
        ("`ERROR   payment`", Match.EXACT),
        ("[line clipped: 40 chars before] …payment failed… [line clipped: 9 more chars]", Match.EXACT),
    ],
)
def test_a_quote_on_its_line_matches_as_written_or_normalised(quote, match):
    places = find_quote(quote_forms(quote), window(LINES), 12, 12)
    assert places[0] == type(places[0])(12, 12, match, 0)


def test_a_quote_a_few_lines_away_is_reanchored_with_its_shift():
    places = find_quote(quote_forms("payment failed"), window(LINES), 15, 15)
    assert (places[0].start, places[0].match, places[0].shift) == (12, Match.REANCHORED, -3)


def test_beyond_the_bound_a_quote_is_not_found():
    far = 12 + REANCHOR_LINES + 1
    assert find_quote(quote_forms("payment failed"), window(LINES), far, far) == []


def test_a_changed_word_is_not_a_whitespace_or_case_difference():
    assert find_quote(quote_forms("payment succeeded"), window(LINES), 12, 12) == []
    assert find_quote(quote_forms("order=ZX-9912"), window(LINES), 12, 12) == []


def test_a_quote_across_lines_matches_the_lines_it_names_joined():
    places = find_quote(quote_forms("line 3 filler line 4"), window(LINES), 3, 4)
    assert places[0] == type(places[0])(3, 4, Match.NORMALISED, 0)
    assert find_quote(quote_forms("line 3 filler line 4"), window(LINES), 3, 3) == []


def test_quotes_too_short_to_prove_anything_have_no_form():
    assert quote_forms("x" * (MIN_QUOTE_CHARS - 1)) == []
    assert quote_forms("  …  ") == []


def test_normalise_collapses_whitespace_and_case():
    assert normalise("  A\t B\n\nc ") == "a b c"
