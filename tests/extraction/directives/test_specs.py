"""Routing specs: destinations, write modes, and the toolkit's dict form."""

from __future__ import annotations

from typing import Any

import pytest

from extraction.directives.specs import (
    DISCARD,
    INLINE,
    Destination,
    DestinationKind,
    DirectiveError,
    InputSource,
    InvalidDestination,
    InvalidSource,
    OutputRoute,
    RoutingSpec,
    WriteMode,
    make_route,
    parse_destination,
    parse_write_mode,
    tool_routes_from_mapping,
)
from extraction.errors import InvalidInput


@pytest.mark.parametrize(
    ("text", "kind", "target"),
    [
        ("inline", DestinationKind.INLINE, None),
        ("discard", DestinationKind.DISCARD, None),
        ("variable:foo", DestinationKind.VARIABLE, "foo"),
        ("file:results/{today}", DestinationKind.FILE, "results/{today}"),
        ("file:ab:c", DestinationKind.FILE, "ab:c"),
    ],
)
def test_destinations_parse_and_print_back(text: str, kind: DestinationKind, target: str | None) -> None:
    destination = parse_destination(text)
    assert (destination.kind, destination.target) == (kind, target)
    assert str(destination) == text
    assert destination.routed == (kind in (DestinationKind.VARIABLE, DestinationKind.FILE))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "unknown destination ''"),
        ("variable", "variable: needs a name"),
        ("variable:", "variable: needs a name, e.g. variable:search_results"),
        ("file:", "file: needs a path, e.g. file:results/{today}"),
        ("buffer:x", "unknown destination 'buffer:x': use inline, discard, variable:NAME or file:PATH"),
        ("Variable:x", "unknown destination"),
        ("inline:x", "inline takes no target"),
        ("variable:bad-name", "invalid variable name 'bad-name'"),
        ("file:/abs", "only relative paths"),
        ("file:a/../b", "'..' segments"),
    ],
)
def test_bad_destinations_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(InvalidDestination) as caught:
        parse_destination(text)
    assert problem in caught.value.message
    assert caught.value.details == {"destination": text}


def test_write_modes() -> None:
    assert [parse_write_mode(m) for m in ("append", "replace", "new")] == list(WriteMode)
    with pytest.raises(InvalidDestination, match="unknown write-mode 'Replace': use append, replace or new"):
        parse_write_mode("Replace")


def test_a_routed_output_appends_by_default() -> None:
    assert make_route("variable:foo").effective_write_mode is WriteMode.APPEND
    assert make_route("file:x", "new").effective_write_mode is WriteMode.NEW
    assert make_route("inline").effective_write_mode is None
    assert make_route("discard").effective_write_mode is None
    assert make_route("variable:foo").write_mode is None


@pytest.mark.parametrize("output", ["inline", "discard"])
def test_a_write_mode_needs_a_stored_destination(output: str) -> None:
    with pytest.raises(InvalidDestination, match=f"applies only to variable: and file: outputs, not {output}"):
        make_route(output, "replace")


def test_models_refuse_inconsistent_values_with_typed_errors() -> None:
    with pytest.raises(InvalidDestination, match="takes no target"):
        Destination(kind=DestinationKind.INLINE, target="x")
    with pytest.raises(InvalidInput, match="invalid variable name"):
        Destination(kind=DestinationKind.VARIABLE, target=None)
    with pytest.raises(InvalidDestination):
        OutputRoute(output=DISCARD, write_mode=WriteMode.NEW)
    with pytest.raises(InvalidInput, match="invalid tool name"):
        RoutingSpec(tools={"bad name": None})


@pytest.mark.parametrize(
    ("kind", "value", "error"),
    [
        ("File", "x", InvalidSource),
        ("file", "", InvalidSource),
        ("file", " x", InvalidSource),
        ("query", "a (b)", InvalidSource),
        ("query", "a #b", InvalidSource),
        ("url", "a\tb", InvalidSource),
        ("file", "../x", InvalidInput),
        ("variable", "a-b", InvalidInput),
    ],
)
def test_input_sources_that_could_not_be_written_back_are_refused(kind: str, value: str, error: type) -> None:
    with pytest.raises(error):
        InputSource(kind=kind, value=value)


def test_input_sources_accept_future_kinds() -> None:
    assert str(InputSource(kind="url", value="https://example.com/a(b)#c")) == "url:https://example.com/a(b)#c"
    assert str(InputSource(kind="query", value="open bugs, by owner")) == "query:open bugs, by owner"


def test_the_dict_form_gives_the_same_routes_as_directives() -> None:
    routes = tool_routes_from_mapping(
        {
            "web_search_tavily": {"output": "variable:foo", "write_mode": "replace"},
            "code_execution": {"output": "file:results/{today}"},
            "fetch": "discard",
            "plain": None,
            "empty": {},
            "dashed": {"output": "variable:x", "write-mode": "new"},
            "nulls": {"output": None, "write_mode": None},
        }
    )
    assert routes == {
        "web_search_tavily": OutputRoute(output=parse_destination("variable:foo"), write_mode=WriteMode.REPLACE),
        "code_execution": OutputRoute(output=parse_destination("file:results/{today}")),
        "fetch": OutputRoute(output=DISCARD),
        "plain": None,
        "empty": None,
        "dashed": OutputRoute(output=parse_destination("variable:x"), write_mode=WriteMode.NEW),
        "nulls": None,
    }
    assert make_route("inline") == OutputRoute(output=INLINE)


@pytest.mark.parametrize(
    ("mapping", "path", "problem"),
    [
        ({"search": {"output": "variable:"}}, "tools.search.output", "needs a name"),
        ({"search": {"output": "variable:x", "write_mode": "bad"}}, "tools.search.write_mode", "unknown write-mode"),
        ({"search": {"output": "inline", "write_mode": "new"}}, "tools.search.write_mode", "applies only to"),
        ({"search": {"write_mode": "new"}}, "tools.search.write_mode", "needs output="),
        ({"search": {"outptu": "variable:x"}}, "tools.search.outptu", "unknown parameter 'outptu'"),
        ({"search": {"output": 3}}, "tools.search.output", "must be a string, got int"),
        ({"search": ["variable:x"]}, "tools.search", "expected an object"),
        ({"bad tool": None}, "tools.bad tool", "invalid tool name"),
    ],
)
def test_dict_form_errors_name_the_entry(mapping: dict[str, Any], path: str, problem: str) -> None:
    with pytest.raises(DirectiveError) as caught:
        tool_routes_from_mapping(mapping)
    assert caught.value.details == {"path": path}
    assert caught.value.message.startswith(f"{path}: ")
    assert problem in caught.value.message
