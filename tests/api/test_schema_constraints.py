"""The OpenAPI document states what the API enforces, and links every operation on a resource to its creation.

What schemathesis' run against the stack (tests/api/schemathesis_stack.py, `make schemathesis`) found, kept as
fast checks: each rule in the document agrees with the check the API really makes (strings drawn from the
document's pattern pass the API's own validator), the limits that are settings are the deployment's, and no
operation that needs an id is left without a link from the operation that creates it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from api.app import create_app
from api.openapi_doc import DESTINATION, NAME, TOOL_ARGS, TOOL_NAME
from api.retention import TTL_PATTERN, ttl_seconds
from api.routers.outputs import upload_meta
from extraction.buffers.ops import BufferLimits
from extraction.directives.specs import check_tool_name, make_route, tool_routes_from_mapping
from extraction.variables.names import is_valid_name
from tests.fixtures.api_server import api_settings, assert_error

pytestmark = pytest.mark.twin(
    "the OpenAPI document's rules against the API's own validators; what a request stores is not what it tests"
)


def document(**overrides: Any) -> dict[str, Any]:
    return create_app(api_settings("redis://127.0.0.1:6379/15", "memory://", **overrides)).openapi()


DOCUMENT = document()


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return DOCUMENT


def operations(openapi: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {op["operationId"]: (m.upper(), p, op) for p, item in openapi["paths"].items() for m, op in item.items()}


def links(openapi: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (origin, link)
        for origin, (_, _, op) in operations(openapi).items()
        for response in op["responses"].values()
        for link in response.get("links", {}).values()
    ]


def parameter(openapi: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    found = [p for p in openapi["paths"][path][method]["parameters"] if p["name"].lower() == name]
    assert len(found) == 1, (path, method, name)
    return dict(found[0]["schema"])


def test_the_completed_document_is_valid_openapi(openapi: dict[str, Any]) -> None:
    schemathesis.openapi.from_dict(openapi).validate()


def test_every_operation_on_a_created_resource_is_linked_from_its_creation(openapi: dict[str, Any]) -> None:
    """The stateful phase can reach an id only through a link: none may be missing (the run saw 7 unreached)."""
    targets = {link["operationId"] for _, link in links(openapi)}
    needing_ids = {
        op_id
        for op_id, (_, path, _) in operations(openapi).items()
        if "{" in path or path.startswith("/v1/extractions")
    }
    assert needing_ids - targets == set()


def test_every_link_names_parameters_its_target_has(openapi: dict[str, Any]) -> None:
    by_id = operations(openapi)
    for origin, link in links(openapi):
        _, _, target = by_id[link["operationId"]]
        declared = {p["name"] for p in target.get("parameters", [])}
        named = {name.split(".", 1)[-1] for name in link.get("parameters", {})}
        assert {name.lower() for name in named} <= {name.lower() for name in declared}, (origin, link)
        if "requestBody" in link:
            body = target["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
            assert set(link["requestBody"]) <= set(openapi["components"]["schemas"][body]["properties"]), link


def test_a_sessions_first_upload_is_linked_with_a_route_that_cannot_contradict_itself(
    openapi: dict[str, Any], client: TestClient
) -> None:
    """Any write mode goes with `variable:linked` named the same in every form, so the linked upload is stored."""
    link = openapi["paths"]["/v1/sessions"]["post"]["responses"]["201"]["links"]
    upload = link["upload_output_v1_sessions__session_id__outputs_post"]["parameters"]
    session = client.post("/v1/sessions").json()["id"]
    query = {k.split(".")[1]: v for k, v in upload.items() if k.startswith("query.")}
    headers = {k.split(".")[1]: v for k, v in upload.items() if k.startswith("header.")}
    for mode in ("append", "replace", "new"):
        stored = client.post(
            f"/v1/sessions/{session}/outputs", params={**query, "write_mode": mode}, headers=headers, content=b"x\n"
        )
        assert stored.status_code == 201 and stored.json()["handle"] and stored.json()["name"], stored.text


def test_a_job_is_linked_to_its_events_trace_and_cancel_with_the_id_the_creation_answers(
    openapi: dict[str, Any],
) -> None:
    created = openapi["paths"]["/v1/extractions"]["post"]["responses"]["202"]["links"]
    job_ops = {op_id for op_id, (_, path, _) in operations(openapi).items() if "{job_id}" in path}
    assert {name for name, link in created.items() if link["parameters"] == {"job_id": "$response.body#/id"}} == job_ops
    assert len(job_ops) == 4  # the job, its events, its trace, cancel


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=140) | st.from_regex(NAME["pattern"], fullmatch=True))
def test_the_variable_name_rule_is_the_one_the_api_checks(name: str) -> None:
    fits = re.search(NAME["pattern"], name) is not None and len(name) <= NAME["maxLength"]
    assert fits == is_valid_name(name)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(DESTINATION["pattern"], fullmatch=True))
def test_a_destination_the_document_allows_is_one_the_api_routes(destination: str) -> None:
    make_route(destination)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(TOOL_ARGS["pattern"], fullmatch=True))
def test_tool_arguments_the_document_allows_are_json_the_api_takes(args: str) -> None:
    json.loads(args)
    assert upload_meta(x_tool_args=args).tool_args == args


@settings(max_examples=200, deadline=None)
@given(st.from_regex(TOOL_NAME["pattern"], fullmatch=True).filter(lambda s: len(s) <= TOOL_NAME["maxLength"]))
def test_a_tool_name_the_document_allows_is_one_the_api_takes(name: str) -> None:
    upload_meta(tool_name=name)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,20}$", fullmatch=True), st.none(), max_size=3))
def test_routing_tool_names_the_document_allows_parse(tools: dict[str, None]) -> None:
    pattern = DOCUMENT["components"]["schemas"]["RoutingParseRequest"]["properties"]["tools"]["propertyNames"]
    for name in tools:
        assert re.search(pattern["pattern"], name) and check_tool_name(name) == name
    tool_routes_from_mapping(tools)


def test_routing_takes_exactly_one_of_text_and_tools(openapi: dict[str, Any], client: TestClient) -> None:
    request = openapi["components"]["schemas"]["RoutingParseRequest"]
    assert request["oneOf"] == [{"required": ["text"]}, {"required": ["tools"]}]
    assert_error(client.post("/v1/routing/parse", json={}), 422, "validation_error")
    assert_error(client.post("/v1/routing/parse", json={"text": "", "tools": {}}), 422, "validation_error")
    assert client.post("/v1/routing/parse", json={"tools": {"search": "variable:hits"}}).status_code == 200


def test_the_settings_limits_are_the_deployments() -> None:
    openapi = document(max_extract_chars=321, max_wait_seconds=4.5)
    extract = openapi["components"]["schemas"]["ExtractionRequest"]["properties"]["extract"]
    assert extract["maxLength"] == 321
    assert parameter(openapi, "/v1/extractions/{job_id}", "get", "wait")["maximum"] == 4.5


def test_a_job_may_name_only_an_allowed_model_and_none_when_none_is_allowed() -> None:
    fields = lambda doc: doc["components"]["schemas"]["ExtractionRequest"]["properties"]  # noqa: E731
    assert "model" not in fields(document())
    assert fields(document(allowed_models=["openai/a", "openai/b"]))["model"]["enum"] == ["openai/a", "openai/b"]


def test_webhooks_are_in_the_document_only_when_the_deployment_sends_them() -> None:
    without, with_secret = document(), document(webhook_secret="s" * 32)
    assert "/v1/webhooks/secret" not in without["paths"]
    assert "callback_url" not in without["components"]["schemas"]["ExtractionRequest"]["properties"]
    assert "/v1/webhooks/secret" in with_secret["paths"]
    assert "callback_url" in with_secret["components"]["schemas"]["ExtractionRequest"]["properties"]


def test_line_reads_document_the_two_media_types_they_answer_in(openapi: dict[str, Any]) -> None:
    for path in ("/v1/outputs/{handle}/lines", "/v1/outputs/{handle}/grep"):
        assert parameter(openapi, path, "get", "accept")["enum"] == ["text/plain", "application/json"]


def test_the_served_document_is_the_completed_one(client: TestClient, openapi: dict[str, Any]) -> None:
    served = client.get("/openapi.json").json()
    assert served["paths"].keys() == openapi["paths"].keys()
    assert "links" in served["paths"]["/v1/sessions"]["post"]["responses"]["201"]


@settings(max_examples=200, deadline=None)
@given(st.from_regex(TTL_PATTERN, fullmatch=True))
def test_a_ttl_the_document_allows_is_one_the_api_takes(ttl: str) -> None:
    """The run sent TTLs such as `X8m` and `''` to session creation and uploads, all refused: the pattern says which."""
    assert ttl_seconds(ttl, ("header", "x-ttl")) > 0


def test_both_forms_of_a_ttl_carry_its_pattern_and_the_api_refuses_what_it_does_not_match(
    openapi: dict[str, Any], client: TestClient
) -> None:
    for path in ("/v1/sessions", "/v1/sessions/{session_id}/outputs"):
        assert parameter(openapi, path, "post", "ttl")["pattern"] == TTL_PATTERN
        assert parameter(openapi, path, "post", "x-ttl")["pattern"] == TTL_PATTERN
    assert_error(client.post("/v1/sessions", headers={"X-TTL": "X8m"}), 422, "validation_error")
    assert client.post("/v1/sessions", params={"ttl": "30m"}).status_code == 201


def test_no_parameter_is_documented_as_null(openapi: dict[str, Any], client: TestClient) -> None:
    """A null parameter reaches the API as the text `null` (the run sent `X-TTL: null`, `Idempotency-Key: null`)."""
    nullable = [
        (path, param["name"])
        for path, _, op in operations(openapi).values()
        for param in op.get("parameters", [])
        if any(option.get("type") == "null" for option in param["schema"].get("anyOf", []))
    ]
    assert nullable == []
    assert_error(client.post("/v1/sessions", headers={"X-TTL": "null"}), 422, "validation_error")


def test_the_longest_character_read_is_the_one_the_api_allows(openapi: dict[str, Any], client: TestClient) -> None:
    longest = BufferLimits().max_read_chars
    assert parameter(openapi, "/v1/sessions/{session_id}/variables/{name}/read", "get", "length")["maximum"] == longest
    session = client.post("/v1/sessions").json()["id"]
    client.post(f"/v1/sessions/{session}/outputs", params={"name": "log"}, content=b"x" * (longest + 10))
    read = f"/v1/sessions/{session}/variables/log/read"
    assert client.get(read, params={"offset": 0, "length": longest}).status_code == 200
    assert_error(client.get(read, params={"offset": 0, "length": longest + 1}), 422, "invalid_buffer_op")


def test_every_view_of_a_job_leads_to_its_other_operations(openapi: dict[str, Any]) -> None:
    """The run reached a job's events and cancel only when a job could be reached from its reads as well."""
    by_id = operations(openapi)
    job_ops = {op_id for op_id, (_, path, _) in by_id.items() if "{job_id}" in path}
    for view in ("get_extraction_v1_extractions__job_id__get", "cancel_extraction_v1_extractions__job_id__cancel_post"):
        _, _, op = by_id[view]
        linked = op["responses"]["200"]["links"]
        assert set(linked) == job_ops - {view}
        assert all(link["parameters"] == {"job_id": "$response.body#/id"} for link in linked.values())


def test_an_output_read_leads_to_an_extraction_of_it(openapi: dict[str, Any], client: TestClient) -> None:
    """The link's body, with the handle the output's view answers, is an extraction the API starts."""
    _, _, view = operations(openapi)["get_output_v1_outputs__handle__get"]
    link = view["responses"]["200"]["links"]["create_extraction_v1_extractions_post"]
    assert link["requestBody"]["handle"] == "$response.body#/handle"
    session = client.post("/v1/sessions").json()["id"]
    handle = client.post(f"/v1/sessions/{session}/outputs", content=b"error: disk full\n").json()["handle"]
    shown = client.get(f"/v1/outputs/{handle}").json()
    body = {**link["requestBody"], "handle": shown["handle"]}
    assert client.post("/v1/extractions", json=body).status_code == 202


def test_no_operation_links_to_itself(openapi: dict[str, Any]) -> None:
    for op_id, (_, _, op) in operations(openapi).items():
        for response in op["responses"].values():
            assert op_id not in response.get("links", {}), op_id
