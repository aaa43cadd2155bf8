"""Bursts: does a burst of parallel uploads leave the API's RSS higher for good? glibc's sliding mmap bound vs ours.

    python -m bench.soak.bursts [--widths 8 40 40 80] [--rest-seconds 65] [--uploads 5] [--json out.json]

Two private stacks (`toolout.devstack.stack.start_private`, one worker each), one after the other, differing in one
setting: `TOOLOUT_MALLOC_MMAP_THRESHOLD_BYTES=0` (the baseline: glibc's own bound, raised to the size of each big
block freed — what a process gets without toolout's setting) and the default (128 KiB, fixed). On each, one agent
warms the API up with 20 uploads of a 300 KB JSON; then, per width W, W agents at once each open a session, store
`--uploads` such bodies and end it. The API's RSS is sampled every 0.2 s during the burst (its peak) and again
`--rest-seconds` after it (past one `malloc_trim` interval): what the burst left behind. Beside the RSS: the
API's heap, threads and open fds (`toolout.devstack.stack_watch.memory_parts`), which tell a thread pool or a Redis pool
that grew from a heap that kept its size.

It prints, per stack, the RSS after warm-up, each burst's peak and what stayed after it, and the ratios of the
fixed bound's peak and residual growth to the baseline's. A target: the fixed bound's highest peak above warm at
most 0.8x the baseline's (exit 1 otherwise). Single runs on a shared box are noisy by a few MB; read the peaks.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolout.client import ToolOutClient
from toolout.devstack.stack import start_private
from toolout.devstack.stack_watch import memory_parts, own_rss_mb

BODY = json.dumps({"items": [{"id": i, "message": "x" * 40} for i in range(5000)]}).encode()
"""A 300 KB JSON tool output: above 128 KiB, so glibc's bound decides where its buffers live."""
SETTINGS = {"baseline (glibc's sliding bound)": "0", "toolout (fixed at 128 KiB)": str(128 * 1024)}
PEAK_TARGET = 0.8


@dataclass
class Burst:
    width: int
    peak_mb: float = 0.0
    after_mb: float = 0.0
    at_peak: dict[str, float] = field(default_factory=dict)
    after: dict[str, float] = field(default_factory=dict)


def agent(url: str, uploads: int, body: bytes = BODY) -> None:
    with ToolOutClient(url, timeout=300) as client:
        session = client.create_session()
        for _ in range(uploads):
            client.store(session, body, tool_name="fetch", content_type="application/json")
        client.delete_session(session)


def burst(url: str, pid: int, width: int, uploads: int, rest: float, body: bytes = BODY) -> Burst:
    """`width` agents at once; the API's RSS peak while they run, and its RSS `rest` seconds after."""
    found, agents = Burst(width), [threading.Thread(target=agent, args=(url, uploads, body)) for _ in range(width)]
    for thread in agents:
        thread.start()
    while any(thread.is_alive() for thread in agents):
        if (rss := own_rss_mb(pid)) > found.peak_mb:
            found.peak_mb, found.at_peak = rss, memory_parts(pid)
        time.sleep(0.2)
    time.sleep(rest)
    found.after_mb, found.after = own_rss_mb(pid), memory_parts(pid)
    return found


def one_stack(threshold: str, args: argparse.Namespace) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="toolout-bursts-"))
    stack = start_private(root, workers=1, extra={"TOOLOUT_MALLOC_MMAP_THRESHOLD_BYTES": threshold})
    try:
        pid = stack.pids("api")[0]
        with ToolOutClient(stack.api_url, timeout=300) as client:
            session = client.create_session()
            for _ in range(20):
                client.store(session, BODY, tool_name="fetch", content_type="application/json")
        time.sleep(args.rest_seconds)
        warm = own_rss_mb(pid)
        bursts = [burst(stack.api_url, pid, width, args.uploads, args.rest_seconds) for width in args.widths]
        return {"warm_mb": warm, "bursts": [vars(b) for b in bursts]}
    finally:
        stack.stop()


def ratios(runs: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The fixed bound's highest peak and last residual above warm, each over the baseline's."""
    base, ours = (runs[name] for name in SETTINGS)

    def growth(run: dict[str, Any], key: str) -> float:
        values = [float(b[key]) for b in run["bursts"]]
        return (max(values) if key == "peak_mb" else values[-1]) - float(run["warm_mb"])

    return {key: round(growth(ours, key) / max(growth(base, key), 0.1), 2) for key in ("peak_mb", "after_mb")}


def print_report(runs: dict[str, dict[str, Any]], found: dict[str, float]) -> None:
    for name, run in runs.items():
        print(f"\n{name}: API RSS {run['warm_mb']:.1f} MB after warm-up")
        print(f"{'width':>6}{'peak MB':>9}{'after MB':>10}  heap/threads/fds at peak -> after")
        for b in run["bursts"]:
            show = "/".join(f"{b['at_peak'].get(k, 0):g}" for k in ("anon_mb", "threads", "fds"))
            rest = "/".join(f"{b['after'].get(k, 0):g}" for k in ("anon_mb", "threads", "fds"))
            print(f"{b['width']:>6}{b['peak_mb']:>9.1f}{b['after_mb']:>10.1f}  {show} -> {rest}")
    print(
        f"\nfixed / baseline, growth above warm: highest peak {found['peak_mb']}x, left after the last burst ", end=""
    )
    print(f"{found['after_mb']}x (target: peak <= {PEAK_TARGET}x)")
    print("PASS" if found["peak_mb"] <= PEAK_TARGET else "MISS")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", type=int, nargs="+", default=[8, 40, 40, 80], help="agents per burst, in order")
    parser.add_argument("--uploads", type=int, default=5, help="300 KB uploads per agent in a burst")
    parser.add_argument("--rest-seconds", type=float, default=65, help="the wait after each burst (a trim is 60 s)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs = {name: one_stack(threshold, args) for name, threshold in SETTINGS.items()}
    found = ratios(runs)
    print_report(runs, found)
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "ratios": found}, indent=2))
    return 0 if found["peak_mb"] <= PEAK_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
