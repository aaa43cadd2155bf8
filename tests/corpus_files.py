"""The real-content corpus as tests see it: where it is, its files, and the bench's questions with their answers.

The corpus is found by `toolout.devstack.datasets.corpus_dir` (`../shared/corpus` beside the checkout, or
`TOOLOUT_CORPUS_DIR`): None outside CI when absent (the tests over it skip), an error under `CI=true`. The
questions and their computed answers come from the quality bench run as a process (`python -m
bench.quality.corpus`): tests import no bench module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from toolout.devstack.datasets import CORPUS_ENV, corpus_dir

ROOT = Path(__file__).resolve().parents[1]
CORPUS = corpus_dir(ROOT)


def corpus_files() -> list[Path]:
    """Every file of the corpus but its README, by name (none when the corpus is absent)."""
    return sorted(path for path in CORPUS.iterdir() if path.name != "README.md") if CORPUS else []


def listing(corpus: Path) -> list[dict[str, Any]]:
    """Every corpus question with the answer the bench computes from the files in `corpus`."""
    env = {**os.environ, CORPUS_ENV: str(corpus)}
    argv = [sys.executable, "-m", "bench.quality.corpus"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return list(json.loads(done.stdout))
