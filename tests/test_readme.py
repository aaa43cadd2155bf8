"""The docs document every setting, the README opens on `toolout dev`, and the two commands CONTRIBUTING gives
are the ones the Makefile and CI run."""

import re
from pathlib import Path

from infra.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    missing = [
        f"TOOLOUT_{name.upper()}" for name in Settings.model_fields if f"TOOLOUT_{name.upper()}" not in configuration
    ]
    assert missing == []


def test_every_environment_variable_the_client_side_reads_is_documented() -> None:
    """`TOOLOUT_API_URL`, `TOOLOUT_SESSION`, …: read by the CLI, the MCP server and the integrations, not Settings
    (the offline model's `TOOLOUT_OFFLINE_*` knobs are a family of their own, named in `offline_model/config.py`)."""
    configuration = (ROOT / "docs" / "configuration.md").read_text()
    sources = [p for package in ("toolout", "infra", "api", "workers") for p in (ROOT / package).rglob("*.py")]
    named = {v for p in sources for v in re.findall(r"[\"'](TOOLOUT_[A-Z0-9_]*[A-Z0-9])[\"']", p.read_text())}
    client_side = {v for v in named if not v.startswith("TOOLOUT_OFFLINE_")}
    assert {"TOOLOUT_API_URL", "TOOLOUT_API_KEY", "TOOLOUT_SESSION", "TOOLOUT_MCP_MODEL"} <= client_side
    assert sorted(v for v in client_side if f"`{v}`" not in configuration) == []
    assert "`OTEL_EXPORTER_OTLP_ENDPOINT`" in configuration


def test_the_readme_names_every_step_ci_runs() -> None:
    lines = re.findall(r"^make ([^#\n]+)", (ROOT / ".ci" / "run").read_text(), re.M)
    steps = [word for line in lines for word in line.split() if not word.startswith("-")]  # `make -j3 a b`: a, b
    assert steps, "no make step found in .ci/run"
    said = " ".join(README.split())
    assert [s for s in steps if f"`make {s}`" not in said] == []


def test_key_placeholders_have_the_real_keys_shape() -> None:
    """A reader pastes what the docs show: the placeholders start as real keys do (`toolout keys create`)."""
    from infra.stores.apikeys.base import KEY_PREFIX, new_key

    assert new_key().startswith(KEY_PREFIX)
    shown = {
        path.name: re.findall(r"(?:TOOLOUT_API_KEY[\"=: ]+|Bearer )\"?([a-z]+_[\w…]+)", path.read_text())
        for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    }
    assert shown["README.md"] and shown["mcp.md"], "the placeholders were not found: the pattern is stale"
    assert {name: [k for k in keys if not k.startswith(KEY_PREFIX)] for name, keys in shown.items() if keys} == {
        name: [] for name, keys in shown.items() if keys
    }


def test_the_readme_is_a_front_door() -> None:
    """What toolout is, `toolout dev`, three quickstarts and links; the rest lives in the docs site. That the "Run
    it" block works as written on a fresh clone is tests/wheel/test_wheel_install.py's (`make test-wheel`), with the
    quickstarts from the built wheels; here, that it says what is true today: no package is published."""
    from tests.docs_pages import blocks, section

    assert len(README.splitlines()) <= 200
    run_it = section(README, "## Run it")
    [block] = blocks(run_it, "bash")
    assert "pip install -e '.[server]'" in block and block.rstrip().endswith("toolout dev")
    assert "No package is published yet" in run_it and "pip install 'toolout[server]'" in run_it
    for heading in (
        "## Quickstart: your own agent loop",
        "## Quickstart: an agent framework",
        "## Quickstart: an MCP client",
    ):
        assert heading in README


def test_the_two_commands_exist_and_ci_runs_the_test_command() -> None:
    makefile, contributing = (ROOT / "Makefile").read_text(), (ROOT / "CONTRIBUTING.md").read_text()
    assert "| `make demo` |" in contributing and "| `make test` |" in contributing
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_license_and_the_changelog_are_where_packagers_look() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("MIT License") and "the toolout authors" in license_text
    changelog = (ROOT / "CHANGELOG.md").read_text()
    import toolout

    assert project["dynamic"] == ["version"]  # one version, toolout.__version__, for both distributions
    assert "## [Unreleased]" in changelog and toolout.__version__ in changelog and "**Versioning.**" in changelog
