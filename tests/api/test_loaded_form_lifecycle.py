"""A loaded form's pointer (`toolout:query:<tenant>:<sha256>:loaded`) goes with its output and with its session,
on real Redis and on the in-memory twin: the API's DELETEs forget it, and a later upload of the same bytes loads
its own tables instead of reading a deleted path (issue 33: 7,910 pointers outlived their 7,909 sessions)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.deps import Services
from extraction.strategies.mapreduce import ModelLimits
from infra.outputs.storing import loaded_form_prefix
from infra.stores.bundle import Stores
from infra.stores.records import OutputRecord
from infra.wiring.stores import open_stores
from tests.fixtures.api_server import answering_model_probe, api_settings
from tests.workers.job.test_query import ORDERS, offline_llm
from workers.job.runtime import build_runtime
from workers.local import LocalDispatcher

pytestmark = pytest.mark.twin(
    "the loaded-form pointer's lifecycle in the record store; its blob paths run on store_server"
)


@dataclass
class Stack:
    """The API in process over `stores`, its preloads run by a local dispatcher on the same stores."""

    client: TestClient
    stores: Stores
    redis: Any = None
    """A client on the stack's Redis (None on the in-memory twin)."""
    reads: list[str] = field(default_factory=list)
    """Every blob key looked at (exists, get, range read) since the stack began."""

    def upload(self, session: str, body: bytes = ORDERS) -> OutputRecord:
        answer = self.client.post(
            f"/v1/sessions/{session}/outputs",
            content=body,
            headers={"X-Tool-Name": "orders.list", "Content-Type": "application/json"},
        )
        assert answer.status_code in (200, 201), answer.text
        return self.stores.records.outputs.get_output(answer.json()["handle"])

    def kept_at(self, output: OutputRecord) -> str | None:
        return self.stores.loaded.kept_at(output.tenant, output.stats.sha256)

    def wait_kept(self, output: OutputRecord) -> None:
        """Until the preload the upload queued has kept the output's tables and pointed at them."""
        deadline = time.monotonic() + 60
        while self.kept_at(output) != loaded_form_prefix(output):
            assert time.monotonic() < deadline, f"the preload never pointed at {loaded_form_prefix(output)}"
            time.sleep(0.05)


def watch_reads(stores: Stores, reads: list[str]) -> None:
    """Record every key the blob store is asked about (what `never reads a deleted path` is checked on)."""
    blobs: Any = stores.blobs
    for name in ("exists", "get_bytes", "iter_range"):
        original = getattr(blobs, name)

        def spy(key: str, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            reads.append(key)
            return _original(key, *args, **kwargs)

        setattr(blobs, name, spy)


@pytest.fixture(params=["memory", "redis"])
def stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    url, redis = "memory://", None
    if request.param == "redis":
        redis = request.getfixturevalue("redis_client")  # an emptied test database
        url = request.getfixturevalue("redis_url")
    settings = api_settings(url, "memory://")
    stores = open_stores(settings)
    runtime = build_runtime(settings, stores, offline_llm(), limits=ModelLimits(4000, 500))
    services = Services(
        settings, stores, LocalDispatcher(runtime, concurrency=1), model_probe=answering_model_probe(settings)
    )
    built = Stack(TestClient(create_app(services=services)), stores, redis)
    watch_reads(stores, built.reads)
    with built.client:
        yield built


def loaded_keys(stack: Stack) -> list[str]:
    """The loaded-form keys (pointers, load locks) Redis holds; the in-memory twin has none to list."""
    return [] if stack.redis is None else sorted(stack.redis.scan_iter(match="toolout:query:*"))


def test_the_pointer_goes_with_its_output_and_the_same_bytes_load_again(stack: Stack) -> None:
    session = stack.client.post("/v1/sessions").json()["id"]
    first = stack.upload(session)
    stack.wait_kept(first)
    if stack.redis is not None:
        assert loaded_keys(stack) == [f"toolout:query:{first.tenant}:{first.stats.sha256}:loaded"]
    assert stack.client.delete(f"/v1/outputs/{first.handle}").status_code == 204
    assert stack.kept_at(first) is None and loaded_keys(stack) == []
    stack.reads.clear()
    second = stack.upload(session)
    stack.wait_kept(second)
    deleted = loaded_form_prefix(first)
    assert not [key for key in stack.reads if key.startswith(deleted)], "a deleted output's tables were looked for"
    assert stack.stores.blobs.exists(loaded_form_prefix(second) + "manifest.json")


def test_the_pointer_goes_with_its_session(stack: Stack) -> None:
    session = stack.client.post("/v1/sessions").json()["id"]
    output = stack.upload(session)
    stack.wait_kept(output)
    assert stack.client.delete(f"/v1/sessions/{session}").status_code == 204
    assert stack.kept_at(output) is None and loaded_keys(stack) == []
    if stack.redis is not None:
        assert not [key for key in stack.redis.scan_iter() if output.handle in key or session in key]
    other = stack.client.post("/v1/sessions").json()["id"]
    stack.reads.clear()
    again = stack.upload(other)
    stack.wait_kept(again)
    assert not [key for key in stack.reads if key.startswith(f"sessions/{session}/")]


def test_a_second_upload_copies_tables_that_exist(stack: Stack) -> None:
    session = stack.client.post("/v1/sessions").json()["id"]
    first = stack.upload(session)
    stack.wait_kept(first)
    second = stack.upload(session)
    stack.wait_kept(second)
    copied = [key for key in stack.reads if key.startswith(loaded_form_prefix(first))]
    assert copied, "the second upload loaded again instead of copying the first one's tables"
    assert stack.client.delete(f"/v1/outputs/{first.handle}").status_code == 204
    assert stack.kept_at(second) == loaded_form_prefix(second), "the other output's pointer went too"
