"""The RE2 adapter: linear time on ReDoS patterns, clear errors for syntax RE2 lacks, and a block
fast path that finds exactly the lines a per-line search finds."""

from __future__ import annotations

import time

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.documents.grep import grep_lines
from extraction.documents.line_matchers import LiteralMatcher
from extraction.errors import InvalidInput, PatternError
from infra.outputs.grep_engine import Re2LiteralMatcher, Re2Matcher, compile_matcher
from tests.extraction.documents.test_grep import naive_grep
from tests.helpers import BytesReader


def grep(data: bytes, pattern: str, *, ignore_case: bool = False, **kwargs):
    matcher = compile_matcher(pattern, regex=True, ignore_case=ignore_case)
    return grep_lines(BytesReader(data), "k", matcher, **kwargs)


def test_literal_patterns_get_the_literal_matcher_with_an_re2_block_search() -> None:
    matcher = compile_matcher("a.b", regex=False, ignore_case=True)
    assert isinstance(matcher, LiteralMatcher) and isinstance(matcher, Re2LiteralMatcher) and matcher.ignore_case
    assert matcher.search("xA.Bx") and not matcher.search("axb")


def test_regex_patterns_get_re2() -> None:
    matcher = compile_matcher(r"err(or)?\s+\d+", regex=True, ignore_case=True)
    assert isinstance(matcher, Re2Matcher)
    assert matcher.search("ERROR  42") and not matcher.search("error x")
    assert matcher.span("an err 7") == (3, 8)


@pytest.mark.parametrize("regex", [True, False])
def test_empty_pattern_is_invalid_input(regex: bool) -> None:
    with pytest.raises(InvalidInput, match="empty"):
        compile_matcher("", regex=regex, ignore_case=False)


def test_overlong_pattern_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="limit"):
        compile_matcher("a" * 5000, regex=True, ignore_case=False)


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(a)\1", "backreferences (\\1)"),
        (r"(?P<x>a)(?P=x)", "named backreferences"),
        (r"(?=x)", "lookahead"),
        (r"(?!x)y", "negative lookahead"),
        (r"(?<=x)y", "lookbehind"),
        (r"(?<!x)y", "negative lookbehind"),
        (r"(?>a)", "atomic groups"),
        (r"a++", "possessive quantifiers"),
        (r"a\Z", "\\Z anchor"),
    ],
)
def test_unsupported_syntax_names_the_construct_and_the_engine(pattern: str, named: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_matcher(pattern, regex=True, ignore_case=False)
    assert named in caught.value.message
    assert "RE2" in caught.value.message and "regex=false" in caught.value.message
    assert caught.value.details["construct"] and caught.value.code == "invalid_pattern"


@pytest.mark.parametrize(
    ("pattern", "detail"),
    [("(", "missing )"), ("[a", "missing ]"), ("*a", "repetition"), ("a{2,1}", "repetition size")],
)
def test_invalid_patterns_carry_re2s_reason(pattern: str, detail: str) -> None:
    with pytest.raises(PatternError, match="invalid regex") as caught:
        compile_matcher(pattern, regex=True, ignore_case=False)
    assert detail in caught.value.message and "RE2" in caught.value.message


def test_redos_pattern_answers_promptly() -> None:
    data = b"a" * (1 << 20) + b"\n" + b"a" * (1 << 20) + b"!\n"
    started = time.monotonic()
    result = grep(data, "(a+)+$", max_line_chars=20)
    assert time.monotonic() - started < 10
    assert result.matches == 1 and result.text.startswith("     1:\t")
    assert compile_matcher("(a+)+$", regex=True, ignore_case=False).search("a" * (1 << 20) + "!") is False


def test_block_regex_never_matches_across_lines() -> None:
    assert grep(b"foo\nbar\n", r"foo\s+bar").matches == 0
    assert grep(b"foo\nbar\nfoo  bar\n", r"(?s)foo.*bar").text == "     3:\tfoo  bar"
    assert grep(b"ab\ncd\n", r"[^x]+d").text == "     2:\tcd"


def test_anchors_work_per_line_even_with_crlf_and_invalid_utf8() -> None:
    data = b"error\r\nan error\r\n\xff error\nerror\xff\n"
    assert grep(data, "error$").text == "     1:\terror\n     2:\tan error\n     3:\t\ufffd error"
    assert grep(data, "^error").text == "     1:\terror\n     4:\terror\ufffd"
    assert grep(data, "r.$").text == "     4:\terror\ufffd"
    assert grep(data, r"\Aerror\z").text == "     1:\terror"


def test_ignore_case_regex_is_unicode_aware() -> None:
    assert grep("ÉTÉ\nété\nete\n".encode(), "été", ignore_case=True).matches == 2


def test_the_engine_is_configured_quietly_with_a_memory_budget() -> None:
    matcher = Re2Matcher("a")
    options = matcher._line.options
    assert options.max_mem >= 32 << 20 and options.log_errors is False
    assert isinstance(re2.Options(), type(options))


LITERALS = ["a", "ab", "b\r", "ss", "é", "ba", "\ufffd", "SS", "a b"]
PATTERNS = [
    "a$",
    "^b",
    "a.b",
    r"\bab\b",
    "[^x]+b",
    r"a\s+b",
    "(?s)a.*b",
    r"\Aa",
    r"b\z",
    "é+",
    "(?i)ss",
    "x|b$",
    "^$",
    r"\r",
    "ß",
]
CONTENT = st.lists(
    st.sampled_from(
        [
            b"a",
            b"b",
            b"ab",
            b"A",
            b" ",
            b"\n",
            b"\n",
            b"\r\n",
            b"\r",
            b"\xff",
            "ß".encode(),
            "é".encode(),
            b"SS",
            b"xyz",
        ]
    ),
    max_size=120,
).map(b"".join)


@settings(max_examples=600, deadline=None)
@given(
    CONTENT,
    st.sampled_from([(p, True) for p in PATTERNS] + [(p, False) for p in LITERALS]),
    st.booleans(),
    st.integers(0, 2),
    st.integers(0, 2),
    st.integers(1, 8),
    st.integers(1, 24),
)
def test_block_fast_path_equals_a_per_line_search(
    data, pattern, ignore_case, before, after, max_matches, block_size
) -> None:
    matcher = compile_matcher(pattern[0], regex=pattern[1], ignore_case=ignore_case)
    expected = naive_grep(data, matcher.search, before=before, after=after, max_matches=max_matches)
    result = grep_lines(
        BytesReader(data), "k", matcher, before=before, after=after, max_matches=max_matches, block_size=block_size
    )
    assert result.text == expected
