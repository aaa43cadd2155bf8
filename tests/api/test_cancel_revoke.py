"""Cancelling a job also revokes its queued work, through the app's dispatcher."""

from __future__ import annotations

import pytest

from infra.stores.jobs import JobStatus
from tests.api.conftest import InProcess

pytestmark = pytest.mark.twin("cancel bookkeeping between the job store and the broker: no stored bytes are read")


def create_job(inproc: InProcess) -> str:
    client = inproc.client
    session = client.post("/v1/sessions").json()["id"]
    handle = client.post(f"/v1/sessions/{session}/outputs", content=b"ERROR one\nok\n").json()["handle"]
    return client.post("/v1/extractions", json={"handle": handle, "extract": "errors"}).json()["id"]


def test_a_cancel_revokes_the_jobs_tasks_and_a_refused_cancel_does_not(inproc: InProcess) -> None:
    live, finished = create_job(inproc), create_job(inproc)
    inproc.app.state.services.jobs.records.finish(finished, JobStatus.SUCCEEDED, result="ABSTRACT ...")
    assert inproc.client.post(f"/v1/extractions/{live}/cancel").json()["status"] == "canceled"
    assert inproc.client.post(f"/v1/extractions/{finished}/cancel").status_code == 409
    assert inproc.dispatcher.revoked == [live]
