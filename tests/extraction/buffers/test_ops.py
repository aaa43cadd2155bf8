"""buffer_ops end to end in memory: docs/spec/buffer-ops.md's calls, the texts the model sees, misuse, strict schema."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest

from extraction.buffers.ops import (
    ALLOWED,
    BUFFER_OPS_NAME,
    BUFFER_OPS_PARAMETERS,
    OPERATIONS,
    BufferLimits,
    BufferOpError,
    BufferOpsArgs,
    buffer_ops_tool,
    execute_buffer_op,
    literal_pattern,
    parse_args,
    run_buffer_op,
)
from extraction.buffers.store import JSON, MemoryBufferStore, UnknownBuffer
from extraction.directives.specs import WriteMode
from extraction.documents.line_matchers import LineMatcher, LiteralMatcher
from extraction.errors import PatternError
from extraction.schemas.strict_rules import strict_violations
from extraction.texts.tools import strict

T0 = dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)
SEARCH = "result 1: Python docs\nTODO: check licensing\nresult 2: Rust book\nresult 3: Go tour\ntodo later\n"
ANALYSIS = '{"summary":"three results","todo":1}'


class ReMatcher:
    """A stdlib-regex matcher for tests (the server passes RE2's)."""

    def __init__(self, pattern: str, ignore_case: bool) -> None:
        self.pattern = pattern
        self._re = re.compile(pattern, re.IGNORECASE if ignore_case else 0)

    def search(self, line: str) -> bool:
        return self._re.search(line) is not None


def re_pattern(pattern: str, *, regex: bool, ignore_case: bool) -> LineMatcher:
    return ReMatcher(pattern, ignore_case) if regex else LiteralMatcher(pattern, ignore_case)


@pytest.fixture
def store() -> MemoryBufferStore:
    memory = MemoryBufferStore(clock=lambda: T0)
    memory.write("search_results", SEARCH, source="tool web_search_tavily", handle="0b6f1d2c")
    memory.write("analysis", ANALYSIS, content_type=JSON, source="tool code_execution")
    return memory


def run(store: MemoryBufferStore, **args: Any) -> str:
    return run_buffer_op(args, store, compile_pattern=re_pattern, today=dt.date(2026, 1, 1))


# --- the spec's calls ----------------------------------------------------------------------


def test_seed_list(store: MemoryBufferStore) -> None:
    assert run(store, operation="list") == (
        "2 buffers:\n- search_results: 93 chars, 5 lines\n- analysis: 36 chars, 1 line"
    )
    assert len(SEARCH) == 93 and len(ANALYSIS) == 36


def test_seed_info(store: MemoryBufferStore) -> None:
    assert run(store, operation="info", target="search_results") == (
        "buffer: search_results\n"
        "size: 93 chars (93 bytes), 5 lines\n"
        "content_type: text/plain\n"
        "source: tool web_search_tavily\n"
        "created_at: 2026-01-01T10:00:00+00:00\n"
        "updated_at: 2026-01-01T10:00:00+00:00\n"
        "handle: 0b6f1d2c"
    )


def test_seed_peek(store: MemoryBufferStore) -> None:
    assert run(store, operation="peek", target="search_results", offset=0, max_chars=1000) == (
        f"[search_results: chars 0-92 of 93]\n{SEARCH}"
    )


def test_seed_read_by_lines(store: MemoryBufferStore) -> None:
    assert run(store, operation="read", target="search_results", start_line=1, end_line=200) == (
        "[search_results: lines 1-5 of 5]\n"
        "     1\tresult 1: Python docs\n"
        "     2\tTODO: check licensing\n"
        "     3\tresult 2: Rust book\n"
        "     4\tresult 3: Go tour\n"
        "     5\ttodo later"
    )


def test_seed_search(store: MemoryBufferStore) -> None:
    assert run(store, operation="search", target="TODO", scope="search_results") == (
        "== search_results ==\n     2:\tTODO: check licensing\n\n1 matching line for 'TODO' in \"search_results\"."
    )


def test_seed_export(store: MemoryBufferStore) -> None:
    text = run(store, operation="export", target="search_results", destination="reports/search_results.md")
    assert text == "[buffer exported] search_results -> file:reports/search_results.md (93 chars, append)"
    assert store.files == {"reports/search_results.md": SEARCH}


# --- windows and notes ---------------------------------------------------------------------


def test_a_partial_line_window_says_where_to_continue(store: MemoryBufferStore) -> None:
    assert run(store, operation="read", target="search_results", start_line=2, end_line=3) == (
        "[search_results: lines 2-3 of 5]\n"
        "     2\tTODO: check licensing\n"
        "     3\tresult 2: Rust book\n"
        "[2 more lines: read again with start_line=4]"
    )


def test_peek_and_character_reads_say_where_to_continue(store: MemoryBufferStore) -> None:
    assert run(store, operation="peek", target="analysis", max_chars=10) == (
        '[analysis: chars 0-9 of 36]\n{"summary"\n[26 more chars: peek again with offset=10]'
    )
    assert run(store, operation="read", target="analysis", offset=30, length=5) == (
        '[analysis: chars 30-34 of 36]\ndo":1\n[1 more char: read again with offset=35, length=N]'
    )
    assert run(store, operation="peek", target="analysis", offset=30) == '[analysis: chars 30-35 of 36]\ndo":1}'


def test_peek_is_clamped_to_the_read_limit(store: MemoryBufferStore) -> None:
    text = run_buffer_op(
        {"operation": "peek", "target": "search_results", "max_chars": 10**6},
        store,
        limits=BufferLimits(max_read_chars=5),
    )
    assert text == "[search_results: chars 0-4 of 93]\nresul\n[88 more chars: peek again with offset=5]"


def test_an_empty_buffer(store: MemoryBufferStore) -> None:
    store.write("empty", "")
    assert run(store, operation="peek", target="empty") == "[empty: empty]"


def test_long_lines_are_clipped_in_line_reads() -> None:
    memory = MemoryBufferStore(clock=lambda: T0)
    memory.write("wide", "x" * 50 + "\nshort\n")
    text = run_buffer_op(
        {"operation": "read", "target": "wide", "start_line": 1, "end_line": 2},
        memory,
        limits=BufferLimits(max_line_chars=10),
    )
    assert text == (
        "[wide: lines 1-2 of 2]\n"
        "     1\txxxxxxxxxx… [line clipped: 40 more chars]\n"
        "     2\tshort\n"
        "[1 line clipped; read by offset/length or search to see inside them]"
    )


# --- search --------------------------------------------------------------------------------


def test_search_without_scope_covers_every_buffer(store: MemoryBufferStore) -> None:
    assert run(store, operation="search", target="todo", ignore_case=True) == (
        "== search_results ==\n"
        "     2:\tTODO: check licensing\n"
        "     5:\ttodo later\n"
        "== analysis ==\n"
        '     1:\t{"summary":"three results","todo":1}\n\n'
        "3 matching lines for 'todo' in 2 buffers (2 with matches)."
    )


def test_search_with_regex_and_context(store: MemoryBufferStore) -> None:
    assert run(store, operation="search", target=r"result [23]", scope="search_results", regex=True, context=1) == (
        "== search_results ==\n"
        "     2-\tTODO: check licensing\n"
        "     3:\tresult 2: Rust book\n"
        "     4:\tresult 3: Go tour\n"
        "     5-\ttodo later\n\n"
        "2 matching lines for 'result [23]' in \"search_results\"."
    )


def test_max_matches_is_shared_across_buffers_and_reported(store: MemoryBufferStore) -> None:
    text = run(store, operation="search", target="t", max_matches=2)
    assert text.startswith("== search_results ==\n     1:\tresult 1: Python docs\n     3:\tresult 2: Rust book\n\n")
    assert text.endswith(
        "stopped at max_matches, so later lines were not searched (narrow the pattern or raise max_matches)."
    )
    assert "== analysis ==" not in text


def test_no_matches_says_where_it_looked(store: MemoryBufferStore) -> None:
    assert run(store, operation="search", target="zebra") == "No matches for 'zebra' in 2 buffers."
    assert run(store, operation="search", target="zebra", scope="analysis") == "No matches for 'zebra' in \"analysis\"."
    empty = MemoryBufferStore()
    assert run(empty, operation="search", target="x") == "No buffers yet, so there is nothing to search."


def test_regex_needs_an_engine_the_caller_provides(store: MemoryBufferStore) -> None:
    with pytest.raises(PatternError, match="regex search is not available here"):
        run_buffer_op({"operation": "search", "target": "a+", "regex": True}, store)
    assert isinstance(literal_pattern("a", regex=False, ignore_case=True), LiteralMatcher)


# --- misuse: the texts the model sees ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"operation": "read", "target": "search_results"},
            "read needs a range: search_results has 5 lines (93 chars) and a whole read is not allowed. Give "
            "start_line and end_line (e.g. start_line=1, end_line=5; at most 2,000 lines and 20,000 chars per "
            "read), or offset and length in chars; use peek for a quick look or search to find the part you need",
        ),
        (
            {"operation": "read", "target": "search_results", "start_line": 1, "end_line": 5000},
            "lines 1-5000 are 5,000 lines; read at most 2,000 at a time (start_line=1, end_line=2000), or use search",
        ),
        (
            {"operation": "read", "target": "search_results", "offset": 0, "length": 50_000},
            "length=50,000 is over the 20,000-char read limit; read at most 20,000 chars at a time (offset=0, "
            "length=20000), or use search",
        ),
        (
            {"operation": "read", "target": "search_results", "start_line": 3},
            "read needs both start_line and end_line, e.g. start_line=3, end_line=202",
        ),
        (
            {"operation": "read", "target": "search_results", "offset": 3},
            "read by characters needs both offset and length, e.g. offset=3, length=5000",
        ),
        (
            {"operation": "read", "target": "search_results", "start_line": 1, "end_line": 2, "offset": 0},
            "read takes either start_line + end_line or offset + length, not both",
        ),
        (
            {"operation": "read", "target": "search_results", "start_line": 5, "end_line": 2},
            "end_line (2) is before start_line (5)",
        ),
        (
            {"operation": "read", "target": "search_results", "start_line": 9, "end_line": 12},
            "start_line=9 is past the end: search_results has 5 lines (use start_line 1-5)",
        ),
        (
            {"operation": "peek", "target": "analysis", "offset": 36},
            "offset=36 is past the end: analysis has 36 chars (offsets 0-35)",
        ),
        (
            {"operation": "info", "target": "nope"},
            'unknown buffer "nope"; available buffers: analysis, search_results',
        ),
        (
            {"operation": "search", "target": "x", "scope": "nope"},
            'unknown buffer "nope"; available buffers: analysis, search_results',
        ),
        ({"operation": "info"}, "info needs target: the buffer name"),
        ({"operation": "search"}, "search needs target: the text or regex to find"),
        ({"operation": "export", "target": "analysis"}, "export needs destination: a relative file path"),
        (
            {"operation": "peek", "target": "analysis", "start_line": 3},
            "peek does not take start_line (it takes: max_chars, offset, target)",
        ),
        ({"operation": "list", "target": "analysis"}, "list does not take target (it takes: no other parameters)"),
        ({"operation": "delete"}, "operation must be one of list, info, peek, read, search, export"),
        ({}, "operation must be one of list, info, peek, read, search, export"),
        ({"operation": "list", "path": "x"}, "unknown parameter 'path' (parameters: operation, target, scope,"),
        ({"operation": "peek", "target": "analysis", "offset": -1}, "offset: Input should be greater than or equal"),
        ({"operation": "search", "target": "x", "context": 99}, "context=99 is over the limit of 20; use at most 20"),
        (
            {"operation": "export", "target": "analysis", "destination": "/etc/passwd"},
            "invalid file path '/etc/passwd': only relative paths are allowed",
        ),
        (
            {"operation": "export", "target": "analysis", "destination": "x", "write_mode": "overwrite"},
            "write_mode: Input should be 'append', 'replace' or 'new'",
        ),
    ],
)
def test_misuse_gets_a_text_that_says_how_to_fix_it(
    store: MemoryBufferStore, args: dict[str, Any], message: str
) -> None:
    text = execute_buffer_op(args, store, compile_pattern=re_pattern)
    assert text.startswith("Error: " + message)


