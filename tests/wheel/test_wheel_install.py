"""The first screen on a fresh machine: the README's "Run it" block as written, and the built wheels installed as a
user installs them, not editable, in brand-new venvs outside the checkout (`make test-wheel`).

* The client wheel alone adds exactly the top-level names docs/getting-started.md documents, and its `toolout dev`
  says what to install instead of a traceback.
* Client and server wheels together: `toolout dev` from a temporary directory on the offline model, then the
  README's Toolkit, LangChain and MCP quickstarts from a second shell; no file under site-packages is added,
  removed or changed by the whole run.
* The README's block itself, in a fresh clone of this checkout's commit: it ends in a running `toolout dev`.

Slow by nature (it builds four archives and installs three venvs), so `make test` leaves it to its own target.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.docs_pages import blocks, page, section
from tests.toolout.test_dev_quickstarts import EXPORT, LAST_LINE, READY, read_banner, readme_block, run_mcp_quickstart
from toolout.client import ToolOutClient
from toolout.devstack import processes

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SECONDS = 1200
CLIENT_NAMES = {"toolout", "extraction"}
"""What `pip install toolout` adds at the top level (docs/getting-started.md's table and the Python reference)."""
QUICKSTART_EXTRAS = ["langchain-openai==1.7.4"]
"""What the LangChain quickstart installs beside `toolout[langchain]` (the README says so)."""

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3 * INSTALL_SECONDS)]


