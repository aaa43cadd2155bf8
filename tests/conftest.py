"""Root hooks: offline tokenizers for every test, and the markers that say which tests need a server.

Server fixtures live in tests/fixtures. A test that uses one of them (directly or through another
fixture) is marked `integration`, plus `redis` or `s3` for the server it needs, automatically:
`pytest -m "not integration"` is then exactly the suite that runs with no server at all.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

SERVER_INSTALLED = all(importlib.util.find_spec(name) for name in ("fastapi", "celery", "redis", "litellm"))
"""False on the light install (`pip install toolout[test]`), where only the engine and client suites run."""

pytest_plugins = (
    [
        "tests.fixtures.redis",
        "tests.fixtures.s3",
        "tests.fixtures.offline_model",
        "tests.fixtures.api_server",
        "tests.fixtures.stack",
        "tests.fixtures.faults",
        "tests.fixtures.model_faults",
        "tests.fixtures.multihost",
        "tests.fixtures.measurements",
    ]
    if SERVER_INSTALLED
    else []
)

SERVER_FIXTURES = {
    "redis": {"redis_url", "redis_client"},
    "s3": {"s3_endpoint_url", "s3_options", "s3_bucket", "s3_store"},
    "integration": {  # a server of any kind, even in this process: a socket, a thread serving it, its lifetime
        "live_api",
        "offline_model_url",
        "local_stack",
        "s3_stack",
        "tight_stack",
        "stack",
        "faults_stack",
        "model_faults_stack",
        "multihost_stack",
    },
}


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # for this process and every child it starts
    from infra.tokenizer_files import ensure_offline_encodings  # stdlib only: finds litellm's BPE files if present

    ensure_offline_encodings()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        needs = [marker for marker, fixtures in SERVER_FIXTURES.items() if used & fixtures]
        for marker in needs:
            item.add_marker(marker)
        if needs and not item.get_closest_marker("integration"):
            item.add_marker("integration")