def test_a_read_that_renders_over_the_limit_suggests_fewer_lines() -> None:
    memory = MemoryBufferStore(clock=lambda: T0)
    memory.write("big", "".join(f"{'y' * 90}\n" for _ in range(100)))
    with pytest.raises(BufferOpError) as caught:
        run_buffer_op(
            {"operation": "read", "target": "big", "start_line": 1, "end_line": 100},
            memory,
            limits=BufferLimits(max_read_chars=2_000),
        )
    assert caught.value.message == (
        "lines 1-100 of big are 9,799 chars, over the 2,000-char read limit; read about 20 lines at a time "
        "(start_line=1, end_line=20), or use search"
    )
    ok = run_buffer_op(
        {"operation": "read", "target": "big", "start_line": 1, "end_line": 20},
        memory,
        limits=BufferLimits(max_read_chars=2_000),
    )
    assert ok.startswith("[big: lines 1-20 of 100]")


def test_unknown_buffers_are_typed_not_found_errors(store: MemoryBufferStore) -> None:
    with pytest.raises(UnknownBuffer):
        run_buffer_op({"operation": "peek", "target": "nope"}, store)


def test_arguments_arrive_as_json_text(store: MemoryBufferStore) -> None:
    assert execute_buffer_op('{"operation": "list"}', store).startswith("2 buffers:")
    assert execute_buffer_op('{"operation": ', store).startswith("Error: the arguments are not valid JSON")
    assert execute_buffer_op("[1]", store) == 'Error: the arguments must be a JSON object such as {"operation": "list"}'


