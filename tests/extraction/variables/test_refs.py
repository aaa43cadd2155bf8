"""The `$ref` grammar: parsing, printing, and where references start and stop inside text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extraction.variables.refs import (
    MAX_REF_CHARS,
    NEED_MORE,
    InvalidReference,
    Ref,
    contains_variable_ref,
    find_refs,
    format_ref,
    iter_refs,
    parse_ref,
    scan_ref,
    whole_ref,
)


def refs_in(text: str) -> list[tuple[str, Ref]]:
    """(written text, parsed ref) of every reference found in a final text."""
    spans, hold = find_refs(text)
    assert hold == len(text)
    return [(text[s.start : s.end], s.ref) for s in spans]


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("$weather_nyc", Ref("weather_nyc")),
        ("$weather_nyc.temperature", Ref("weather_nyc", ("temperature",))),
        ("$a.b.c", Ref("a", ("b", "c"))),
        ("$orders.items[0].id", Ref("orders", ("items", 0, "id"))),
        ("$rows[2]", Ref("rows", (2,))),
        ("$rows[-1]", Ref("rows", (-1,))),
        ("$m[0][1]", Ref("m", (0, 1))),
        ("$_", Ref("_")),
        ("$x.größe", Ref("x", ("größe",))),
        ("$x.名前", Ref("x", ("名前",))),
        ("$x._private", Ref("x", ("_private",))),
    ],
)
def test_parse_and_print_round_trip(text: str, ref: Ref) -> None:
    assert parse_ref(text) == ref
    assert format_ref(ref) == text == str(ref)


@pytest.mark.parametrize(
    "text", ["", "$", "$1", "weather", "$a.", "$a b", " $a", "$a[", "$a[x]", "$a.5", "$a$b", "$café", "$a-b"]
)
def test_text_that_is_not_exactly_one_reference_is_refused(text: str) -> None:
    assert whole_ref(text) is None
    with pytest.raises(InvalidReference, match="is not a reference"):
        parse_ref(text)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("export PATH=$HOME/bin", [("$HOME", Ref("HOME"))]),
        ("costs $5 or $5.99", []),
        ("See $orders.", [("$orders", Ref("orders"))]),
        ("See $orders.total.", [("$orders.total", Ref("orders", ("total",)))]),
        ("kill $$ and $$x", []),
        ("math $$x^2$$ here", []),
        ("US$5, a$b, x_$y, 9$z", []),
        ("mail bob$team@example.com or $team@example.com", [("$team", Ref("team"))]),
        ("$user.email@x.org", [("$user.email", Ref("user", ("email",)))]),
        ("$r.items[0] then text", [("$r.items[0]", Ref("r", ("items", 0)))]),
        ("$r.items[0]abc", [("$r.items[0]", Ref("r", ("items", 0)))]),
        ("$r[abc] $r[ 1] $r[1 ] $r[]", [("$r", Ref("r"))] * 4),
        ("$r[--1]", [("$r", Ref("r"))]),
        ("«$a»", [("$a", Ref("a"))]),
        ("é$a", [("$a", Ref("a"))]),
        ("$a\u2019s value", [("$a", Ref("a"))]),
        ("$café and $x.café", [("$x.café", Ref("x", ("café",)))]),
        ("$x.cafe\u0301!", [("$x.cafe\u0301", Ref("x", ("cafe\u0301",)))]),
        ("$a $b", [("$a", Ref("a")), ("$b", Ref("b"))]),
        ("$a$b", [("$a", Ref("a"))]),
        ("${HOME} $(date) $ x", []),
        ("$x.1st", [("$x", Ref("x"))]),
    ],
)
def test_references_inside_longer_text(text: str, found: list[tuple[str, Ref]]) -> None:
    assert refs_in(text) == found


def test_a_reference_stops_being_one_past_the_length_limit() -> None:
    longest_name = "a" * (MAX_REF_CHARS - 1)
    assert refs_in(f"${longest_name} ok") == [(f"${longest_name}", Ref(longest_name))]
    assert refs_in(f"${longest_name}b ok") == []
    with pytest.raises(InvalidReference, match=f"at most {MAX_REF_CHARS}"):
        Ref("a" * MAX_REF_CHARS)


def test_index_digits_are_bounded_so_no_huge_int_is_parsed() -> None:
    assert refs_in("$x[" + "9" * 18 + "]") == [("$x[" + "9" * 18 + "]", Ref("x", (10**18 - 1,)))]
    assert refs_in("$x[" + "9" * 19 + "]") == [("$x", Ref("x"))]


@pytest.mark.parametrize(
    ("text", "held_from"),
    [
        ("hello $weather_", 6),
        ("hello $", 6),
        ("$x.", 0),
        ("$x.fie", 0),
        ("$x[", 0),
        ("$x[-", 0),
        ("$x[12", 0),
        ("$x[12]", 0),
        ("a $x b $y", 7),
    ],
)
def test_a_non_final_text_holds_back_only_the_undecided_reference(text: str, held_from: int) -> None:
    _, hold = find_refs(text, final=False)
    assert hold == held_from
    assert scan_ref(text, held_from, final=False) is NEED_MORE


@pytest.mark.parametrize("text", ["a $x b", "$$", "US$", "$x.5", "$x[a", "$5", "$café"])
def test_decided_text_holds_nothing_back(text: str) -> None:
    assert find_refs(text, final=False)[1] == len(text)


def test_the_character_before_the_text_decides_whether_a_leading_dollar_starts_a_reference() -> None:
    assert find_refs("$x", before="a")[0] == []
    assert find_refs("$x", before="$")[0] == []
    assert [s.ref for s in find_refs("$x", before=" ")[0]] == [Ref("x")]


@pytest.mark.parametrize(
    ("name", "path", "problem"),
    [
        ("1x", (), "invalid variable name"),
        ("x", ("a-b",), "not an identifier"),
        ("x", (True,), "not True"),
        ("x", (1.5,), "not 1.5"),
        ("x", (10**19,), "more than 18 digits"),
    ],
)
def test_a_ref_cannot_be_built_with_parts_that_could_not_be_written(name: str, path: tuple, problem: str) -> None:
    with pytest.raises(InvalidReference, match=problem):
        Ref(name, path)


def test_prefix_cuts_the_path() -> None:
    ref = Ref("o", ("items", 0, "id"))
    assert ref.prefix(0) == Ref("o")
    assert ref.prefix(2) == Ref("o", ("items", 0))


def test_refs_are_found_in_values_but_not_in_keys() -> None:
    value = {"$key": "no ref", "args": ["$a", {"q": "find $b.c please"}], "n": 3, "t": ("$d",)}
    assert list(iter_refs(value)) == [Ref("a"), Ref("b", ("c",)), Ref("d")]
    assert contains_variable_ref(value)
    assert not contains_variable_ref({"$key": "costs $5", "n": [1, None, True]})
    assert not contains_variable_ref("plain")


fields = st.text(alphabet=st.characters(categories=["Ll", "Lu", "Lo", "Nd", "Pc"]), min_size=1, max_size=8).filter(
    str.isidentifier
)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True)
keys = st.one_of(fields, st.integers(min_value=-(10**18) + 1, max_value=10**18 - 1))


@given(names, st.lists(keys, max_size=6))
def test_any_ref_round_trips_through_its_text(name: str, path: list[str | int]) -> None:
    ref = Ref(name, tuple(path))
    assert parse_ref(format_ref(ref)) == ref
    assert refs_in(f"({format_ref(ref)}) ") == [(format_ref(ref), ref)]
