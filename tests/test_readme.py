"""The docs document every setting, the README opens on `toolout dev`, and the two commands CONTRIBUTING gives
are the ones the Makefile and CI run."""

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


def test_the_readme_is_a_front_door() -> None:
    """What toolout is, `toolout dev`, three quickstarts and links; the rest lives in the docs site."""
    assert len(README.splitlines()) <= 200
    assert "pip install 'toolout[server]'\ntoolout dev\n" in README
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
