"""toolout offline model: a deterministic OpenAI-compatible server with no LLM inside.

It stands in for a provider in the demo, tests and benchmarks: it parses toolout's own extraction
prompts and answers with lexically ranked lines (see `ranking`), plays the read-grep tool loop
(see `agent`), plays a simple agent that follows a task naming tools — answering a too-large
message with `tool_output`, a routed manifest with `buffer_ops`, passing `$var` references — when
offered tools outside an extraction prompt (see `tool_agent`; README.md has the rules), and
injects latency/errors/malformed answers on request (see `config`).
The HTTP app lives in `server` (imported by those who serve it), so using `ranking` does not pull in FastAPI.
"""

from __future__ import annotations

from offline_model.config import HEADER, OfflineModelConfig

__all__ = ["HEADER", "OfflineModelConfig"]
