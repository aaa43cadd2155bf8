"""The fuzz targets on their kept seeds, in the fast tier: each seed passes its target's invariants, each
target has seeds, and the atheris runner drives a target end to end (`make fuzz` runs them for long)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.campaign import ROOT, SEEDS, libfuzzer_flags
from tests.fuzz.targets import TARGETS, Target

SEED_FILES = sorted(path for path in SEEDS.glob("*/*") if path.is_file())


def test_every_target_has_seeds_and_every_seed_a_target() -> None:
    assert {path.parent.name for path in SEED_FILES} == set(TARGETS)


@pytest.mark.parametrize("seed", SEED_FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_seed_keeps_its_targets_invariants(seed: Path) -> None:
    TARGETS[seed.parent.name].check(seed.read_bytes())


def test_only_the_allowed_errors_are_rejections() -> None:
    def parse(data: bytes) -> int:
        return int(data)

    Target("number", parse, (ValueError,)).check(b"not a number")
    with pytest.raises(ValueError):
        Target("number", parse).check(b"not a number")


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is a dev dependency")
def test_the_runner_fuzzes_a_target_from_its_seeds(tmp_path: Path) -> None:
    flags = [flag for flag in libfuzzer_flags("content_kind", 5, 5) if not flag.startswith("-max_total_time")]
    done = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", "content_kind", "-runs=2000", *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 2000 runs" in done.stderr
