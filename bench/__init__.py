"""toolout's benchmarks, one tool: `python -m bench [--quick] [--only NAME …] [--list]` from the repo root.

micro/ (in one process), service/ (the system as processes), capacity/, quality/ and soak/ hold the
benches with targets; profiles/ the one-off probes whose findings are in docs/performance.md. Every
bench also runs alone as a module (`python -m bench.service.fanout`). Every bench runs offline, so
litellm reads its bundled model prices instead of fetching them (set before any bench imports litellm).
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH_ROOT = REPO_ROOT / "var" / "bench"
"""Where the benches keep what they write: logs, blobs, generated corpora (kept after a run, to read)."""
