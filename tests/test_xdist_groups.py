"""The suite's own parallelism: the tests of one module that need servers run on one xdist worker.

They share that module's servers (its stacks, the worker's Redis, its network namespaces), and they flush
each other's data between tests, so two workers running them at once would break them. tests/conftest.py puts
them in one `xdist_group` per module; this runs a small suite of its own under two workers and checks the
group holds (it did not, silently, before the workaround for pytest-dev/pytest-xdist#1386).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SUITE = """
    import pytest

    @pytest.fixture()
    def redis_url():  # the name is what marks a test as needing Redis; nothing here touches a server
        return "redis://unused"

    @pytest.mark.parametrize("n", range(8))
    def test_needs_redis(redis_url, n):
        pass

    @pytest.mark.parametrize("n", range(8))
    def test_needs_nothing(n):
        pass
"""


def run_suite(tmp_path: Path, suite: str, *options: str) -> subprocess.CompletedProcess[str]:
    """`suite` as the only test file of a pytest run of its own, under this repository's root conftest."""
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(suite))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "tests.conftest",
        *options,
        "-p",
        "no:cacheprovider",
        str(tmp_path),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.integration  # its own pytest processes
def test_a_modules_tests_that_need_servers_run_on_one_worker(tmp_path: Path) -> None:
    run = run_suite(tmp_path, SUITE, "-p", "xdist.plugin", "-n", "2", "--dist", "loadgroup", "-v")
    assert run.returncode == 0, run.stdout + run.stderr

    workers: dict[str, set[str]] = defaultdict(set)
    grouped: set[str] = set()
    for worker, test, case, group in re.findall(r"\[(gw\d)\] .*PASSED \S*::(test_\w+)(\[\d+\])(@\w+)?", run.stdout):
        workers[test].add(worker)
        grouped |= {test + case} if group == "@servers_test_suite" else set()
    assert set(workers) == {"test_needs_redis", "test_needs_nothing"}, run.stdout
    assert len(workers["test_needs_redis"]) == 1, f"the Redis tests ran on {sorted(workers['test_needs_redis'])}"
    assert grouped == {f"test_needs_redis[{n}]" for n in range(8)}, run.stdout  # exactly they joined the group


HIDDEN = """
    import pytest

    @pytest.fixture()
    def redis_url():
        return "redis://unused"

    @pytest.fixture(params=["memory", "redis"])
    def store(request):
        return request.getfixturevalue("redis_url") if request.param == "redis" else "memory"

    def test_store(store):
        pass
"""


@pytest.mark.integration  # its own pytest process
def test_a_server_fixture_reached_without_the_mark_fails_the_test(tmp_path: Path) -> None:
    """A fixture asked for at run time is invisible to the collection marks: the guard fails that test, by name."""
    run = run_suite(tmp_path, HIDDEN, "-rA")
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(r"PASSED \S*test_store\[memory\]", run.stdout), run.stdout
    assert re.search(r"ERROR \S*test_store\[redis\]", run.stdout), run.stdout
    assert "test_store[redis] reached ['redis_url'] without the integration mark" in run.stdout, run.stdout


def test_every_module_the_scheduling_names_exists() -> None:
    """A renamed module would silently lose its place: dealt out last, or timed beside another timed module."""
    from tests.conftest import SLOW_FIRST, TIMED_MODULES

    assert sorted(m for m in {*SLOW_FIRST, *TIMED_MODULES} if not (ROOT / m).is_file()) == []


def test_a_timed_module_starts_its_processes_ahead_on_the_cpu_and_gives_the_priority_back() -> None:
    from tests.conftest import TIMED_NICENESS, ahead_on_the_cpu

    before = os.getpriority(os.PRIO_PROCESS, 0)
    read = [sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"]
    with ahead_on_the_cpu() as raised:
        child = int(subprocess.run(read, capture_output=True, text=True, check=True).stdout)
    assert child == (TIMED_NICENESS if raised else before), "a process started inside inherits the priority"
    assert raised or os.geteuid() != 0, "root may always raise its priority"
    assert os.getpriority(os.PRIO_PROCESS, 0) == before, "the rest of the run gets the old priority back"


def test_a_timed_modules_children_run_untraced_and_the_rest_of_the_run_traced(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import COVERAGE_CHILD_VARIABLES, untraced_children

    monkeypatch.setenv("COVERAGE_PROCESS_CONFIG", "{}")
    read = [sys.executable, "-c", f"import os; print(sorted(set({COVERAGE_CHILD_VARIABLES!r}) & set(os.environ)))"]
    with untraced_children():
        inside = subprocess.run(read, capture_output=True, text=True, check=True).stdout.strip()
    assert inside == "[]", "coverage's variables reach no child started inside"
    assert os.environ["COVERAGE_PROCESS_CONFIG"] == "{}", "and are back for the rest of the run"