@dataclass(frozen=True)
class Venv:
    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def site_packages(self) -> Path:
        code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        return Path(
            subprocess.run([self.python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        )

    def pip(self, *args: str) -> None:
        argv = [str(self.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_SECONDS, env=clean_env(), cwd="/")
        assert done.returncode == 0, f"pip install {' '.join(args)} failed:\n{done.stderr[-3000:]}"


def clean_env(**extra: str) -> dict[str, str]:
    """A new user's shell: none of this checkout on the path, no venv active, no model redirection of ours."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "TOOLOUT_", "OPENAI_", "COV_", "COVERAGE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def new_venv(where: Path) -> Venv:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    subprocess.run(
        [where / "bin" / "python", "-m", "ensurepip", "--upgrade", "--default-pip"],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return Venv(where)


@pytest.fixture(scope="module")
def outside() -> Iterator[Path]:
    """A directory outside the checkout (the system's temp dir), removed at the end."""
    with tempfile.TemporaryDirectory(prefix="toolout-wheel-") as tmp:
        path = Path(tmp)
        assert ROOT not in path.parents
        yield path


@pytest.fixture(scope="module")
def wheels(outside: Path) -> dict[str, Path]:
    """`make dist` as CI runs it: both distributions' sdists and wheels."""
    dist = outside / "dist"
    argv = [sys.executable, str(ROOT / "release" / "distributions.py"), "--outdir", str(dist)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_SECONDS, env=clean_env())
    assert done.returncode == 0, done.stderr[-3000:]
    built = {p.name for p in dist.iterdir()}
    assert {"toolout-0.1.0.tar.gz", "toolout_server-0.1.0.tar.gz"} <= built, built
    return {"client": next(dist.glob("toolout-*.whl")), "server": next(dist.glob("toolout_server-*.whl"))}


def top_level_names(venv: Venv, distribution: str) -> set[str]:
    """The top-level names a distribution put into site-packages, from its installed RECORD."""
    code = f"import importlib.metadata as m; print('\\n'.join(str(f) for f in m.distribution({distribution!r}).files))"
    files = subprocess.run([venv.python, "-c", code], capture_output=True, text=True, check=True, cwd="/").stdout
    tops = {line.split("/")[0] for line in files.splitlines() if line and not line.startswith("..")}
    return {name.removesuffix(".py") for name in tops if not name.endswith(".dist-info") and name != "__pycache__"}


def test_the_client_wheel_alone_adds_only_the_documented_names(outside: Path, wheels: dict[str, Path]) -> None:
    venv = new_venv(outside / "client-venv")
    venv.pip(str(wheels["client"]))
    assert top_level_names(venv, "toolout") == CLIENT_NAMES
    present = [
        n for n in ("api", "infra", "workers", "offline_model", "bench", "tests") if (venv.site_packages() / n).exists()
    ]
    assert present == []
    version = subprocess.run(
        [venv.python, "-c", "import toolout; print(toolout.__version__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout
    assert version.strip() == "0.1.0"
    done = subprocess.run(
        [venv.root / "bin" / "toolout", "dev"], capture_output=True, text=True, env=clean_env(), cwd=outside, timeout=60
    )
    assert done.returncode == 2 and "pip install 'toolout[server]'" in done.stderr, done.stderr


def test_the_documented_names_are_the_ones_getting_started_lists() -> None:
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    row = next(line for line in guide.splitlines() if line.startswith("| `toolout` |"))
    assert row.split("|")[2].count("`") >= 2 * len(CLIENT_NAMES)
    assert all(f"`{name}`" in row.split("|")[2] for name in CLIENT_NAMES)


@pytest.fixture(scope="module")
def user_venv(outside: Path, wheels: dict[str, Path]) -> Venv:
    """Client and server wheels, the quickstarts' extras: `pip install 'toolout[server,langchain,mcp]'`."""
    venv = new_venv(outside / "user-venv")
    venv.pip(f"{wheels['client']}[server,langchain,mcp]", str(wheels["server"]), *QUICKSTART_EXTRAS)
    return venv


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()
    }


@dataclass
class RunningDev:
    process: subprocess.Popen[str]
    exports: dict[str, str]
    venv: Venv

    def shell(self) -> dict[str, str]:
        path = f"{self.venv.root / 'bin'}{os.pathsep}{os.environ['PATH']}"
        return clean_env(PATH=path, **self.exports)


def start_dev(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def stop_dev(process: subprocess.Popen[str]) -> None:
    """Ctrl-C to the whole process group, as a terminal sends it; harder only if that did not end it."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def dev_redis(redis_url: str) -> str:
    """The test Redis database, emptied first (never a developer's db 0)."""
    redis.Redis.from_url(redis_url).flushdb()
    return redis_url


@pytest.fixture(scope="module")
def wheel_dev(user_venv: Venv, outside: Path, redis_url: str) -> Iterator[RunningDev]:
    work = outside / "work"
    work.mkdir()
    before = snapshot(user_venv.site_packages())
    port = processes.free_port()
    argv = [str(user_venv.root / "bin" / "toolout"), "dev", "--port", str(port), "--redis", dev_redis(redis_url)]
    process = start_dev(argv, work, clean_env())
    try:
        printed = read_banner(process, timeout=300)
        assert any(READY.match(line) for line in printed), printed
        yield RunningDev(process, dict(m.groups() for m in map(EXPORT.match, printed) if m), user_venv)
    finally:
        stop_dev(process)
    after = snapshot(user_venv.site_packages())
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert changed == [], f"written under site-packages by toolout dev and the quickstarts: {changed[:20]}"


def run_quickstart(dev: RunningDev, code: str, cwd: Path) -> str:
    script = cwd / "quickstart.py"
    script.write_text(code)
    done = subprocess.run(
        [dev.venv.python, str(script)], env=dev.shell(), cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_toolkit_quickstart_runs_from_the_wheels(wheel_dev: RunningDev, tmp_path: Path) -> None:
    out = run_quickstart(wheel_dev, readme_block("## Quickstart: your own agent loop", "python"), tmp_path)
    assert out.startswith("Done. Tools called: get_orders, tool_output.\nLast tool result:\n"), out


def test_the_langchain_quickstart_runs_from_the_wheels(wheel_dev: RunningDev, tmp_path: Path) -> None:
    assert run_quickstart(wheel_dev, readme_block("## Quickstart: an agent framework", "python"), tmp_path).strip()


def test_the_mcp_quickstart_runs_the_installed_toolout_mcp(wheel_dev: RunningDev) -> None:
    handle, names, text = run_mcp_quickstart(wheel_dev.shell(), wheel_dev.venv.root / "bin")
    assert "tool_output" in names and text.startswith(f"ABSTRACT FROM TOOL OUTPUT orders.export WITH HANDLE {handle}")


def test_the_wheels_installed_nothing_editable(user_venv: Venv) -> None:
    for name in ("toolout", "api", "infra"):
        code = f"import {name}; print({name}.__file__)"
        where = subprocess.run(
            [user_venv.python, "-c", code], capture_output=True, text=True, check=True, cwd="/", env=clean_env()
        ).stdout.strip()
        assert Path(where).is_relative_to(user_venv.site_packages()), where


def test_the_readme_block_as_written_ends_in_a_running_toolout_dev(outside: Path, redis_url: str) -> None:
    """In a fresh clone of this checkout's commit; only the port and Redis are chosen, by a shell function, so a
    developer's own service on 8000 and db 0 are left alone."""
    [block] = blocks(section(page("README.md"), "## Run it"), "bash")
    assert block.rstrip().endswith("toolout dev"), block
    clone = outside / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=300)
    port = processes.free_port()
    wrapper = f'toolout() {{ command toolout "$@" --port {port} --redis {dev_redis(redis_url)}; }}\n'
    process = start_dev(["bash", "-euo", "pipefail", "-c", wrapper + block], clone, clean_env())
    try:
        printed = read_banner(process, timeout=INSTALL_SECONDS)
        assert LAST_LINE in printed[-1] and any(READY.match(line) for line in printed), printed
        exports = dict(m.groups() for m in map(EXPORT.match, printed) if m)
        with ToolOutClient(exports["TOOLOUT_API_URL"], api_key=exports["TOOLOUT_API_KEY"]) as client:
            assert client.create_session()
    finally:
        stop_dev(process)
