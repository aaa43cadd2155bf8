"""Schemathesis hooks for `tests/api/schemathesis_stack.py` (loaded through SCHEMATHESIS_HOOKS).

OpenAPI cannot state a rule that spans parameters, and two operations have one (each operation's description
says so; the API answers a contradiction with a typed 422, which the tests named below keep):

- an upload's route: a write mode needs a routed destination (`variable:` or `file:`), and a variable name goes
  with an inline upload or the same `variable:NAME` (tests/api/test_routing_uploads.py). The header forms of the
  same three (`X-Output`, `X-Write-Mode`, `X-Variable-Name`) win over the query's, so the fuzzer leaves them out
  and varies the query forms (test_routing_uploads.py covers the headers);
- an extraction's budget: `max_input_tokens` and `max_cost_usd` are ceilings on the job's estimate, which
  depends on the output; one under it, or a cost ceiling on a model without a price, is a 422
  (tests/api/test_estimates.py);
- a variable read's range: exactly one of `start_line` + `end_line` (no longer than the read limit, the end not
  before the start) and `offset` + `length` (tests/api/test_schema_constraints.py), starting inside the variable
  (a start past its end is a 422 that names its size, tests/api/test_buffer_ops.py); a peek's offset as well.

So a generated request meant to be valid that contradicts the rule is made consistent just before it is sent
(`before_call`, which every phase goes through): a contradicting parameter is dropped, a half range completed
from its other half, a range with none given starts at the first line; the rest stays as generated. Schemathesis
validates the request again after the hook, so what is sent is still the document's. Requests meant to be
invalid are sent as generated.

Outside the stateful phase, every other valid request that names a session, output, variable or job names a
real one first (tests/api/schemathesis_pool.py says why and which).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import schemathesis
from schemathesis import GenerationMode

from api.routers.buffers import LIMITS
from tests.api.schemathesis_pool import VARIABLE, Gone, Pool

UPLOAD = "POST /v1/sessions/{session_id}/outputs"
READ = "GET /v1/sessions/{session_id}/variables/{name}/read"
PEEK = "GET /v1/sessions/{session_id}/variables/{name}/peek"
ROUTED = ("variable", "file")
ROUTE_HEADERS = ("x-output", "x-write-mode", "x-variable-name")
LINE_RANGE, CHAR_RANGE = ("start_line", "end_line"), ("offset", "length")
CANCEL = "POST /v1/extractions/{job_id}/cancel"
EXTRACT = "POST /v1/extractions"
BUDGETS = ("max_input_tokens", "max_cost_usd")
POOLS: dict[str, Pool] = {}
TURNS: Counter[str] = Counter()
POOLED: set[str] = set()
"""The ids of the cases sent with the pool's ids (tests/api/schemathesis_pool.py)."""


def consistent_route(query: dict[str, Any]) -> dict[str, Any]:
    """`query` without a write mode an unrouted output cannot take, or a name the destination contradicts."""
    kind, _, target = str(query.get("output", "inline")).strip().partition(":")
    dropped = set()
    if kind not in ROUTED:
        dropped.add("write_mode")
    name = query.get("name")
    if name is not None and (kind in ("file", "discard") or (kind == "variable" and target != str(name).strip())):
        dropped.add("name")
    return {key: value for key, value in query.items() if key not in dropped}


def without_route_headers(headers: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in headers.items() if key.lower() not in ROUTE_HEADERS}


def consistent_range(query: dict[str, Any], max_lines: int = LIMITS.max_read_lines) -> dict[str, Any]:
    """`query` with one whole range: the line range if any half of it was given, else the character range."""
    rest = {key: value for key, value in query.items() if key not in (*LINE_RANGE, *CHAR_RANGE)}
    given = [int(query[key]) for key in LINE_RANGE if key in query]
    if given or not any(key in query for key in CHAR_RANGE):
        start, end = (min(given), max(given)) if given else (1, 1)
        return {**rest, "start_line": start, "end_line": min(end, start + max_lines - 1)}
    return {**rest, "offset": int(query.get("offset", 0)), "length": int(query.get("length", 1))}


def inside(query: dict[str, Any], lines: int, chars: int) -> dict[str, Any]:
    """A consistent range's start moved inside a variable of `lines` lines and `chars` characters."""
    if "start_line" in query and lines:
        start = min(query["start_line"], lines)
        return consistent_range({**query, "start_line": start, "end_line": max(query["end_line"], start)})
    rest = {key: value for key, value in query.items() if key not in (*LINE_RANGE, *CHAR_RANGE)}
    return {**rest, "offset": min(int(query.get("offset", 0)), max(chars - 1, 0)), "length": query.get("length", 1)}


