"""The process-memory knobs (`infra.process.memory`): applied on glibc, skipped when off, trimming stops."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from infra.process import memory


def trimmers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "toolout-malloc-trim"]


@pytest.mark.skipif(memory._glibc() is None, reason="glibc only")
def test_on_glibc_the_arenas_are_capped_and_free_pages_handed_back() -> None:
    assert memory.limit_arenas(2)
    blocks = [bytearray(64 * 1024 - 64) for _ in range(400)]  # ~25 MB of the heap (below mmap's threshold)
    del blocks[::2]  # every other one freed: holes between live blocks, which free() alone keeps resident
    assert memory.trim(), "malloc_trim released nothing from a heap full of free pages"
    del blocks


def test_settle_caps_and_starts_trimming_on_glibc() -> None:
    stop = memory.settle(2, 3600)
    try:
        assert len(trimmers()) == (1 if memory._glibc() is not None else 0)
    finally:
        stop()


def test_zero_turns_each_knob_off() -> None:
    assert not memory.limit_arenas(0)
    before = len(trimmers())
    stop = memory.settle(0, 0)
    assert len(trimmers()) == before
    stop()


def test_the_trimming_thread_trims_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    if memory._glibc() is None:
        pytest.skip("glibc only")
    calls: list[float] = []
    monkeypatch.setattr(memory, "trim", lambda: calls.append(time.monotonic()) is None)
    stop = memory.start_trimming(0.01)
    deadline = time.monotonic() + 10
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop()
    assert len(calls) >= 3
    for thread in trimmers():
        thread.join(5)
    assert trimmers() == []


HOLES = """
import sys
from infra.process import memory

if sys.argv[1] == "fixed":
    assert memory.fix_mmap_threshold(128 * 1024)
big = bytearray(1 << 20)
del big  # glibc alone now raises its bound to 1 MiB: later 300 KB blocks come from the heap
def anon_mb():
    status = open("/proc/self/status").read().split("RssAnon:")[1]
    return int(status.split()[0]) / 1000
bodies, pins = [], []
for _ in range(100):  # upload bodies with a small live block after each (below 512 bytes pymalloc would hold it)
    bodies.append(bytearray(300_000))
    pins.append(bytearray(1000))
before = anon_mb()
del bodies
print(before - anon_mb())
"""


def test_a_fixed_mmap_threshold_hands_freed_upload_bodies_back_at_once() -> None:
    if memory._glibc() is None:
        pytest.skip("glibc only")
    returned = {
        mode: float(
            subprocess.run([sys.executable, "-c", HOLES, mode], capture_output=True, text=True, check=True).stdout
        )
        for mode in ("fixed", "sliding")
    }
    assert returned["fixed"] > 25, returned  # the 30 MB of bodies went back to the kernel when freed
    assert returned["sliding"] < 5, returned  # holes between live blocks: resident until a trim


def test_zero_leaves_the_mmap_threshold_to_glibc() -> None:
    assert not memory.fix_mmap_threshold(0)
