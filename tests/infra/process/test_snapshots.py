"""Snapshots on a signal (`infra.process.snapshots`): off without a directory, and two of them say what grew where."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from infra.process import snapshots as memory_snapshots

GROWER = """
import os, sys, time
from infra.process import snapshots as memory_snapshots

assert memory_snapshots.install(sys.argv[1])
kept = []
os.kill(os.getpid(), memory_snapshots.SIGNAL)
for _ in range(2000):
    kept.append(bytearray(1000))  # the line that grows: about 2 MB between the two snapshots
class Held: pass
held = [Held() for _ in range(5000)]
os.kill(os.getpid(), memory_snapshots.SIGNAL)
"""


def test_two_snapshots_name_the_line_and_the_type_that_grew(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONTRACEMALLOC": "1"}
    subprocess.run([sys.executable, "-c", GROWER, str(tmp_path)], env=env, check=True, timeout=60)
    stems = sorted(p.with_suffix("").with_suffix("") for p in tmp_path.glob("*.types.json"))
    assert len(stems) == 2 and all(s.with_suffix(".tracemalloc").exists() for s in stems)
    grown = memory_snapshots.compare(stems[0], stems[1], top=3)
    assert "<string>:9: size=" in grown[0] and "KiB (+" in grown[0], grown  # line 9 of GROWER, in KiB gained
    assert "Held: +5000 objects" in grown, grown


def test_without_tracemalloc_a_snapshot_still_counts_types(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", GROWER, str(tmp_path)], check=True, timeout=60)
    stems = sorted(p.with_suffix("").with_suffix("") for p in tmp_path.glob("*.types.json"))
    assert len(stems) == 2 and not list(tmp_path.glob("*.tracemalloc"))
    assert "Held: +5000 objects" in memory_snapshots.compare(stems[0], stems[1])


def test_no_directory_installs_nothing() -> None:
    assert not memory_snapshots.install("")
