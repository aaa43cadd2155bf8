"""toolout's benchmarks, one tool: `python -m bench [--quick] [--only NAME …] [--list]` from the repo root.

micro/ (in one process), service/ (the system as processes), capacity/, quality/ and soak/ hold the
benches with targets; profiles/ the one-off probes whose findings are in docs/performance.md. Every
bench also runs alone as a module (`python -m bench.service.fanout`). Every bench runs offline: litellm
reads its bundled model prices and tiktoken the BPE files litellm ships, instead of fetching either —
set here, before any bench module imports litellm or loads an encoding.
"""

from __future__ import annotations

import os
from pathlib import Path

from extraction.tokenizer_files import ensure_offline_encodings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ensure_offline_encodings()

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH_ROOT = REPO_ROOT / "var" / "bench"
"""Where the benches keep what they write: logs, blobs, generated corpora (kept after a run, to read)."""
