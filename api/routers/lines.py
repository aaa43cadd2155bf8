"""Line-level access to a stored output: numbered Read and Grep, the agent's `tool_output_read`/`_grep`.

Both routes are thin on purpose: `infra.outputs.stored.StoredOutput` is the one implementation the
read-grep sub-agent also uses, so an agent reading over REST sees byte for byte what the sub-agent
sees. The query parameters mirror `extraction.texts.tools.READ_PARAMETERS` / `GREP_PARAMETERS` (same
names, same minimums, plus the upper caps a server needs), and unknown ones are refused the way
those schemas' `additionalProperties: false` refuses them, so a typo like `ignorecase=true` is a
422 instead of a silently different search.

The routes are sync `def`s: FastAPI runs them in its threadpool, so ranged blob reads and a grep
over a gigabyte never block the event loop. The answer is the rendered text (what a tool call
returns) unless the client asks for `application/json`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.deps import BlobsDep, RecordsDep, SettingsDep, Tenant
from api.errors import error_responses, validation_error
from api.routers import API_PREFIX
from api.schemas import GrepView, ReadView
from infra.blobstore import BlobStore
from infra.outputs.grep_engine import MAX_PATTERN_CHARS
from infra.outputs.stored import DEFAULT_MAX_MATCHES, DEFAULT_READ_LIMIT, StoredOutput, grep_time_budget
from infra.outputs.views import is_text_view, reading_view, with_header
from infra.settings import Settings
from infra.stores.records import RecordStores

router = APIRouter(prefix=API_PREFIX, tags=["lines"])

MAX_READ_LIMIT = 10_000
MAX_CONTEXT_LINES = 100
MAX_MATCHES = 10_000

READ_QUERY = frozenset({"offset", "limit", "view"})
GREP_QUERY = frozenset({"pattern", "regex", "ignore_case", "before", "after", "max_matches", "view"})

ViewQuery = Annotated[
    Literal["text", "raw"],
    Query(description="an HTML output: its text view (Markdown, the default) or the raw markup; others: raw"),
]

Flavor = Literal["text/plain", "application/json"]
TEXT: Final = "text/plain"
JSON: Final = "application/json"


# --- request plumbing -------------------------------------------------------------------------
def only_query(allowed: frozenset[str]) -> Callable[[Request], None]:
    """A dependency refusing unknown or repeated query parameters (422), like the tool schemas do.

    Repeats are refused because FastAPI would silently use the last `offset=` of several.
    """

    def check(request: Request) -> None:
        seen: set[str] = set()
        for name, _ in request.query_params.multi_items():
            if name not in allowed:
                raise validation_error(
                    ("query", name), f"unknown parameter; allowed: {', '.join(sorted(allowed))}", "extra_forbidden"
                )
            if name in seen:
                raise validation_error(("query", name), "given more than once", "duplicate_parameter")
            seen.add(name)

    return check


def _quality(accept: str, media_type: str) -> float:
    """The q-value `accept` gives `media_type`: the most specific matching range wins (RFC 9110 §12.5.1)."""
    kind = media_type.split("/", 1)[0]
    best, best_rank = 0.0, -1
    for part in accept.split(","):
        fields = [field.strip() for field in part.split(";")]
        rng = fields[0].lower()
        rank = 2 if rng == media_type else 1 if rng == f"{kind}/*" else 0 if rng == "*/*" else -1
        if rank > best_rank:
            best, best_rank = _q(fields[1:]), rank
    return best


def _q(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return min(1.0, max(0.0, float(value)))
            except ValueError:
                return 0.0
    return 1.0


def negotiate(
    accept: Annotated[str | None, Header(description="text/plain (default) or application/json")] = None,
) -> Flavor:
    """Text unless JSON is strictly preferred; a header that accepts neither is a 406."""
    if not accept or not accept.strip():
        return TEXT
    text_q, json_q = _quality(accept, TEXT), _quality(accept, JSON)
    if text_q == json_q == 0.0:
        raise StarletteHTTPException(
            406, f"this resource is available as {TEXT} or {JSON}; Accept was {accept[:200]!r}"
        )
    return JSON if json_q > text_q else TEXT


Negotiated = Annotated[Flavor, Depends(negotiate)]


def respond(flavor: Flavor, output: StoredOutput, rendered: str, view: BaseModel) -> Response:
    """The same result in the flavor asked for; `Vary` so caches keep the two apart. The text of a text view
    starts with a line saying so (`infra.outputs.views.TEXT_VIEW_HEADER`); JSON has `view: text`."""
    headers = {"Vary": "Accept"}
    if flavor == JSON:
        return JSONResponse({**view.model_dump(), "view": output_view_name(output)}, headers=headers)
    return PlainTextResponse(with_header(output.record, rendered), headers=headers)


def output_view_name(output: StoredOutput) -> str:
    return "text" if is_text_view(output.record) else "raw"


def open_output(
    handle: uuid.UUID, records: RecordStores, blobs: BlobStore, settings: Settings, tenant: str, view: str = "text"
) -> StoredOutput:
    """The caller's output (404 for an unknown handle or another tenant's); reading counts as use.

    Called in the route body rather than as a dependency, so every parameter is validated (422)
    before Redis is asked anything.
    """
    record = records.outputs.get_output(str(handle), tenant)
    records.sessions.touch(record.session_id)
    return StoredOutput(
        blobs,
        reading_view(record, view),
        block_size=settings.blob_read_block_bytes,
        grep_time_budget=grep_time_budget(settings),
    )


def _content(model: type[BaseModel], example: str) -> dict[int | str, Any]:
    """OpenAPI for a 200 that is text by default and `model` as JSON."""
    return {
        200: {
            "model": model,
            "description": "text/plain (rendered) or application/json",
            "content": {TEXT: {"schema": {"type": "string"}, "example": example}},
        }
    }


# --- routes -----------------------------------------------------------------------------------
@router.get(
    "/outputs/{handle}/lines",
    response_model=None,
    responses={**_content(ReadView, "     1\tfirst line\n     2\tsecond line"), **error_responses(404, 406, 422)},
    dependencies=[Depends(only_query(READ_QUERY))],
)
def read_output_lines(
    handle: uuid.UUID,
    records: RecordsDep,
    blobs: BlobsDep,
    settings: SettingsDep,
    tenant: Tenant,
    flavor: Negotiated,
    offset: Annotated[int, Query(ge=1, description="1-based line number to start reading from")] = 1,
    limit: Annotated[
        int, Query(ge=1, le=MAX_READ_LIMIT, description="maximum number of lines to return")
    ] = DEFAULT_READ_LIMIT,
    view: ViewQuery = "text",
) -> Response:
    """Lines `offset` … `offset+limit-1`, each as `{n:>6}\\t{line}`.

    A note says what follows, or what is past the end.
    """
    output = open_output(handle, records, blobs, settings, tenant, view)
    result = output.read(offset=offset, limit=limit)
    return respond(flavor, output, result.render(), ReadView(**result.model_dump()))


@router.get(
    "/outputs/{handle}/grep",
    response_model=None,
    responses={
        **_content(GrepView, "    12:\tmatching line\n    13-\tcontext line\n--\n    40:\tanother match"),
        **error_responses(400, 404, 406, 422),
    },
    dependencies=[Depends(only_query(GREP_QUERY))],
)
def grep_output(
    handle: uuid.UUID,
    records: RecordsDep,
    blobs: BlobsDep,
    settings: SettingsDep,
    tenant: Tenant,
    flavor: Negotiated,
    pattern: Annotated[
        str,
        Query(min_length=1, max_length=MAX_PATTERN_CHARS, description="literal text, or an RE2 regex when regex=true"),
    ],
    regex: Annotated[
        bool, Query(description="treat pattern as an RE2 regex (no backreferences or lookaround)")
    ] = False,
    ignore_case: Annotated[bool, Query(description="match without regard to letter case")] = False,
    before: Annotated[int, Query(ge=0, le=MAX_CONTEXT_LINES, description="context lines before each match")] = 0,
    after: Annotated[int, Query(ge=0, le=MAX_CONTEXT_LINES, description="context lines after each match")] = 0,
    max_matches: Annotated[
        int, Query(ge=1, le=MAX_MATCHES, description="stop after this many matching lines")
    ] = DEFAULT_MAX_MATCHES,
    view: ViewQuery = "text",
) -> Response:
    """Matching lines as `{n:>6}:\\t{line}`, context as `{n:>6}-\\t{line}`, `--` between groups.

    An unsupported regex is a 400.
    """
    output = open_output(handle, records, blobs, settings, tenant, view)
    result = output.grep(
        pattern, regex=regex, ignore_case=ignore_case, before=before, after=after, max_matches=max_matches
    )
    return respond(flavor, output, result.render(), GrepView(**result.model_dump()))
