"""The deploy guide's Docker Compose commands, run as written (docs/guides/deploy.md), on CI's stand-ins.

The commands come from the section's shell block, one line each, in order; the environment only adds
COMPOSE_FILE (the user's file plus CI's override) and a project name. Jobs are started once the key exists,
so the scale-up and the scale-down both happen while they run; every one must still succeed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.compose.agent import Agent
from tests.compose.project import SLOW_MODEL, Project, new_project, run, timed, torn_down
from toolout.devstack.datasets import corpus_dir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "guides" / "deploy.md"


def guide_commands() -> list[str]:
    """The shell lines of the guide's Docker Compose section, comments dropped."""
    section = GUIDE.read_text(encoding="utf-8").split("\n## Docker Compose\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, "the Docker Compose section has no ```bash block"
    lines = [line.split(" #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def workers(project: Project) -> int:
    return len(project.containers("worker"))


def test_the_guide_names_the_steps_this_test_checks() -> None:
    commands = guide_commands()
    scales = [int(m.group(1)) for c in commands if (m := re.search(r"--scale worker=(\d+)", c))]
    assert len(scales) >= 3 and max(scales[1:]) > scales[0] > min(scales[1:]), scales
    assert any("keys create" in c for c in commands) and commands[-1].startswith("docker compose down")


def test_the_compose_section_runs_as_written(measurements: Callable[[str], None]) -> None:
    corpus = corpus_dir(REPO)
    if corpus is None:
        pytest.skip("the corpus is not beside this checkout")
    project = new_project(**SLOW_MODEL)
    jobs: list[str] = []
    agent: Agent | None = None
    with torn_down(project):
        for command in guide_commands():
            if command.startswith("docker compose down") and agent is not None:
                records = agent.finish(jobs, timeout=240)
                assert all(r["status"] == "succeeded" for r in records.values()), records
            seconds = timed(lambda c=command: _output.__setitem__(c, run(shlex.split(c), env=project.env, timeout=900)))
            measurements(f"{command}: {seconds:.0f} s")
            if scale := re.search(r"--scale worker=(\d+)", command):
                assert workers(project) == int(scale.group(1)), command
            if "keys create" in command:
                agent = Agent.connect(project.api_url, _output[command].strip())
                handle = agent.store(corpus / "Linux_2k.log", "read_log", "text/plain")
                jobs = [agent.extract(handle, f"every failed login ({i})", "full-chunked") for i in range(8)]
        assert agent is not None and jobs, "the guide never created a key, so no job ran"
        assert run(["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={project.name}"]) == ""


_output: dict[str, str] = {}
