"""The OpenAPI document says what this deployment enforces, and how one resource leads to the next.

FastAPI derives the document from the routes; three things it cannot see are added here, once per app:

- the rules the handlers check themselves, so a client (or a generator) can tell a valid request from
  an invalid one without sending it: variable names, write modes, destinations, tool arguments that
  must be JSON, tool names without control characters, the two media types a line read answers in,
  TTLs, the longest character read; no parameter is ever null (it is sent as text or not at all);
- the limits that are settings (the longest `extract`, the longest long poll, the allowed models) and
  the parts a deployment does not serve (webhooks without a secret);
- `links` from each resource's creation to every operation on it: session → output → lines, grep,
  content, variable reads and extractions → job → events, trace, cancel; and from every later view of
  an output or a job (its GET, a cancel's answer) on to the same operations, so a sequence can go on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from api.retention import TTL_PATTERN
from api.routers.buffers import LIMITS as READ_LIMITS
from extraction.directives.specs import TOOL_NAME_RE, WriteMode
from extraction.variables.names import MAX_NAME_CHARS, NAME_RE
from infra.settings import Settings

NAME: dict[str, Any] = {
    "type": "string",
    "pattern": f"^{NAME_RE.pattern}$",
    "minLength": 1,
    "maxLength": MAX_NAME_CHARS,
}
WRITE_MODE: dict[str, Any] = {"type": "string", "enum": [mode.value for mode in WriteMode]}
DESTINATION: dict[str, Any] = {
    "type": "string",
    "description": "inline | discard | variable:NAME | file:PATH (PATH relative, in the session's files)",
    "pattern": r"^(inline|discard|variable:[A-Za-z_][A-Za-z0-9_]{0,63}"
    r"|file:[A-Za-z0-9_][A-Za-z0-9_-]{0,63}(\.[a-z]{1,8})?)$",
}
_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}(\.[a-z]{1,8})?"
FILE_PATH: dict[str, Any] = {
    "type": "string",
    "description": "a relative session file path: /-separated names, no control characters, no . or .. segments",
    "pattern": f"^{_SEGMENT}(/{_SEGMENT}){{0,3}}$",
}
TOOL_ARGS: dict[str, Any] = {
    "type": "string",
    "contentMediaType": "application/json",
    "description": "the tool's arguments, verbatim JSON (any JSON text; the pattern shows the usual object form)",
    "pattern": r'^\{("[a-z_]{1,16}": ?("[A-Za-z0-9 _./-]{0,32}"|0|[1-9][0-9]{0,5}|true|false|null))?\}$',
}
TOOL_NAME: dict[str, Any] = {"type": "string", "maxLength": 256, "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"}
TTL: dict[str, Any] = {"type": "string", "pattern": TTL_PATTERN}
LINES_ACCEPT: dict[str, Any] = {"type": "string", "enum": ["text/plain", "application/json"]}

PARAMETERS: dict[tuple[str, str], dict[str, Any]] = {
    ("path", "name"): NAME,
    ("query", "name"): NAME,
    ("query", "scope"): NAME,
    ("header", "x-variable-name"): NAME,
    ("query", "write_mode"): WRITE_MODE,
    ("header", "x-write-mode"): WRITE_MODE,
    ("query", "output"): DESTINATION,
    ("header", "x-output"): DESTINATION,
    ("query", "tool_args"): TOOL_ARGS,
    ("header", "x-tool-args"): TOOL_ARGS,
    ("query", "tool_name"): TOOL_NAME,
    ("header", "x-tool-name"): TOOL_NAME,
    ("header", "accept"): LINES_ACCEPT,
    ("query", "ttl"): TTL,
    ("header", "x-ttl"): TTL,
}

SESSION, OUTPUT, JOB = "$response.body#/id", "$response.body#/handle", "$response.body#/id"
CREATE_SESSION = ("/v1/sessions", "post", "201")
UPLOAD = ("/v1/sessions/{session_id}/outputs", "post", "201")
LINKED_ROUTE = {
    "query.output": "variable:linked",
    "query.name": "linked",
    "header.x-output": "variable:linked",
    "header.x-variable-name": "linked",
}
"""A session's first upload goes to one variable, named in every form: no write mode contradicts it (OpenAPI
cannot state the rule across parameters, see the upload's description), so the output it stores leads on."""
EXTRACT = [("/v1/extractions", "post", "202"), ("/v1/extractions", "post", "201")]
JOB_VIEWS = [*EXTRACT, ("/v1/extractions/{job_id}", "get", "200"), ("/v1/extractions/{job_id}/cancel", "post", "200")]
"""Every answer that is a job leads on to the job's operations: a job is reached from its creation or any view of it."""
OUTPUT_VIEWS = [UPLOAD, ("/v1/outputs/{handle}", "get", "200")]
"""Every answer that is a stored output leads on to the output's operations and to extracting from it."""


def install_openapi(app: FastAPI, settings: Settings) -> None:
    """Replace `app.openapi` with one that builds FastAPI's document once and completes it for `settings`."""
    fastapi_document, built = app.openapi, dict[str, Any]()

    def openapi() -> dict[str, Any]:
        if not built:
            built.update(completed(fastapi_document(), settings))
        return built

    app.openapi = openapi  # type: ignore[method-assign]


