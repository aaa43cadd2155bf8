"""Root hooks: offline tokenizers for every test, and the markers that say which tests need a server.

Server fixtures live in tests/fixtures. A test that uses one of them (directly or through another
fixture) is marked `integration`, plus `redis` or `s3` for the server it needs, automatically:
`pytest -m "not integration"` is then exactly the suite that runs with no server at all.

Tests run on one pytest-xdist worker per core (`-n auto`, pyproject). Every integration test joins one
xdist group, so they all run in one worker, one after another, on the servers they share (Redis db 15,
the stacks, the network namespaces), while the server-free tests spread over the others.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

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
        "tests.fixtures.sentinel",
        "tests.fixtures.redis_cluster",
        "tests.fixtures.measurements",
    ]
    if SERVER_INSTALLED
    else []
) + (["schemathesis.pytest.plugin"] if importlib.util.find_spec("schemathesis") else [])  # named, not auto-loaded

SERVER_FIXTURES = {
    "redis": {"redis_url", "redis_client", "redis_cluster", "redis_cluster_client"},
    "s3": {"seaweedfs_server", "s3_endpoint_url", "s3_options", "s3_bucket", "s3_store"},
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
        "sentinel_stack",
        "cluster_stack",
        "poison_stack",
        "hostile_stack",
    },
    # runs Celery workers as processes: what CI's RabbitMQ leg runs again (`make test-rabbitmq`)
    "celery": {
        "local_stack",
        "s3_stack",
        "tight_stack",
        "stack",
        "faults_stack",
        "model_faults_stack",
        "cluster_stack",
        "poison_stack",
        "hostile_stack",
    },
}


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # for this process and every child it starts
    # Hedging is on by default, and on a loaded box a 40 ms offline call can wait past the 1 s trigger: a hedge
    # then adds a call where the tests assert exact counts. Off for the suite and the stacks it starts; the
    # hedging tests and the tail bench turn it on themselves.
    os.environ.setdefault("TOOLOUT_HEDGE_ENABLED", "false")
    from extraction.tokenizer_files import ensure_offline_encodings  # stdlib only: finds litellm's BPE files if present

    ensure_offline_encodings()
    if config.getoption("cov_source", default=None):  # `make test`: pytest-cov's --cov
        _untimed_hypothesis()


def _untimed_hypothesis() -> None:
    """Drop Hypothesis' wall-clock checks while coverage traces every line.

    Under the tracer on a loaded 2-core machine, drawing one input of the larger strategies takes over a
    second and the `too_slow` health check fails tests that pass untraced; the timings measure the
    machine, not the test. Plain `pytest` keeps both checks.
    """
    from hypothesis import HealthCheck, settings

    settings.register_profile("coverage", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("coverage")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        needs = [marker for marker, fixtures in SERVER_FIXTURES.items() if used & fixtures]
        for marker in needs:
            item.add_marker(marker)
        if needs and not item.get_closest_marker("integration"):
            item.add_marker("integration")
        if item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.xdist_group(SERVERS_GROUP))
            _join_group_on_this_worker(config, item)


SERVERS_GROUP = "servers"

SERVER_FIXTURE_NAMES = frozenset().union(*SERVER_FIXTURES.values())


@pytest.fixture(autouse=True)
def _servers_only_in_the_servers_group(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that reached a server fixture without the `integration` mark.

    The marks come from the fixture names a test declares. One that asks for a server with
    `request.getfixturevalue` inside a parametrized fixture is not seen at collection: it runs outside the
    servers group, on another xdist worker, at the same time as the tests it shares db 15 with, and its
    flushes delete their sessions half-way (CI failed three times on that). Mark such a param with
    `pytest.param(..., marks=[pytest.mark.redis, pytest.mark.integration])`.
    """
    yield
    reached = SERVER_FIXTURE_NAMES.intersection(request.fixturenames)
    if reached and not request.node.get_closest_marker("integration"):
        pytest.fail(
            f"{request.node.nodeid} reached {sorted(reached)} without the integration mark, so it ran outside the "
            "servers group; give the param that needs them marks=[pytest.mark.redis, pytest.mark.integration]"
        )


def _join_group_on_this_worker(config: pytest.Config, item: pytest.Item) -> None:
    """Give the item the `@group` node id suffix xdist's loadgroup scheduler sorts by.

    pytest-xdist 3.8 appends it to `item._nodeid`, which pytest 9.2 no longer reads: its node ids are
    structured (`item._id`), so the groups are silently ignored (pytest-dev/pytest-xdist#1386). Until xdist
    ships its fix we set the structured id ourselves; tests/test_xdist_groups.py fails when this stops working.
    """
    suffix = f"@{SERVERS_GROUP}"
    if not getattr(config.option, "loadgroup", False) or item.nodeid.endswith(suffix) or not hasattr(item, "_id"):
        return
    from _pytest.nodeid import NodeId  # private, pinned pytest: the only way to the id the scheduler parses

    item._id = NodeId.parse(item.nodeid + suffix)
