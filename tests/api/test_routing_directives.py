"""Seed 003's directive examples, parsed by `POST /v1/routing/parse` and then executed against a live API.

Every fenced example of the seed that holds `@tools` or `@input` lines is parsed over HTTP (the answer must
be the pure parser's spec), then run in a fresh session: each routed tool gets an upload with that tool's
`output`/`write_mode`; each routed `@input` reads its source (a session file or variable) and uploads it
with its route, as an agent runtime would. The session's variables and files must then hold what a
plain dict model of the write modes says (`url:` sources are parsed but not fetched: "future").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import httpx
import pytest

from extraction.buffers.store import append_text
from extraction.directives.file_paths import expand_path, fresh_file_path
from extraction.directives.specs import DestinationKind, OutputRoute, RoutingSpec, WriteMode, make_route
from extraction.directives.syntax import parse_directives
from extraction.variables.names import fresh_name
from tests.api.session_client import content, new_session, stored, upload
from tests.api.test_routing_uploads import today
from tests.fixtures.api_server import ApiServer, assert_error
from tests.helpers import seed_text


def directive_examples() -> list[str]:
    blocks = re.findall(r"```\n(.*?)```", seed_text("003"), flags=re.DOTALL)
    return [block for block in blocks if re.search(r"^\s*@(tools|input)\b", block, flags=re.MULTILINE)]


@pytest.fixture()
def client(store_server: ApiServer) -> Iterator[httpx.Client]:
    with store_server.client() as c:
        yield c


class Model:
    """What the session should hold after the routes ran: the write modes on two dicts."""

    def __init__(self) -> None:
        self.spaces: dict[DestinationKind, dict[str, str]] = {DestinationKind.VARIABLE: {}, DestinationKind.FILE: {}}

    def write(self, route: OutputRoute, text: str) -> str:
        kind, target = route.output.kind, route.output.target or ""
        space = self.spaces[kind]
        key = expand_path(target, _today()) if kind is DestinationKind.FILE else target
        mode = route.effective_write_mode
        if mode is WriteMode.NEW:
            key = fresh_name(key, space) if kind is DestinationKind.VARIABLE else fresh_file_path(key, space)
        space[key] = append_text(space[key], text) if mode is WriteMode.APPEND and key in space else text
        return f"{kind.value}:{key}"


def _today() -> dt.date:
    return dt.date.fromisoformat(today())


def test_the_seed_has_the_examples_this_test_runs() -> None:
    examples = directive_examples()
    assert len(examples) == 5 and any("write-mode=replace" in e for e in examples)


@pytest.mark.parametrize("example", directive_examples())
def test_every_seed_example_parses_over_http_and_runs(client: httpx.Client, example: str) -> None:
    response = client.post("/v1/routing/parse", json={"text": example})
    assert response.status_code == 200, response.text
    spec = parse_directives(example)
    assert response.json() == spec.model_dump(mode="json")
    session, model = new_session(client), Model()
    run_tools(client, session, spec, model)
    run_inputs(client, session, spec, model)
    assert_state(client, session, model)


def run_tools(client: httpx.Client, session: str, spec: RoutingSpec, model: Model) -> None:
    for tool, route in spec.tools.items():
        assert route is not None, tool
        text = f"output of {tool}\n"
        answer = stored(upload(client, session, text, tool=tool, **_params(route)))
        destination = model.write(route, text)
        assert answer["manifest"] == f"[tool output routed] {tool} -> {destination} (total {len(text)} chars)"


def run_inputs(client: httpx.Client, session: str, spec: RoutingSpec, model: Model) -> None:
    for directive in spec.inputs:
        source, route = directive.source, directive.route
        if source.kind == "url":
            assert route is not None and route.output.kind is DestinationKind.VARIABLE  # parsed; fetching is future
            continue
        kind = DestinationKind(source.kind)
        if source.value not in model.spaces[kind]:  # the file the example reads: put it there first
            setup = make_route(f"{kind.value}:{source.value}", "replace")
            text = f"content of {source.value}\n"
            stored(upload(client, session, text, tool="setup", **_params(setup)))
            model.write(setup, text)
        text = read_source(client, session, kind, source.value)
        assert text == model.spaces[kind][source.value]
        assert route is not None
        stored(upload(client, session, text, tool="input", **_params(route)))
        model.write(route, text)


def _params(route: OutputRoute) -> dict[str, str]:
    params = {"output": str(route.output)}
    if route.write_mode is not None:
        params["write_mode"] = route.write_mode.value
    return params


def read_source(client: httpx.Client, session: str, kind: DestinationKind, key: str) -> str:
    listing = "variables" if kind is DestinationKind.VARIABLE else "files"
    field = "name" if kind is DestinationKind.VARIABLE else "path"
    items = client.get(f"/v1/sessions/{session}/{listing}").json()["items"]
    handle = next(item["handle"] for item in items if item[field] == key)
    return content(client, handle).decode()


def assert_state(client: httpx.Client, session: str, model: Model) -> None:
    for kind, listing, field in (
        (DestinationKind.VARIABLE, "variables", "name"),
        (DestinationKind.FILE, "files", "path"),
    ):
        items = client.get(f"/v1/sessions/{session}/{listing}").json()["items"]
        held = {item[field]: content(client, item["handle"]).decode() for item in items}
        expected = {k: v for k, v in model.spaces[kind].items()}
        assert held == expected, (kind, held, expected)


def test_the_dict_form_parses_to_the_same_spec(client: httpx.Client) -> None:
    text = (
        "@tools web_search_tavily(output=variable:foo, write-mode=replace), code_execution(output=file:results/{today})"
    )
    tools = {
        "web_search_tavily": {"output": "variable:foo", "write_mode": "replace"},
        "code_execution": "file:results/{today}",
    }
    by_text = client.post("/v1/routing/parse", json={"text": text}).json()
    assert client.post("/v1/routing/parse", json={"tools": tools}).json() == by_text
    assert by_text["tools"]["web_search_tavily"] == {
        "output": {"kind": "variable", "target": "foo"},
        "write_mode": "replace",
    }


def test_a_bad_directive_is_a_422_naming_the_token_and_its_position(client: httpx.Client) -> None:
    text = "Plan the step.\n@tools search(output=variable:ok),\n       fetch(output=folder:x)"
    error = assert_error(client.post("/v1/routing/parse", json={"text": text}), 422, "directive_error")
    assert error["details"]["line"] == 3 and error["details"]["column"] >= 8
    assert "folder:x" in error["details"]["token"] or "folder" in error["message"]
    mapping = assert_error(client.post("/v1/routing/parse", json={"tools": {"a": {"output": "variable:"}}}), 422)
    assert mapping["code"] == "directive_error" and mapping["details"]["path"] == "tools.a.output"
    for body in ({}, {"text": "@tools a", "tools": {}}, {"txt": "x"}):
        assert_error(client.post("/v1/routing/parse", json=body), 422, "validation_error")
