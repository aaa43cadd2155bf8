"""Fixtures for the API tests: an in-process app on the in-memory stores, real servers for the rest.

`start_server` / `store_server` are parametrized over the local and the S3 (moto) blob store, so
every test that touches blobs runs against both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.fixtures.api_server import (
    ApiServer,
    api_settings,
    build_test_app,
    serve_api,
)
from tests.fixtures.s3 import TEST_MULTIPART_BYTES
from workers.testing import RecordingDispatcher


@dataclass
class InProcess:
    app: FastAPI
    client: TestClient
    dispatcher: RecordingDispatcher


@pytest.fixture()
def inproc() -> Iterator[InProcess]:
    """The app with its lifespan running on the in-memory stores and a recording dispatcher: no server at all.

    `raise_server_exceptions=False` so a 500 is seen as the client would see it.
    """
    dispatcher = RecordingDispatcher()
    app = build_test_app(api_settings("memory://", "memory://", max_extract_chars=100), dispatcher)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield InProcess(app, client, dispatcher)


@pytest.fixture()
def client(inproc: InProcess) -> TestClient:
    return inproc.client


@pytest.fixture(params=["local", "s3"])
def store_settings(request: pytest.FixtureRequest, local_blob_url: str) -> dict[str, Any]:
    """Settings naming a local blob root under tmp_path, or a fresh prefix in the S3 bucket."""
    return blob_settings(request, request.param, local_blob_url)


REAL_STORE = [pytest.mark.redis, pytest.mark.integration]


@pytest.fixture(
    params=["memory", pytest.param("local", marks=REAL_STORE), pytest.param("s3", marks=[*REAL_STORE, pytest.mark.s3])]
)
def store_client(request: pytest.FixtureRequest) -> Iterator[httpx.Client | TestClient]:
    """The API's client on each blob store: in process on the memory twins (the fast tier), and over HTTP on a
    local directory and on S3, where what is stored really moves (a rename, a multipart upload)."""
    if request.param == "memory":
        yield request.getfixturevalue("inproc").client
        return
    request.getfixturevalue("redis_client")  # a clean test database, as `start_server` has
    merged = blob_settings(request, request.param, request.getfixturevalue("local_blob_url"))
    settings = api_settings(request.getfixturevalue("redis_url"), merged.pop("blob_store"), **merged)
    with serve_api(settings) as server, server.client() as client:
        yield client


def blob_settings(request: pytest.FixtureRequest, store: str, local_blob_url: str) -> dict[str, Any]:
    if store == "local":
        return {"blob_store": local_blob_url}
    bucket, options = request.getfixturevalue("s3_bucket"), request.getfixturevalue("s3_options")
    return {
        "blob_store": f"s3://{bucket}/api-{uuid.uuid4().hex[:12]}",
        "s3_endpoint_url": options["endpoint_url"],
        "s3_access_key_id": options["access_key_id"],
        "s3_secret_access_key": options["secret_access_key"],
        "s3_region": options["region"],
        "s3_multipart_threshold_bytes": TEST_MULTIPART_BYTES,
        "s3_multipart_chunk_bytes": TEST_MULTIPART_BYTES,
    }


@pytest.fixture()
def start_server(
    redis_client: Any, redis_url: str, store_settings: dict[str, Any]
) -> Iterator[Callable[..., ApiServer]]:
    """`start_server(app_options=None, **setting_overrides)` runs the API over HTTP on the parametrized blob store."""
    with ExitStack() as stack:

        def start(app_options: dict[str, Any] | None = None, **overrides: Any) -> ApiServer:
            merged = {**store_settings, **overrides}
            settings = api_settings(redis_url, merged.pop("blob_store"), **merged)
            return stack.enter_context(serve_api(settings, **(app_options or {})))

        yield start


@pytest.fixture()
def store_server(start_server: Callable[..., ApiServer]) -> ApiServer:
    return start_server()