def peek_inside(query: dict[str, Any], chars: int) -> dict[str, Any]:
    """A peek's offset moved inside a variable of `chars` characters."""
    return {**query, "offset": min(int(query.get("offset", 0)), max(chars - 1, 0))}


def variable_size(case: Any) -> tuple[int, int] | None:
    """The variable's lines and characters as the API reports them; None when it has no such variable."""
    first = _read(case, {"offset": 0, "length": 1})
    if first.status_code != 200:
        return None
    lines = _read(case, {"start_line": 1, "end_line": 1})
    return (lines.json()["total_lines"] if lines.status_code == 200 else 0), first.json()["total_chars"]


def _read(case: Any, query: dict[str, int]) -> httpx.Response:
    session, name = case.path_parameters["session_id"], case.path_parameters["name"]
    url = f"{case.operation.schema.get_base_url().rstrip('/')}/v1/sessions/{session}/variables/{name}/read"
    return httpx.get(url, params=query, timeout=10)


def within(body: dict[str, Any], estimate: dict[str, Any]) -> dict[str, Any]:
    """`body` with budgets the job's `estimate` fits in: a ceiling under it raised to it, one it cannot meet dropped."""
    kept = dict(body)
    if kept.get("max_input_tokens") is not None:
        kept["max_input_tokens"] = max(kept["max_input_tokens"], estimate["input_tokens"])
    if kept.get("max_cost_usd") is not None:
        cost = estimate.get("cost_usd")
        if cost is None:
            del kept["max_cost_usd"]
        else:
            kept["max_cost_usd"] = max(kept["max_cost_usd"], cost)
    return kept


def estimate(case: Any) -> dict[str, Any] | None:
    """What the API estimates for the job `case` asks for; None when it answers otherwise (no such output)."""
    body = {key: value for key, value in case.body.items() if key not in BUDGETS}
    url = f"{case.operation.schema.get_base_url().rstrip('/')}/v1/extractions/estimate"
    answer = httpx.post(url, json=body, timeout=30)
    return answer.json() if answer.status_code == 200 else None


def _is_positive(case: Any) -> bool:
    return case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE


def with_real_ids(case: Any, pool: Pool) -> None:
    """`case` naming the pool's session, variable, output and job wherever it names one.

    A shared one that a generated request took since (a delete, a short TTL) answers 404 to the pool's own
    request under it; the pool then makes them all again, once, instead of failing the hook on every later case.
    """
    try:
        _with_real_ids(case, pool)
    except Gone:
        pool.forget()
        _with_real_ids(case, pool)


def _with_real_ids(case: Any, pool: Pool) -> None:
    path, fresh = dict(case.path_parameters or {}), case.method.upper() == "DELETE"
    if "session_id" in path:
        path["session_id"] = pool.new_session() if fresh else pool.session()
    if "name" in path:
        pool.handle()  # the pooled variable is the shared output's
        path["name"] = VARIABLE
    if "handle" in path:
        path["handle"] = pool.new_output(pool.session()) if fresh else pool.handle()
    if "job_id" in path:
        path["job_id"] = pool.new_job(pool.handle()) if case.operation.label == CANCEL else pool.finished_job()
    case.path_parameters = path
    if isinstance(case.body, dict) and "handle" in case.body:
        case.body = {**case.body, "handle": pool.handle()}


def _names_ids(case: Any) -> bool:
    return "{" in case.operation.path or (isinstance(case.body, dict) and "handle" in case.body)


def _takes_pooled_ids(case: Any) -> bool:
    """Every other valid case of an operation that names ids, outside the stateful phase (which follows links)."""
    if case.meta.phase.name.lower() == "stateful" or not _names_ids(case):
        return False
    TURNS[case.operation.label] += 1
    return TURNS[case.operation.label] % 2 == 1


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    del context, kwargs
    if not _is_positive(case):
        return
    if _takes_pooled_ids(case):
        base = case.operation.schema.get_base_url().rstrip("/")
        with_real_ids(case, POOLS.setdefault(base, Pool(base)))
        POOLED.add(case.id)
    label = case.operation.label
    if label == UPLOAD:
        case.query = consistent_route(case.query) if case.query else case.query
        case.headers = without_route_headers(case.headers) if case.headers else case.headers
    elif label == READ:
        query, size = consistent_range(case.query or {}), variable_size(case)
        case.query = query if size is None else inside(query, *size)
    elif label == PEEK and (size := variable_size(case)) is not None:
        case.query = peek_inside(case.query or {}, chars=size[1])
    elif label == EXTRACT and isinstance(case.body, dict) and any(case.body.get(key) is not None for key in BUDGETS):
        found = estimate(case)
        case.body = case.body if found is None else within(case.body, found)


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    del context
    if case.id in POOLED and response.status_code == 404:
        for pool in POOLS.values():
            pool.forget()
