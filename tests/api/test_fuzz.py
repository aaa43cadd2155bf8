"""Schemathesis against the running API: whatever a client sends, the answer is never a 5xx and it is
what the OpenAPI schema says (status code, content type, body, declared headers).

The schema comes from the app itself (`create_app(...).openapi()`, the document `/openapi.json`
serves, which a test below checks), so every route added later is fuzzed without touching this
file. Each operation is one pytest item with a fixed, deterministic budget; the requests go over a
real socket to uvicorn, real Redis, a local blob store in tmp and the recording submitter.

Random UUIDs only ever reach the 404 branch, so every case that names a session, output or job is
sent twice: as generated, then with its path parameters (and `handle` in a JSON body) swapped for
the ids of a seeded session, output and job, so the fuzzed query strings, headers and bodies also
reach the real read, grep, range, upload and job code. (Swapping inside the test rather than with
`schema.given` keeps schemathesis' coverage phase, which `given` turns off.)

Checks: every built-in one except `positive_data_acceptance` / `negative_data_rejection`, whose
verdicts depend on limits the schema cannot carry (settings such as `max_wait_seconds` and
`max_extract_chars`, "tool_args must be JSON", Accept negotiation answering 406).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import negative_data_rejection, positive_data_acceptance

from api.app import create_app
from tests.fixtures.api_server import ApiServer, api_settings, serve_api

API_KEY = "toolout-fuzz-key"
TENANT = "fuzz"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
MAX_EXAMPLES = int(os.environ.get("TOOLOUT_FUZZ_EXAMPLES", "30"))
"""Per operation and phase; the default keeps the whole module well under a minute. Raise it for a deep run."""

OVERRIDES: dict[str, Any] = {
    "auth_mode": "keys",
    "api_keys": {hashlib.sha256(API_KEY.encode()).hexdigest(): TENANT},
    "max_wait_seconds": 0.2,  # a long poll on the seeded (never finishing) job costs at most this
    "max_upload_bytes": 256 << 10,
    "max_extract_chars": 2_000,
    # the recording submitter never finishes a job; the cap is tested elsewhere
    "max_concurrent_jobs_per_tenant": 100_000,
}
SEED_OUTPUT = (
    "".join(f"line {i}: status=ok id={i:04d}\n" for i in range(1, 200)).encode() + b"line 200: ERROR disk full\n"
)

schema = schemathesis.openapi.from_dict(
    create_app(api_settings("redis://127.0.0.1:6379/15", "memory://", **OVERRIDES)).openapi()
)
schema.config.generation.update(max_examples=MAX_EXAMPLES, deterministic=True, database="none")


@dataclass
class Seeded:
    session_id: str
    handle: str
    job_id: str
    name: str
    ended_job_id: str

    def path_ids(self, path: str) -> dict[str, str]:
        """The seeded ids, with the ended job for a job's event stream: the queued one never ends, and its stream
        (rightly) stays open for as long as the job runs."""
        job_id = self.ended_job_id if path.endswith("/events") else self.job_id
        return {"session_id": self.session_id, "handle": self.handle, "job_id": job_id, "name": self.name}


@dataclass
class FuzzTarget:
    server: ApiServer
    blob_root: Path
    seeded: Seeded

    def reseed(self) -> None:
        self.seeded = seed(self.server.url)


def seed(url: str) -> Seeded:
    """A session holding one output (a variable too), one queued job (the recording submitter never runs it) and
    one canceled."""
    with httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
        session_id = client.post("/v1/sessions").raise_for_status().json()["id"]
        stored = client.post(f"/v1/sessions/{session_id}/outputs", content=SEED_OUTPUT).raise_for_status().json()
        # The first priced estimate imports litellm's cost map (seconds on a loaded box): paid here, not by a case.
        client.post("/v1/extractions/estimate", json={"handle": stored["handle"], "extract": "x"}, timeout=120)
        job, ended = (
            client.post("/v1/extractions", json={"handle": stored["handle"], "extract": extract})
            .raise_for_status()
            .json()
            for extract in ("the ERROR line", "the first line")
        )
        client.post(f"/v1/extractions/{ended['id']}/cancel").raise_for_status()
    return Seeded(session_id, stored["handle"], job["id"], stored["name"], ended["id"])


@pytest.fixture()
def fuzz_target(redis_client: Any, redis_url: str, tmp_path: Path) -> Iterator[FuzzTarget]:
    blob_root = tmp_path / "var" / "blobs"
    with serve_api(api_settings(redis_url, f"file://{blob_root}", **OVERRIDES)) as server:
        yield FuzzTarget(server, blob_root, seed(server.url))


def with_seeded_ids(case: Any, seeded: Seeded) -> bool:
    """Point the case at the seeded resources; False when it names none (nothing to swap)."""
    ids = seeded.path_ids(case.path)
    swapped = False
    for name in list(case.path_parameters or {}):
        if name in ids:
            case.path_parameters[name] = ids[name]
            swapped = True
    if isinstance(case.body, dict) and "handle" in case.body:
        case.body["handle"] = seeded.handle
        swapped = True
    return swapped


def call_and_check(case: Any, target: FuzzTarget) -> None:
    case.call_and_validate(
        base_url=target.server.url,
        headers=AUTH,
        timeout=10,
        excluded_checks=[positive_data_acceptance, negative_data_rejection],
    )


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_and_the_schema_holds(case: Any, fuzz_target: FuzzTarget) -> None:
    call_and_check(case, fuzz_target)
    if with_seeded_ids(case, fuzz_target.seeded):
        call_and_check(case, fuzz_target)
        if case.method.upper() == "DELETE":
            fuzz_target.reseed()


def test_the_fuzzed_schema_is_the_one_the_running_api_serves(fuzz_target: FuzzTarget) -> None:
    served = httpx.get(f"{fuzz_target.server.url}/openapi.json", timeout=10).json()
    assert served == schema.raw_schema
    operations = {f"{method.upper()} {path}" for path, item in served["paths"].items() for method in item}
    every_router = {
        "POST /v1/sessions",
        "POST /v1/sessions/{session_id}/outputs",
        "GET /v1/outputs/{handle}/content",
        "POST /v1/extractions",
        "GET /readyz",
        "GET /v1/sessions/{session_id}/variables",
        "POST /v1/sessions/{session_id}/resolve",
        "POST /v1/sessions/{session_id}/resolve-stream",
        "POST /v1/sessions/{session_id}/buffer_ops",
        "GET /v1/sessions/{session_id}/files",
        "POST /v1/routing/parse",
    }
    assert every_router <= operations, operations
