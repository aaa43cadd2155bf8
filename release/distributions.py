"""Build the two distributions of this tree into dist/: `toolout` (the client) and `toolout-server` (the server).

The checkout is one project (pyproject.toml: `pip install -e '.[server]'` for development, the image's source).
What a user installs is split, the way Prefect ships `prefect-client` from its tree: each distribution is built by
`python -m build` (sdist, then the wheel from it) from a staging directory holding only its own packages and a
pyproject.toml generated here from the checkout's, so versions and pins are written once.

* `toolout`: the `toolout` package but its harness, and `extraction`, the pure engine the client shares with the
  server. Its `server` extra is `toolout-server` of the same version.
* `toolout-server`: `api`, `workers`, `infra`, `offline_model` and `toolout.devstack` (what runs `toolout dev` and
  `toolout demo`), on `toolout` of the same version and the server's pins.

    python release/distributions.py [--outdir dist]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT_EXTRAS = ("mcp", "langchain", "pydantic-ai", "openai-agents", "test")
PACKAGE_DATA = {"*": ["*.json", "*.txt", "*.lua"], "api": ["console/*.html", "console/*.js", "console/*.css"]}


@dataclass(frozen=True)
class Distribution:
    """One distribution: its name, the package folders it ships, what it needs."""

    name: str
    folders: tuple[str, ...]
    dependencies: list[str]
    extras: dict[str, list[str]]
    scripts: dict[str, str]
    leave_out: tuple[str, ...] = ()


def version() -> str:
    """`toolout.__version__`, read without importing the package."""
    tree = ast.parse((ROOT / "toolout" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise SystemExit("toolout/__init__.py has no __version__")


def distributions(project: dict[str, object], release: str) -> list[Distribution]:
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    client_extras = {name: extras[name] for name in CLIENT_EXTRAS} | {"server": [f"toolout-server=={release}"]}
    client = Distribution(
        "toolout",
        ("toolout", "extraction"),
        list(project["dependencies"]),
        client_extras,  # type: ignore[call-overload]
        {"toolout": "toolout.cli:app"},
        ("toolout/devstack",),
    )
    server_folders = ("api", "workers", "infra", "offline_model", "toolout/devstack")
    server = Distribution("toolout-server", server_folders, [f"toolout=={release}", *extras["server"]], {}, {})
    return [client, server]


def packages(staging: Path, folders: tuple[str, ...]) -> list[str]:
    """Every package under the given folders, dotted: as the checkout's `packages.find`, namespace folders too
    (`infra/stores/jobs/lua` holds only Lua scripts, and must ship)."""
    found = []
    for folder in folders:
        top = staging / folder
        for directory in sorted([top, *(d for d in top.rglob("*") if d.is_dir())]):
            if directory.name != "__pycache__" and ships(directory):
                found.append(".".join(directory.relative_to(staging).parts))
    return found


SHIPPED_SUFFIXES = frozenset(
    {".py", *(pattern.rsplit("*", 1)[1] for patterns in PACKAGE_DATA.values() for pattern in patterns)}
)
"""What a package folder must hold to be one: a module or a data file the wheel carries (a folder of build scripts,
such as `infra/compose`, is not shipped, and naming it would fail the wheel built from the sdist)."""


def ships(directory: Path) -> bool:
    return any(path.suffix in SHIPPED_SUFFIXES for path in directory.iterdir() if path.is_file())


def pyproject(dist: Distribution, project: dict[str, object], release: str, staging: Path) -> str:
    """The distribution's pyproject.toml (TOML's strings and arrays of strings are JSON's)."""
    q = json.dumps
    lines = [
        "[build-system]",
        'requires = ["setuptools>=77"]',
        'build-backend = "setuptools.build_meta"',
        "",
        "[project]",
        f"name = {q(dist.name)}",
        f"version = {q(release)}",
        f"description = {q(project['description'])}",
        f"requires-python = {q(project['requires-python'])}",
        'readme = "README.md"',
        'license = "MIT"',
        'license-files = ["LICENSE"]',
        f"classifiers = {q(project['classifiers'])}",
        f"dependencies = {q(dist.dependencies)}",
        "",
        "[project.optional-dependencies]",
        *(f"{q(name)} = {q(reqs)}" for name, reqs in dist.extras.items()),
        "",
        "[project.scripts]",
        *(f"{q(name)} = {q(target)}" for name, target in dist.scripts.items()),
        "",
        "[tool.setuptools]",
        f"packages = {q(packages(staging, dist.folders))}",
        "",
        "[tool.setuptools.package-data]",
        *(f"{q(name)} = {q(globs)}" for name, globs in PACKAGE_DATA.items()),
    ]
    return "\n".join(lines) + "\n"


def stage(dist: Distribution, project: dict[str, object], release: str, staging: Path) -> None:
    """The distribution's folders (sources only), README, LICENSE and generated pyproject.toml in `staging`."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in dist.folders:
        shutil.copytree(ROOT / folder, staging / folder, ignore=ignore)
    for folder in dist.leave_out:
        shutil.rmtree(staging / folder)
    for name in ("README.md", "LICENSE"):
        shutil.copy2(ROOT / name, staging / name)
    (staging / "pyproject.toml").write_text(pyproject(dist, project, release, staging))


def build(outdir: Path) -> list[Path]:
    """Both distributions' sdist and wheel in `outdir` (its older toolout files removed first)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    release = version()
    outdir.mkdir(parents=True, exist_ok=True)
    for old in [*outdir.glob("toolout-*"), *outdir.glob("toolout_server-*")]:
        old.unlink()
    for dist in distributions(project, release):
        with tempfile.TemporaryDirectory(prefix=f"{dist.name}-") as tmp:
            staging = Path(tmp)
            stage(dist, project, release, staging)
            subprocess.run([sys.executable, "-m", "build", "--outdir", str(outdir), str(staging)], check=True)
    return sorted(outdir.glob("toolout*"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outdir", type=Path, default=ROOT / "dist")
    for built in build(parser.parse_args().outdir.resolve()):
        print(built)


if __name__ == "__main__":
    main()
