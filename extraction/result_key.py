"""When two extractions must give the same answer: the key of the result cache and the "prompt version".

Two jobs may share a result only if everything that shapes the answer is the same. That is the
caller's tenant (never shared across tenants), the document (its sha256, not its handle: the same
bytes uploaded again are the same document), the request (extract and mode), the source tool's name
and arguments (the prompts quote both, and the result's header names the tool), the model, and the
prompt version: every prompt text the extractor can send, the tool schemas the sub-agent gets, and
the settings that change the answer (given by the caller: chunk overlap, mode-choice thresholds, model
limits, agent bounds, ...). A change to any of them changes the key, so no stale answer is served.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from extraction.texts.nonce import WIDEST_NONCE
from extraction.texts.prompts import PromptContext, map_messages, read_grep_messages, reduce_messages
from extraction.texts.tools import grep_tool, read_tool

PIPELINE_EPOCH = 1
"""Raise when the extraction logic changes answers in a way the hashed prompt texts do not show
(e.g. a new step in the sub-agent's loop): every cached result then stops matching."""


def prompt_version(parameters: Mapping[str, Any]) -> str:
    """A short digest of every prompt template as rendered, the sub-agent's tools, and `parameters`."""
    ctx = PromptContext(
        tool_name="<TOOL>",
        tool_args_json="<ARGS>",
        extract="<EXTRACT>",
        nonce=WIDEST_NONCE,
        doc_bytes=1,
        doc_lines=1,
        doc_tokens=1,
        cite=bool(parameters.get("evidence")),
    )
    prompts = [
        map_messages(ctx, "<CHUNK>", chunk_index=1, chunk_total=2, overlap_percent=10.0),
        reduce_messages(ctx, ["<OUTPUT 1>", "<OUTPUT 2>"]),
        read_grep_messages(ctx, handle_filename="<HANDLE>", root="<ROOT>"),
    ]
    payload = {
        "epoch": PIPELINE_EPOCH,
        "prompts": prompts,
        "tools": [read_tool(), grep_tool()],
        "parameters": dict(parameters),
    }
    return _digest(payload)[:16]


def result_key(
    *,
    tenant: str,
    sha256: str,
    extract: str,
    mode: str,
    tool_name: str,
    tool_args: str,
    model: str,
    version: str,
) -> str:
    """The cache key (hex sha256) of one extraction request; equal keys may share one result."""
    fields = {
        "tenant": tenant,
        "sha256": sha256,
        "extract": extract,
        "mode": mode,
        "tool_name": tool_name,
        "tool_args": tool_args,
        "model": model,
        "prompt_version": version,
    }
    return _digest(fields)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
