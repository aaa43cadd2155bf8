"""The toolout image as a user judges it: who it runs as, whether its packages agree, what it holds, what it
weighs and how long it takes to build, and that a code-only change rebuilds without reinstalling dependencies.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

import toolout
from tests.compose.project import APP_IMAGE, REPO, STANDINS, Project, new_project, run, timed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

CREDENTIAL_NAMES = ("*.pem", "*.key", ".env", ".env.*", "id_rsa*", "*.p12", ".netrc", "credentials")
SITE_PACKAGES = "/opt/venv/lib/python3.11/site-packages/"
OUR_PACKAGES = ("extraction", "infra", "workers", "api", "toolout", "offline_model")
"""Files that third-party packages ship (certifi's CA bundle, litellm's public key, tornado's own test key) are
theirs; anything of the kind in our packages or outside site-packages would be ours."""


def ours(path: str) -> bool:
    inside = path.removeprefix(SITE_PACKAGES)
    return inside == path or inside.split("/")[0] in OUR_PACKAGES


@pytest.fixture(scope="module")
def built(measurements_once: list[str]) -> Project:
    """The app image built from this tree (cold on a fresh machine), then again with nothing changed (cached)."""
    project = new_project()
    first = timed(lambda: project.compose("build", "api", timeout=1500))
    cached = timed(lambda: project.compose("build", "api", timeout=600))
    measurements_once.append(f"toolout image build: first {first:.0f} s, unchanged rebuild {cached:.0f} s")
    return project


@pytest.fixture(scope="module")
def measurements_once() -> list[str]:
    return []


def in_image(*argv: str) -> str:
    return run(["docker", "run", "--rm", "--entrypoint", argv[0], APP_IMAGE, *argv[1:]], timeout=120)


def test_build_times_and_sizes(
    built: Project, measurements_once: list[str], measurements: Callable[[str], None]
) -> None:
    sizes = {
        image: int(run(["docker", "image", "inspect", "--format", "{{.Size}}", image]))
        for image in (APP_IMAGE, *STANDINS)
    }
    for line in measurements_once:
        measurements(line)
    measurements(", ".join(f"{image} {size / 1e6:.0f} MB" for image, size in sizes.items()))
    assert sizes[APP_IMAGE] < 1.2e9, "the toolout image grew past 1.2 GB: look at what its venv pulled in"


def test_runs_as_its_unprivileged_user(built: Project) -> None:
    assert in_image("id", "-u").strip() == "10001"
    assert in_image("id", "-g").strip() == "10001"


def test_its_packages_agree_and_the_command_answers(built: Project) -> None:
    assert "No broken requirements found" in in_image("pip", "check")
    assert in_image("toolout", "--version").strip() == f"toolout {toolout.__version__}"  # the checkout's version


def test_holds_no_credentials_or_test_files(built: Project) -> None:
    names = " -o ".join(f"-name '{name}'" for name in CREDENTIAL_NAMES)
    found = in_image(
        "sh", "-c", f"find / -xdev \\( {names} \\) -type f 2>/dev/null; true"
    ).split()  # some dirs are root's
    assert [path for path in found if ours(path)] == [], found
    listing = in_image(
        "python", "-c", "import importlib.metadata as m, json; print(json.dumps([str(f) for f in m.files('toolout')]))"
    )
    files = json.loads(listing)
    assert files and not [f for f in files if f.split("/")[0] in {"tests", "bench", "docs", ".ci"}], files
    assert in_image("sh", "-c", "ls -d /src /tests /opt/venv/tests 2>/dev/null || true").strip() == ""


def test_a_code_only_change_reuses_the_dependency_layer(built: Project, tmp_path: Path) -> None:
    """A copy of the build context with one module edited: the pip install of the dependencies is CACHED."""
    context = tmp_path / "context"
    files = run(["git", "ls-files", "--cached", "--others", "--exclude-standard"]).split()
    for name in files:
        if (REPO / name).is_file():
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, context / name)
    with (context / "extraction" / "__init__.py").open("a") as module:
        module.write(f"\n# a code-only change {uuid.uuid4()}\n")  # new each run: never in the build cache
    env = {**built.env, "COMPOSE_PROJECT_NAME": built.name + "ctx"}
    done = subprocess.run(
        ["docker", "compose", "--progress", "plain", "build", "api"],
        cwd=context,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    steps = step_outcomes(done.stderr + done.stdout)
    deps = [outcome for step, outcome in steps.items() if "pip install -r /tmp/requirements.txt" in step]
    code = [outcome for step, outcome in steps.items() if 'pip install --no-deps ".[compose]"' in step]
    assert deps == ["CACHED"] and code == ["RAN"], steps
    built.compose("build", "api", timeout=600)  # the image from this tree again, not the edited copy


def step_outcomes(log: str) -> dict[str, str]:
    """BuildKit's plain progress: each `RUN` step's text and whether it was CACHED or RAN."""
    titles: dict[str, str] = {}
    outcomes: dict[str, str] = {}
    for line in log.splitlines():
        number, _, rest = line.partition(" ")
        if number.startswith("#") and "] RUN " in rest:
            titles[number] = rest.split("] RUN ", 1)[1]
        elif number in titles and (rest == "CACHED" or rest.startswith("DONE")):
            outcomes.setdefault(titles[number], "CACHED" if rest == "CACHED" else "RAN")
    return {step: outcomes.get(step, "?") for step in titles.values()}
