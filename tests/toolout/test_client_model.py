"""A client's default model: every extraction it sends names it, unless the call names one (SDK, toolkit, MCP)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.deps import Services
from extraction.strategies.mapreduce import ModelLimits
from infra.settings import Settings
from infra.wiring.stores import open_stores
from tests.workers.conftest import needle_model
from tests.workers.job.test_pipeline import NEEDLE, document
from toolout.client import ToolOutAPIError, ToolOutClient
from toolout.sdk.plans import Request, with_model
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher

ALLOWED = "openai/gpt-4o-mini"


@pytest.fixture()
def app() -> Iterator[TestClient]:
    settings = Settings(
        redis_url="memory://", blob_store="memory://", auth_mode="dev", allowed_models=[ALLOWED], map_model="m"
    )
    stores = open_stores(settings)
    limits = ModelLimits(4000, 500)
    dispatcher = LocalDispatcher(build_runtime(settings, stores, needle_model(NEEDLE), limits=limits), concurrency=2)
    services = Services(settings=settings, stores=stores, dispatcher=dispatcher, limits=limits)
    with TestClient(create_app(services=services)) as http:
        yield http
    dispatcher.close()


def test_extraction_requests_name_the_clients_model_unless_they_name_one() -> None:
    submit = Request("POST", "/v1/extractions", json={"handle": "h", "extract": "x"})
    assert with_model(submit, "a").json == {"handle": "h", "extract": "x", "model": "a"}
    assert with_model(with_model(submit, "b"), "a").json["model"] == "b"
    assert with_model(submit, None) is submit
    other = Request("POST", "/v1/sessions", json={})
    assert with_model(other, "a") is other


def test_a_client_with_a_model_runs_its_jobs_on_it(app: TestClient) -> None:
    client = ToolOutClient("http://testserver", http=app, model=ALLOWED)  # not closed: that would close `app`
    session = client.create_session()
    handle = client.store(session, document(), tool_name="logs.fetch")["handle"]
    job = client.submit(handle, "database pool errors", mode="full-chunked")
    assert job["stage_models"] == {"map": ALLOWED, "reduce": ALLOWED, "agent": ALLOWED}
    estimated = client.estimate(handle, "errors", mode="full-chunked")["stages"]
    assert {stage["model"] for stage in estimated} == {ALLOWED}
    assert NEEDLE in client.tool_output(handle, "database pool errors", mode="full-chunked", cache=False)
    with pytest.raises(ToolOutAPIError) as refused:
        client.submit(handle, "errors", model="openai/o1")
    assert refused.value.status == 422 and refused.value.code == "model_not_allowed"
    plain = ToolOutClient("http://testserver", http=app)
    assert plain.submit(handle, "database pool errors")["stage_models"]["map"] == "m"
