"""Which calls the `fault` knob hits: one chunk's map call, or the reduce call holding a marker.

A pure function of the request body and the knobs, like every other answer of the offline model,
so "chunk 7 of 20 never answers in a wrapper" is the same on every run and every retry.
"""

from __future__ import annotations

import re
from typing import Any

from offline_model import prompt
from offline_model.config import ERROR_KINDS, OfflineModelConfig

_INDEX = re.compile(r"^\s*-\s*Index:\s*(\d+)\s+of\s+\d+\s*$", re.M)


def call_kind(body: dict[str, Any]) -> str | None:
    """`map` or `reduce` for toolout's map-reduce prompts; None for read-grep turns and anything else."""
    messages = body.get("messages") or []
    system = prompt.system_prompt(messages)
    if body.get("tools") or prompt.section(system, "WHAT TO EXTRACT") is None:
        return None
    if prompt.section(system, "CHUNK OUTPUTS") is not None:
        return "reduce"
    return "map" if prompt.section(system, "CHUNK INFO") is not None else None


def chunk_number(body: dict[str, Any]) -> int | None:
    """The map call's chunk number as its prompt shows it (`Index: <i> of <n>`, 1-based)."""
    info = prompt.section(prompt.system_prompt(body.get("messages") or []), "CHUNK INFO") or ""
    match = _INDEX.search(info)
    return int(match.group(1)) if match else None


def call_data(body: dict[str, Any], kind: str) -> str:
    """What the call is about: a map call's chunk text, a reduce call's chunk outputs (never the request)."""
    messages = body.get("messages") or []
    if kind == "reduce":
        return prompt.section(prompt.system_prompt(messages), "CHUNK OUTPUTS") or ""
    users = [m for m in messages if m.get("role") == "user"]
    return prompt.chunk_text(prompt.message_text(users[-1])) if users else ""


def targeted(body: dict[str, Any], knobs: OfflineModelConfig) -> bool:
    """Whether this call gets `knobs.fault`: its kind matches `fault_on` and every given filter holds."""
    kind = call_kind(body) if knobs.fault != "none" else None
    if kind is None or knobs.fault_on not in (kind, "any"):
        return False
    if knobs.fault_chunks and (kind != "map" or chunk_number(body) not in knobs.chunk_numbers):
        return False
    return not knobs.fault_marker or knobs.fault_marker in call_data(body, kind)


def injected_error(body: dict[str, Any], knobs: OfflineModelConfig) -> str | None:
    """The error kind (`429`, `500`, `timeout`) to answer this call with, when it is targeted by one."""
    return knobs.fault if knobs.fault in ERROR_KINDS and targeted(body, knobs) else None


def answer_shape(body: dict[str, Any], knobs: OfflineModelConfig) -> str:
    """The `malformed` shape of this call's answer: the targeted wrapper fault, else the knob's own."""
    if knobs.fault in ("no_wrapper", "empty_wrapper") and targeted(body, knobs):
        return knobs.fault
    return knobs.malformed
