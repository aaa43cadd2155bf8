"""The routing directive parser: every example of seed 003, errors with positions, and round trips."""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extraction.directives.specs import (
    DestinationKind,
    DirectiveError,
    InputDirective,
    InputSource,
    OutputRoute,
    RoutingSpec,
    WriteMode,
    make_route,
)
from extraction.directives.syntax import format_directives, parse_directives, quote_value
from extraction.errors import InvalidInput

SEED = "/work/shared/seeds/003_7394be2f11a250fc.txt"

# Every directive example of seed 003, verbatim.
SEED_TOOLS_1 = "@tools web_search_tavily(output=variable:foo), code_execution(output=file:results/{today})"
SEED_INPUTS_2 = """@input file:myfile (output=variable:foo)
@input variable:foo (output=file:myfile)
@input file:myfile2 (output=variable:foo)     # append by default
@input url:https://example.com (output=variable:foo)  # future input source"""
SEED_TOKEN_3 = "web_search_tavily(output=variable:foo, write-mode=replace)"
SEED_WRITE_MODE_4 = """@input file:myfile1 (output=variable:foo)      # append
@input file:myfile2 (output=variable:foo)      # append
@input file:myfile3 (output=variable:foo, write-mode=replace)"""
SEED_TOOLS_5 = """@tools web_search_tavily(output=variable:search_results),
       code_execution(output=variable:analysis)"""
SEED_INPUTS_6 = """@input file:myhugefile.md (output=variable:huge_file)
@input variable:huge_file (output=file:archive/{today})"""
SEED_FUTURE_7 = "- `@input url:... (output=variable:foo)`\n- `@input query:... (output=file:...)`"
SEED_SKIP_8 = "Use `@model none` to skip LLM execution for a step/section."


def route(output: str, write_mode: str | None = None) -> OutputRoute:
    return make_route(output, write_mode)


def source(text: str) -> InputSource:
    kind, _, value = text.partition(":")
    return InputSource(kind=kind, value=value)


def test_seed_tools_example() -> None:
    assert parse_directives(SEED_TOOLS_1) == RoutingSpec(
        tools={"web_search_tavily": route("variable:foo"), "code_execution": route("file:results/{today}")}
    )


def test_seed_input_examples_with_comments() -> None:
    assert parse_directives(SEED_INPUTS_2).inputs == [
        InputDirective(source=source("file:myfile"), route=route("variable:foo")),
        InputDirective(source=source("variable:foo"), route=route("file:myfile")),
        InputDirective(source=source("file:myfile2"), route=route("variable:foo")),
        InputDirective(source=source("url:https://example.com"), route=route("variable:foo")),
    ]


def test_seed_tool_token_with_write_mode() -> None:
    spec = parse_directives("@tools " + SEED_TOKEN_3)
    assert spec.tools == {"web_search_tavily": route("variable:foo", "replace")}
    assert spec.tools["web_search_tavily"].effective_write_mode is WriteMode.REPLACE  # type: ignore[union-attr]


def test_seed_write_mode_pattern_appends_twice_then_replaces() -> None:
    inputs = parse_directives(SEED_WRITE_MODE_4).inputs
    assert [(str(i.source), i.route and i.route.effective_write_mode) for i in inputs] == [
        ("file:myfile1", WriteMode.APPEND),
        ("file:myfile2", WriteMode.APPEND),
        ("file:myfile3", WriteMode.REPLACE),
    ]


def test_seed_tools_line_continued_on_an_indented_line() -> None:
    assert parse_directives(SEED_TOOLS_5).tools == {
        "web_search_tavily": route("variable:search_results"),
        "code_execution": route("variable:analysis"),
    }


def test_seed_inputs_with_a_dated_file_destination() -> None:
    inputs = parse_directives(SEED_INPUTS_6).inputs
    assert inputs[1].route == route("file:archive/{today}")
    assert inputs[1].route.output.kind is DestinationKind.FILE  # type: ignore[union-attr]
    assert str(inputs[0].source) == "file:myhugefile.md"


def test_seed_future_sources_inside_markdown_backticks_are_not_directives() -> None:
    assert parse_directives(SEED_FUTURE_7) == RoutingSpec()
    spec = parse_directives("@input url:... (output=variable:foo)\n@input query:... (output=file:...)")
    assert [str(i.source) for i in spec.inputs] == ["url:...", "query:..."]
    assert spec.inputs[1].route == route("file:...")


def test_other_directives_and_prose_are_ignored() -> None:
    text = f"{SEED_SKIP_8}\n@model none\n@output file:x\nemail me @tools-team\n{SEED_TOOLS_1}"
    assert parse_directives(text) == parse_directives(SEED_TOOLS_1)


