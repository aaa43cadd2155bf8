"""The hooks of `make schemathesis` make a generated request consistent with the API's rules, not looser than them.

A read of a variable takes exactly one range, inside the variable; OpenAPI cannot say so across parameters, so
the run's hooks (tests/api/schemathesis_hooks.py) complete a generated range before it is sent. The run found
read's valid-looking requests (a lone `start_line`, a start past the end) all refused; these keep both halves:
the API refuses what the hook repairs, and what the hook sends is a read the API serves.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extraction.buffers.ops import BufferLimits
from tests.api.schemathesis_hooks import consistent_range, consistent_route, inside, with_real_ids
from tests.api.schemathesis_pool import Pool
from tests.fixtures.api_server import assert_error

pytestmark = pytest.mark.twin("the API's validation of a read's range against the hooks' repairs: 30 short lines")

LINES = "".join(f"line {i}\n" for i in range(1, 31))
QUERIES = st.fixed_dictionaries(
    {},
    optional={
        "start_line": st.integers(1, 10**9),
        "end_line": st.integers(1, 10**9),
        "offset": st.integers(0, 10**9),
        "length": st.integers(1, BufferLimits().max_read_chars),
    },
)


@pytest.fixture()
def read_url(client: TestClient) -> str:
    session = client.post("/v1/sessions").json()["id"]
    stored = client.post(f"/v1/sessions/{session}/outputs", params={"name": "log"}, content=LINES.encode())
    assert stored.status_code == 201, stored.text
    return f"/v1/sessions/{session}/variables/log/read"


@pytest.mark.parametrize(
    "query",
    [{}, {"start_line": 2}, {"end_line": 2}, {"offset": 3}, {"start_line": 1, "end_line": 2, "offset": 0, "length": 1}],
)
def test_a_read_without_exactly_one_whole_range_is_refused(
    client: TestClient, read_url: str, query: dict[str, int]
) -> None:
    assert_error(client.get(read_url, params=query), 422, "invalid_buffer_op")


@pytest.mark.parametrize(
    ("query", "refusal"),
    [({"start_line": 31, "end_line": 40}, "past the end"), ({"offset": len(LINES), "length": 1}, "past the end")],
)
def test_a_range_that_starts_past_the_variable_is_refused(
    client: TestClient, read_url: str, query: dict[str, int], refusal: str
) -> None:
    assert refusal in assert_error(client.get(read_url, params=query), 422, "invalid_buffer_op")["message"]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(QUERIES)
def test_a_read_the_hook_completes_and_moves_inside_is_served(
    client: TestClient, read_url: str, query: dict[str, int]
) -> None:
    sent = inside(consistent_range(query), lines=LINES.count("\n"), chars=len(LINES))
    assert client.get(read_url, params=sent).status_code == 200, sent


def test_a_range_keeps_what_was_generated_where_it_is_consistent() -> None:
    assert consistent_range({"start_line": 3, "end_line": 7, "other": "x"}) == {
        "start_line": 3,
        "end_line": 7,
        "other": "x",
    }
    assert consistent_range({"offset": 5, "length": 9}) == {"offset": 5, "length": 9}
    assert consistent_range({"end_line": 9, "start_line": 4, "offset": 1}) == {"start_line": 4, "end_line": 9}


def test_an_upload_route_loses_only_the_parameter_that_contradicts_it() -> None:
    query: dict[str, Any] = {"output": "inline", "write_mode": "append", "name": "a", "tool_name": "t"}
    assert consistent_route(query) == {"output": "inline", "name": "a", "tool_name": "t"}
    assert consistent_route({"output": "variable:a", "name": "b"}) == {"output": "variable:a"}
    assert consistent_route({"output": "file:x.md", "write_mode": "new"}) == {
        "output": "file:x.md",
        "write_mode": "new",
    }


def test_a_pooled_session_a_generated_request_took_is_made_again_not_a_hook_error(client: TestClient) -> None:
    """The run that found it: a shared session gone, and every later delete of an output failed in the hook."""
    pool = Pool("", http=client)
    gone = pool.session()
    assert client.delete(f"/v1/sessions/{gone}").status_code == 204
    case = SimpleNamespace(
        method="DELETE", path_parameters={"handle": "random"}, body=None, operation=SimpleNamespace(label="DELETE")
    )
    with_real_ids(case, pool)
    handle = case.path_parameters["handle"]
    assert pool.session() != gone
    assert client.get(f"/v1/outputs/{handle}").json()["session_id"] == pool.session()
    assert client.delete(f"/v1/outputs/{handle}").status_code == 204
