"""The job as clients see it carries what could not be read: `chunks_failed` and `failed_ranges`."""

from __future__ import annotations

import pytest
import schemathesis

from extraction.strategies.coverage import FailedRange
from tests.api.conftest import InProcess

FAILURE = FailedRange(
    level=0, index=6, chunks=[6], start=7_340_032, end=7_471_104, reason="no valid final report after 2 attempt(s)"
)

pytestmark = pytest.mark.twin("the job record's view and its OpenAPI schema: no stored content is read")


def test_the_job_view_shows_the_failed_ranges_while_the_job_runs(inproc: InProcess) -> None:
    client = inproc.client
    session = client.post("/v1/sessions").json()["id"]
    handle = client.post(f"/v1/sessions/{session}/outputs", content=b"x\n" * 5000).json()["handle"]
    job_id = client.post("/v1/extractions", json={"handle": handle, "extract": "x"}).json()["id"]
    inproc.app.state.services.jobs.fanin.record_failure(job_id, FAILURE)
    view = client.get(f"/v1/extractions/{job_id}").json()
    assert view["chunks_failed"] == 1
    assert view["failed_ranges"] == [
        {
            "level": 0,
            "index": 6,
            "chunks": [6],
            "start": 7_340_032,
            "end": 7_471_104,
            "reason": "no valid final report after 2 attempt(s)",
        }
    ]
    listed = client.get(f"/v1/sessions/{session}/extractions").json()["items"]
    assert listed[0]["failed_ranges"] == view["failed_ranges"]


def test_the_openapi_document_describes_them_and_stays_valid(inproc: InProcess) -> None:
    spec = inproc.client.get("/openapi.json").json()
    schemathesis.openapi.from_dict(spec).validate()  # against the OpenAPI 3.1 meta-schema
    schemas = spec["components"]["schemas"]
    job = schemas["JobView"]["properties"]
    assert job["chunks_failed"]["type"] == "integer"
    assert job["failed_ranges"]["items"] == {"$ref": "#/components/schemas/FailedRange"}
    assert set(schemas["FailedRange"]["required"]) == {"level", "index", "chunks", "start", "end", "reason"}