@pytest.mark.skipif(not os.path.exists(SEED), reason="design seed not available")
def test_every_directive_block_of_the_seed_parses() -> None:
    with open(SEED, encoding="utf-8") as file:
        seed = file.read()
    blocks = [b for b in re.findall(r"```\n(.*?)```", seed, re.DOTALL) if "@tools" in b or "@input" in b]
    assert blocks == [SEED_TOOLS_1 + "\n", SEED_INPUTS_2 + "\n", SEED_WRITE_MODE_4 + "\n", SEED_TOOLS_5 + "\n",
                      SEED_INPUTS_6 + "\n"]  # fmt: skip
    assert SEED_TOKEN_3 in seed
    for block in blocks:
        spec = parse_directives(block)
        assert spec.tools or spec.inputs


def test_tools_lines_aggregate_and_the_last_output_wins() -> None:
    text = """
@tools search(output=variable:a, write-mode=replace), fetch
@tools code_execution, search(output=file:out.md)
@tools fetch(output=discard), search
"""
    spec = parse_directives(text)
    assert list(spec.tools) == ["search", "fetch", "code_execution"]
    assert spec.tools == {"search": route("file:out.md"), "fetch": route("discard"), "code_execution": None}


@pytest.mark.parametrize(
    "text",
    [
        "@tools a(output=variable:x,write-mode=new),b",
        "@tools a( output = variable:x , write-mode = new ) b",
        "@tools a(output=variable:x write-mode=new) b",
        "@tools a(output=variable:x, write_mode=new), b",
        "@tools a(\n  output=variable:x,   # where it goes\n  write-mode=new\n), b",
        "@tools a(output=variable:x, write-mode=new),\nb",
        "@tools a(output=variable:x, write-mode=new)\n  # a comment line\n  b",
        "  @tools a\n     (output=variable:x, write-mode=new)\n     b",
        '@tools a(output="variable:x", write-mode="new"), b  # trailing comment',
        "@tools a(output=variable:x, write-mode=new), b,\r\n",
    ],
)
def test_commas_spaces_line_breaks_and_comments_are_layout_only(text: str) -> None:
    assert parse_directives(text).tools == {"a": route("variable:x", "new"), "b": None}


def test_a_directive_ends_at_a_line_that_is_not_indented_deeper() -> None:
    text = "@tools a\nb is prose\n@input file:x\n  prose indented under an input is an error"
    with pytest.raises(DirectiveError, match="unexpected text after the @input source"):
        parse_directives(text)
    assert parse_directives("@tools a\nb is prose\n\n  also prose").tools == {"a": None}


def test_a_blank_line_ends_a_directive_even_after_a_comma() -> None:
    assert parse_directives("@tools a,\n\n  b").tools == {"a": None}


def test_input_sources_may_hold_spaces_fragments_and_parentheses() -> None:
    text = (
        "@input file:my notes.md (output=variable:notes)\n"
        "@input url:https://en.wikipedia.org/wiki/Foo_(bar)#History\n"
        "@input query:open bugs, by owner   # no output: inline\n"
        "@input file:x\n    (output=variable:y)"
    )
    inputs = parse_directives(text).inputs
    assert [(str(i.source), i.route) for i in inputs] == [
        ("file:my notes.md", route("variable:notes")),
        ("url:https://en.wikipedia.org/wiki/Foo_(bar)#History", None),
        ("query:open bugs, by owner", None),
        ("file:x", route("variable:y")),
    ]


def test_quoted_values_carry_spaces_commas_parentheses_and_escapes() -> None:
    spec = parse_directives('@tools a(output="file:my dir/r (1), \\"q\\".md")')
    assert spec.tools["a"] == route('file:my dir/r (1), "q".md')


def test_empty_parentheses_enable_the_tool_without_a_route() -> None:
    assert parse_directives("@tools a(), b( )").tools == {"a": None, "b": None}


