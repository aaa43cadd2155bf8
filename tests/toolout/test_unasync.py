"""The generated sync client is what `toolout._unasync` makes from its async source now (CI's check)."""

from __future__ import annotations

import shutil
from pathlib import Path

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


def test_the_command_line_check_exits_zero_when_up_to_date() -> None:
    assert _unasync.main(["--check"]) == 0
    assert _unasync.main(["--bogus"]) == 2
