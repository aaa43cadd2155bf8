"""toolout offline model: a deterministic OpenAI-compatible server with no LLM inside.

It stands in for a provider in the demo, tests and benchmarks: it parses toolout's own extraction
prompts and answers with lexically ranked lines (see `ranking`), plays the read-grep tool loop
(see `agent`), and injects latency/errors/malformed answers on request (see `config`).
The HTTP app is imported lazily so that using `ranking` does not pull in FastAPI.
"""

from __future__ import annotations

from typing import Any

from infra.offline_model.config import HEADER, OfflineModelConfig

__all__ = ["HEADER", "OfflineModelConfig", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in ("create_app", "serve"):
        from infra.offline_model import server

        return getattr(server, name)
    raise AttributeError(name)