def completed(document: dict[str, Any], settings: Settings) -> dict[str, Any]:
    for step in _STEPS:
        step(document, settings)
    return document


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]


def constrain_parameters(document: dict[str, Any], settings: Settings) -> None:
    """Each parameter is text or absent, never null; one named in `PARAMETERS` carries its rule (header names are
    case-insensitive)."""
    for _, _, op in _operations(document):
        for param in op.get("parameters", []):
            rule = PARAMETERS.get((param["in"], param["name"].lower() if param["in"] == "header" else param["name"]))
            param["schema"] = {**_without_null(param["schema"]), **(rule or {})}
    for param in document["paths"]["/v1/extractions/{job_id}"]["get"]["parameters"]:
        if param["name"] == "wait":
            param["schema"]["maximum"] = settings.max_wait_seconds
    for param in document["paths"]["/v1/sessions/{session_id}/variables/{name}/read"]["get"]["parameters"]:
        if param["name"] == "length":
            param["schema"]["maximum"] = READ_LIMITS.max_read_chars


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf [string, null]` (an optional parameter) as plain `string`: a parameter is sent as text or not at all."""
    kept = [option for option in schema.get("anyOf", []) if option.get("type") != "null"]
    rest = {key: value for key, value in schema.items() if key != "anyOf"}
    return {**rest, **kept[0]} if len(kept) == 1 else schema


def constrain_requests(document: dict[str, Any], settings: Settings) -> None:
    """The request body's settings: the longest `extract`, the models a job may name, webhooks only if served;
    and an export's destination, a file path the handler checks itself."""
    fields = document["components"]["schemas"]["ExtractionRequest"]["properties"]
    fields["extract"]["maxLength"] = settings.max_extract_chars
    fields["extract"]["pattern"] = r"\S"  # blank (after trimming) is refused
    if settings.allowed_models:
        fields["model"] = {
            "type": "string",
            "enum": list(settings.allowed_models),
            "description": fields["model"].get("description", ""),
        }
    else:
        del fields["model"]
    export = document["components"]["schemas"]["ExportRequest"]["properties"]
    export["destination"] = {**export["destination"], **FILE_PATH}
    if not settings.webhook_secret:
        del fields["callback_url"]
        document["paths"].pop("/v1/webhooks/secret", None)


def constrain_routing(document: dict[str, Any], settings: Settings) -> None:
    """`/v1/routing/parse` takes exactly one of `text` and `tools`; a tool maps to a destination or a route."""
    del settings
    request = document["components"]["schemas"]["RoutingParseRequest"]
    fields = request["properties"]
    fields["text"] = _without_null(fields["text"])
    routed = {**DESTINATION, "pattern": DESTINATION["pattern"].replace("inline|discard|", "")}
    route = {
        "type": "object",
        "properties": {"output": routed, "write_mode": WRITE_MODE},
        "required": ["output"],
        "additionalProperties": False,
    }
    fields["tools"] = {
        "type": "object",
        "description": fields["tools"].get("description", ""),
        "propertyNames": {"pattern": f"^{TOOL_NAME_RE.pattern}$", "maxLength": 128},
        "additionalProperties": {"anyOf": [{"type": "null"}, DESTINATION, route]},
    }
    request["oneOf"] = [{"required": ["text"]}, {"required": ["tools"]}]


def add_links(document: dict[str, Any], settings: Settings) -> None:
    """From each creation to every operation on what it created, with the id it answered."""
    del settings
    for path, _, op in _operations(document):
        for origin, parameters in _origins(path):
            _link(document, origin, op, parameters)
    for path in ("/v1/extractions", "/v1/extractions/estimate"):
        op = document["paths"][path]["post"]
        for origin in OUTPUT_VIEWS:
            _link(document, origin, op, {}, body={"handle": OUTPUT, "extract": "the lines that report an error"})


def _origins(path: str) -> list[tuple[tuple[str, str, str], dict[str, str]]]:
    """The answers an operation on `path` is linked from, each with the parameters it fills from them."""
    if "{job_id}" in path:
        return [(origin, {"job_id": JOB}) for origin in JOB_VIEWS]
    if "{handle}" in path:
        return [(origin, {"handle": OUTPUT}) for origin in OUTPUT_VIEWS]
    if "{name}" in path:
        return [(UPLOAD, {"session_id": "$request.path.session_id", "name": "$response.body#/name"})]
    if path == UPLOAD[0]:
        return [(CREATE_SESSION, {"session_id": SESSION, **LINKED_ROUTE})]
    return [(CREATE_SESSION, {"session_id": SESSION})] if "{session_id}" in path else []


def _link(
    document: dict[str, Any],
    origin: tuple[str, str, str],
    target: dict[str, Any],
    parameters: dict[str, str],
    body: dict[str, Any] | None = None,
) -> None:
    path, method, status = origin
    source = document["paths"][path][method]
    responses = source["responses"]
    if status not in responses or source["operationId"] == target["operationId"]:
        return
    link: dict[str, Any] = {"operationId": target["operationId"]}
    if parameters:
        link["parameters"] = parameters
    if body is not None:
        link["requestBody"] = body
    responses[status].setdefault("links", {})[target["operationId"]] = link


_STEPS: list[Callable[[dict[str, Any], Settings], None]] = [
    constrain_parameters,
    constrain_requests,
    constrain_routing,
    add_links,
]