@pytest.mark.parametrize(
    ("text", "problem", "token", "line", "column"),
    [
        ("@tools a(output=variable:)", "variable: needs a name", "variable:", 1, 17),
        ("@tools a(output=)", "output= needs a value", ")", 1, 17),
        ("@tools a(output=file:)", "file: needs a path", "file:", 1, 17),
        ("@tools a(output=buffer:x)", "unknown destination 'buffer:x'", "buffer:x", 1, 17),
        ("@tools a(output=variable:x, write-mode=sometimes)", "unknown write-mode 'sometimes'", "sometimes", 1, 40),
        ("@tools a(write-mode=new)", "write-mode needs output=", "write-mode", 1, 10),
        ("@tools a(output=inline, write-mode=new)", "applies only to variable: and file:", "new", 1, 36),
        ("@tools a(outptu=variable:x)", "unknown parameter 'outptu' (known: output, write-mode)", "outptu", 1, 10),
        ("@tools a(output=variable:x, output=inline)", "output is given twice for 'a'", "output", 1, 29),
        ("@tools a(output variable:x)", "expected '=' after output", "variable:x", 1, 17),
        ("\n\n@tools a(output=variable:x", "unbalanced '(' after 'a'", "(", 3, 9),
        ("@tools a, b)", "unbalanced ')'", ")", 1, 12),
        ("@tools a(output=variable:x))", "expected a tool name", ")", 1, 28),
        ("@tools =x", "expected a tool name", "=x", 1, 8),
        ("@tools", "@tools needs at least one tool name", "@tools", 1, 1),
        ("  @tools # nothing", "@tools needs at least one tool name", "@tools", 1, 3),
        ("@tools a(output=file:/etc/passwd)", "only relative paths", "file:/etc/passwd", 1, 17),
        ("@tools a(output=file:../up)", "'..' segments", "file:../up", 1, 17),
        ("@tools a(output=file:{date}/x)", "unknown placeholder {date}", "file:{date}/x", 1, 17),
        ('@tools a(output="file:x)', "unterminated quoted value", '"', 1, 17),
        ("@tools a(output=variable:x, (y))", "expected a parameter", "(", 1, 29),
        ("@tools " + "a" * 129, "at most 128", "a" * 40, 1, 8),
        ("@input", "@input needs a source", "end of text", 1, 7),
        ("@input myfile (output=variable:foo)", "kind:value", "myfile", 1, 8),
        ("@input file:/abs (output=variable:foo)", "only relative paths", "file:/abs", 1, 8),
        ("@input Web:x", "invalid source kind 'Web'", "Web:x", 1, 8),
        ("@input file:x (output=variable:x) extra", "unexpected text after", "extra", 1, 35),
        ("ok\n  @input file:x (output=variable:1x)", "invalid variable name '1x'", "variable:1x", 2, 25),
    ],
)
def test_mistakes_name_the_token_and_its_position(text: str, problem: str, token: str, line: int, column: int) -> None:
    with pytest.raises(DirectiveError) as caught:
        parse_directives(text)
    err = caught.value
    assert problem in err.message
    assert err.details == {"token": token, "line": line, "column": column}
    assert err.message.endswith(f"(at line {line}, column {column}: {token!r})")
    assert isinstance(err, InvalidInput)


def test_the_printer_writes_canonical_directives() -> None:
    spec = parse_directives(SEED_TOOLS_5 + "\n" + SEED_INPUTS_6 + "\n@tools x(output=variable:y, write_mode=new)")
    assert format_directives(spec) == (
        "@tools web_search_tavily(output=variable:search_results), code_execution(output=variable:analysis), "
        "x(output=variable:y, write-mode=new)\n"
        "@input file:myhugefile.md (output=variable:huge_file)\n"
        "@input variable:huge_file (output=file:archive/{today})"
    )
    assert format_directives(RoutingSpec()) == ""


def test_values_are_quoted_only_when_needed() -> None:
    assert quote_value("variable:x") == "variable:x"
    assert quote_value("file:a#b{today}") == "file:a#b{today}"
    assert quote_value("file:a b") == '"file:a b"'
    assert quote_value('file:"q"\\') == '"file:\\"q\\"\\\\"'


# --- round trip ---------------------------------------------------------------------------

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
tool_names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,15}", fullmatch=True)
segment = st.text(
    alphabet=st.characters(blacklist_categories=["Cc", "Cs"], blacklist_characters="/\\{}"), min_size=1, max_size=8
).filter(lambda s: s not in (".", ".."))
paths = (
    st.lists(st.one_of(segment, st.just("{today}")), min_size=1, max_size=4)
    .map("/".join)
    .filter(lambda p: not re.match(r"[A-Za-z]:", p))
)
destinations = st.one_of(
    st.sampled_from(["inline", "discard"]), names.map("variable:{}".format), paths.map("file:{}".format)
)


@st.composite
def routes(draw: st.DrawFn) -> OutputRoute | None:
    if draw(st.booleans()):
        return None
    output = draw(destinations)
    routed = output.startswith(("variable:", "file:"))
    mode = draw(st.sampled_from([None, "append", "replace", "new"])) if routed else None
    return make_route(output, mode)


def input_source(kind: str, value: str) -> InputSource | None:
    try:
        return InputSource(kind=kind, value=value)
    except InvalidInput:
        return None


sources = st.one_of(
    paths.map(lambda p: input_source("file", p)),
    names.map(lambda n: input_source("variable", n)),
    st.tuples(st.sampled_from(["url", "query", "x-y_1"]), st.text(min_size=1, max_size=20)).map(
        lambda kv: input_source(*kv)
    ),
).filter(lambda s: s is not None)
inputs = st.builds(InputDirective, source=sources, route=routes())
specs = st.builds(
    RoutingSpec, tools=st.dictionaries(tool_names, routes(), max_size=5), inputs=st.lists(inputs, max_size=4)
)


@settings(max_examples=300)
@given(specs)
def test_parse_reads_back_what_format_prints(spec: RoutingSpec) -> None:
    assert parse_directives(format_directives(spec)) == spec
