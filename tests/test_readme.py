"""The README documents every setting, and its two commands are the ones the Makefile and CI run."""

from pathlib import Path

from infra.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    missing = [f"TOOLOUT_{name.upper()}" for name in Settings.model_fields if f"TOOLOUT_{name.upper()}" not in README]
    assert missing == []


def test_the_two_commands_exist_and_ci_runs_the_test_command() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "| `make demo` |" in README and "| `make test` |" in README
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()
