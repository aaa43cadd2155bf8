"""Root hooks: offline tokenizers for every test, and the markers that say which tests need a server.

Server fixtures live in tests/fixtures. A test that uses one of them (directly or through another
fixture) is marked `integration`, plus `redis` or `s3` for the server it needs, automatically:
`pytest -m "not integration"` is then exactly the suite that runs with no server at all.

Tests run on two pytest-xdist workers per core (`-n auto`, pyproject; see `pytest_xdist_auto_num_workers`). The
integration tests of one module join one xdist group, so they run on one worker, one after another, on the
servers that module's fixtures start; each worker has a Redis of its own (tests/fixtures/redis.py), so two modules
on two workers never flush each other's data. The modules that measure the box itself (throughput, failover and
deadline timings) share one group, so no two of them compete for the cores.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

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
        "tests.fixtures.store_check",
    ]
    if SERVER_INSTALLED
    else []
) + (["schemathesis.pytest.plugin"] if importlib.util.find_spec("schemathesis") else [])  # named, not auto-loaded

collect_ignore = [] if os.environ.get("TOOLOUT_TEST_COMPOSE") else ["compose"]
"""tests/compose builds images and runs docker-compose.yml on a Docker engine: `make test-compose` alone runs it."""

SERVER_FIXTURES = {
    "redis": {"redis_url", "redis_client", "redis_cluster", "redis_cluster_client"},
    "s3": {"seaweedfs_server", "s3_endpoint_url", "s3_options", "s3_bucket", "s3_store"},
    "integration": {  # a server of any kind, even in this process: a socket, a thread serving it, its lifetime
        "live_api",
        "offline_model_url",
        "standin_provider",
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
    if worker := os.environ.get("PYTEST_XDIST_WORKER"):
        _private_tempdir(worker)
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
            group = server_group(item)
            item.add_marker(pytest.mark.xdist_group(group))
            _join_group_on_this_worker(config, item, group)
    items.sort(
        key=lambda item: SLOW_FIRST.get(_module_of(item), len(SLOW_FIRST))
    )  # stable: each module keeps its order


SERVERS_GROUP = "servers"
TIMED_GROUP = "servers_timed"
TIMED_MODULES = frozenset(
    {
        "tests/integration/test_multihost.py",
        "tests/integration/test_faults.py",
        "tests/integration/test_sentinel.py",
        "tests/integration/test_models_and_limits.py",
        "tests/integration/test_soak.py",
    }
)
"""Modules whose assertions are about time on this box: jobs/min per host, seconds to fail over, deadlines of
20 s. They run one after another (still beside other groups: each leaves the cores to the model and the stack)."""
SLOW_FIRST = {
    module: rank
    for rank, module in enumerate(
        (
            *sorted(TIMED_MODULES),
            "tests/toolout/test_dev_quickstarts.py",
            "tests/integration/test_slice.py",
            "tests/toolout/test_dev_real_model.py",
            "tests/integration/test_retention_stack.py",
            "tests/infra/query/test_adversarial.py",
            "tests/integration/test_hostile_query.py",
            "tests/integration/test_agent_toolkit.py",
            "tests/api/test_routing_uploads.py",
            "tests/api/test_retention.py",
            "tests/toolout/mcp/test_proxy_upstreams.py",
            "tests/integration/test_bursts_bench.py",
            "tests/integration/test_quality_bench.py",
            "tests/integration/test_corpus_live.py",
        )
    )
}
"""The modules that take longest (a minute or more of a `make test`), first: xdist deals the groups out in collection
order (`--no-loadscope-reorder`, pyproject), and a long group dealt last keeps one worker busy after the rest end."""


def _module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def server_group(item: pytest.Item) -> str:
    """`servers_timed` for the modules that time the box, else `servers_<module>`, e.g. `servers_api_test_jobs`."""
    module = _module_of(item)
    if module in TIMED_MODULES:
        return TIMED_GROUP
    return SERVERS_GROUP + "_" + re.sub(r"\W", "_", module.removeprefix("tests/").removesuffix(".py"))


@pytest.hookimpl(optionalhook=True)  # xdist's hook: unknown to a run without the plugin
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers per core: most of an integration test's time is spent waiting on the processes it started."""
    return 2 * (os.cpu_count() or 1)


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


TIMED_NICENESS = -10
"""The CPU weight of a timed module's processes: about nine times an ordinary test's under Linux's scheduler."""


@pytest.fixture(scope="module", autouse=True)
def _timed_stacks_ahead_and_untraced(request: pytest.FixtureRequest) -> Iterator[None]:
    """Start a timed module's stacks at a higher CPU priority than the rest of the run, and untraced.

    Their assertions are about what the stack can do when the model is the limit, not about what is left of two
    cores beside three other xdist workers: a CI run whose other tests held the box at a load of 10 slowed the
    3-host throughput phase past the watchdog's deadline. Autouse and module-scoped, so it runs before the
    module's stack fixtures, whose processes inherit the priority.
    """
    if _module_of(request.node) not in TIMED_MODULES:
        yield
        return
    with ahead_on_the_cpu(), untraced_children():
        yield


COVERAGE_CHILD_VARIABLES = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")
"""How coverage's `patch = subprocess` reaches a child: while these are unset, the processes started run untraced."""


@contextlib.contextmanager
def untraced_children() -> Iterator[None]:
    """The processes started meanwhile run without coverage's tracer.

    A timed module measures its stack (jobs per minute per host, seconds to fail over); traced, its workers spent
    their CPU in the tracer, and a 3-host phase ran at half the model's pace. The code they run is measured by the
    untimed tests of the same paths."""
    saved = {name: os.environ.pop(name) for name in COVERAGE_CHILD_VARIABLES if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


@contextlib.contextmanager
def ahead_on_the_cpu(niceness: int = TIMED_NICENESS) -> Iterator[bool]:
    """This thread, and every process it starts meanwhile, at `niceness`; yields False (and changes nothing)
    without the right to raise priority (not root), so the module runs as it would have."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
    except PermissionError:
        yield False
        return
    try:
        yield True
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, before)


def _private_tempdir(worker: str) -> None:
    """This xdist worker's own temp dir for what runs in its process.

    An in-process API on S3 spools uploads under the OS temp dir. The tests that check an upload leaves no spool
    file compare that directory before and after, and with one dir for the box they saw another worker's upload
    in flight. Processes the worker starts keep the OS's."""
    path = Path(tempfile.gettempdir()) / f"toolout-tests-{worker}"
    path.mkdir(exist_ok=True)
    tempfile.tempdir = str(path)


def _join_group_on_this_worker(config: pytest.Config, item: pytest.Item, group: str) -> None:
    """Give the item the `@group` node id suffix xdist's loadgroup scheduler sorts by.

    pytest-xdist 3.8 appends it to `item._nodeid`, which pytest 9.2 no longer reads: its node ids are
    structured (`item._id`), so the groups are silently ignored (pytest-dev/pytest-xdist#1386). Until xdist
    ships its fix we set the structured id ourselves; tests/test_xdist_groups.py fails when this stops working.
    """
    suffix = f"@{group}"
    if not getattr(config.option, "loadgroup", False) or item.nodeid.endswith(suffix) or not hasattr(item, "_id"):
        return
    from _pytest.nodeid import NodeId  # private, pinned pytest: the only way to the id the scheduler parses

    item._id = NodeId.parse(item.nodeid + suffix)
