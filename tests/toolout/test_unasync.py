"""The generated sync client is what `toolout._unasync` makes from its async source now (CI's check)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolout import _unasync


def test_every_generated_file_matches_its_async_source() -> None:
    assert _unasync.stale() == [], "run `python -m toolout._unasync` and commit the result"


def test_the_check_fails_on_a_hand_edited_twin(tmp_path: Path) -> None:
    for path in [*_unasync.PAIRS, *_unasync.PAIRS.values(), "pyproject.toml"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_unasync.ROOT / path, tmp_path / path)
    target = next(iter(_unasync.PAIRS.values()))
    (tmp_path / target).write_text((tmp_path / target).read_text() + "# a hand edit\n")
    assert _unasync.stale(tmp_path) == [target]
    _unasync.write(tmp_path)
    assert _unasync.stale(tmp_path) == []


def test_the_rewrite_drops_async_and_renames_whole_words_only() -> None:
    source = '"""doc"""\nasync def f(r: AsyncTransport) -> None:\n    async with x:\n        await r.aread()\n'
    out = _unasync.unasync(source + "    sendables = run_async_later\n", "a/b.py")
    assert out.startswith("# Generated from a/b.py by toolout/_unasync.py")
    assert "do not edit" in out.splitlines()[0]
    assert "def f(r: SyncTransport) -> None:\n    with x:\n        r.read()\n" in out
    assert "sendables = run_async_later" in out  # a name inside a longer name is left alone


def test_the_command_line_make_lint_runs_exits_zero_when_up_to_date() -> None:
    check = [sys.executable, "-m", "toolout._unasync", "--check"]
    done = subprocess.run(check, cwd=_unasync.ROOT, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
    assert _unasync.main(["--bogus"]) == 2


def test_without_arguments_it_writes_the_generated_files(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[bool] = []
    monkeypatch.setattr(_unasync, "write", lambda: written.append(True))
    assert _unasync.main([]) == 0 and written == [True]


def test_a_source_it_cannot_rewrite_or_format_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="module docstring"):
        _unasync.unasync("x = 1\n", "a/b.py")
    with pytest.raises(RuntimeError, match="ruff format failed"):
        _unasync.formatted("def (:\n", "a/b.py")
    monkeypatch.setattr(shutil, "which", lambda *_, **__: None)
    with pytest.raises(RuntimeError, match="dev extra"):
        _unasync.formatted("x = 1\n", "a/b.py")