def test_export_expands_today_and_honours_write_modes(store: MemoryBufferStore) -> None:
    first = run(store, operation="export", target="analysis", destination="archive/{today}.json", write_mode="new")
    assert first == "[buffer exported] analysis -> file:archive/2026-01-01.json (36 chars, new)"
    second = run(store, operation="export", target="analysis", destination="archive/{today}.json", write_mode="new")
    assert "file:archive/2026-01-01_2.json" in second
    run(store, operation="export", target="analysis", destination="archive/{today}.json", write_mode="replace")
    assert store.files["archive/2026-01-01.json"] == ANALYSIS


def test_export_with_today_needs_the_date_from_the_caller(store: MemoryBufferStore) -> None:
    with pytest.raises(ValueError, match="needs today="):
        run_buffer_op({"operation": "export", "target": "analysis", "destination": "a/{today}"}, store)


# --- the tool definition -------------------------------------------------------------------


def test_the_schema_and_the_args_model_agree() -> None:
    properties = BUFFER_OPS_PARAMETERS["properties"]
    assert list(properties) == list(BufferOpsArgs.model_fields)
    assert properties["operation"]["enum"] == list(OPERATIONS) == list(ALLOWED)
    assert properties["write_mode"]["enum"] == [m.value for m in WriteMode]
    assert BUFFER_OPS_PARAMETERS["required"] == ["operation"]
    for name in set().union(*ALLOWED.values()):
        assert name in properties


def test_the_strict_variant_is_openai_strict_mode_compatible() -> None:
    tool = strict(buffer_ops_tool())
    function = tool["function"]
    assert function["name"] == BUFFER_OPS_NAME and function["strict"] is True
    parameters = function["parameters"]
    assert parameters["additionalProperties"] is False
    assert parameters["required"] == list(parameters["properties"])
    assert strict_violations(parameters) == []
    for name, schema in parameters["properties"].items():
        if name != "operation":
            assert "null" in schema["type"], name
            assert None in schema.get("enum", [None])


def test_a_strict_mode_call_with_nulls_is_accepted(store: MemoryBufferStore) -> None:
    nulls = dict.fromkeys(BUFFER_OPS_PARAMETERS["properties"])
    call = nulls | {"operation": "search", "target": "Rust", "scope": "search_results"}
    assert "     3:\tresult 2: Rust book" in execute_buffer_op(json.dumps(call), store)
    assert parse_args(nulls | {"operation": "list"}).given() == set()


def test_the_tool_definitions_are_fresh_copies() -> None:
    tool = buffer_ops_tool()
    tool["function"]["parameters"]["properties"].clear()
    assert buffer_ops_tool()["function"]["parameters"] == BUFFER_OPS_PARAMETERS
