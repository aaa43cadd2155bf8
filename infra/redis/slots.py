"""Redis Cluster slots: which slot a key lands on, and a short hash tag for every slot.

A Lua script on a Redis Cluster may touch only keys of one slot. A job's keys share the tag `{<job id>}`, but the
indexes that span jobs (active jobs, usage totals) cannot share one tag with all of them. So each index is kept
per slot: the copy for slot `s` is named with `slot_tag(s)`, a tag that hashes to `s`, and the script that changes
a job also changes its slot's copy of the index, atomically, on the same primary. Readers of a whole index (the
watchdog, `/metrics`) read the copy of every slot in use.

Walking every copy costs one command per copy, and ids hashing anywhere would in time write all 16384 copies of
each index, and the watchdog's walk and a `/metrics` scrape would slow with them. So the ids toolout makes (sessions,
handles, jobs: `draw_id`) are drawn to land on one slot in `INDEX_STRIDE`: 256 index slots, spread evenly over the
slot range (so over every primary, however the slots are split), at most 256 copies of each index to walk. Keys of
any id still work (an id made elsewhere registers its own copy); the draw only bounds how many copies there are.

The tags come from `slot_tags.txt` (line `s` hashes to slot `s`): computing them takes seconds of CRC16 in
Python, reading them a millisecond. `generate_slot_tags()` rebuilds the file; a test checks every line.
"""

from __future__ import annotations

import binascii
import uuid
from functools import cache
from importlib import resources

SLOTS = 16384
INDEX_STRIDE = 64
"""Ids land on slots 0, 64, 128, …: 256 slots, 64 draws of a UUID4 on average (~0.2 ms), 116 random bits left."""


def key_slot(key: str) -> int:
    """The cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the first non-empty `{…}`), else of the key."""
    data = key.encode()
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1 : end]
    return binascii.crc_hqx(data, 0) % SLOTS


def draw_id() -> str:
    """A random UUID4 whose `{tag}` lands on an index slot (a multiple of `INDEX_STRIDE`)."""
    while True:
        candidate = str(uuid.uuid4())
        if key_slot("{" + candidate + "}") % INDEX_STRIDE == 0:
            return candidate


@cache
def _tags() -> tuple[str, ...]:
    text = resources.files(__package__ or "infra").joinpath("slot_tags.txt").read_text()
    tags = tuple(text.split())
    if len(tags) != SLOTS:
        raise RuntimeError(f"slot_tags.txt holds {len(tags)} tags, not {SLOTS}")
    return tags


def slot_tag(slot: int) -> str:
    """A short tag whose keys land on `slot` (`key_slot("{" + slot_tag(s) + "}") == s`)."""
    return _tags()[slot]


def same_slot_tag(tag: str) -> str:
    """The per-slot index tag that lands on the same slot as keys tagged `{tag}`."""
    return slot_tag(key_slot("{" + tag + "}"))


def generate_slot_tags() -> list[str]:
    """The first hex number that hashes to each slot, by slot: what `slot_tags.txt` holds."""
    tags: list[str | None] = [None] * SLOTS
    missing, number = SLOTS, 0
    while missing:
        candidate = format(number, "x")
        slot = binascii.crc_hqx(candidate.encode(), 0) % SLOTS
        if tags[slot] is None:
            tags[slot], missing = candidate, missing - 1
        number += 1
    return [tag for tag in tags if tag is not None]


if __name__ == "__main__":  # python -m infra.redis.slots > infra/slot_tags.txt
    print("\n".join(generate_slot_tags()))
