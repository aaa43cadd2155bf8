"""One wide burst of big uploads: does the API give its memory back within a minute?

    python -m bench.soak.upload_burst [--width 200] [--body-mb 2.3] [--rest-seconds 60] [--json out.json]

A private stack (`toolout.devstack.stack.start_private`, one worker). One agent warms the API up with 20 uploads of the
body; after a rest the API's RSS is the baseline. Then `--width` agents at once each open a session, store the
body once and end it (every upload in flight together: the bound `TOOLOUT_MAX_UPLOADS_IN_FLIGHT` is above the
width). The RSS is sampled every 0.2 s during the burst (its peak) and `--rest-seconds` after it.

It prints the RSS before, at the peak and after, the growth left over the baseline and the peak's ratio to it.
Target: what stays after the rest is within 50 MB of the baseline (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.soak.bursts import burst
from toolout.client import ToolOutClient
from toolout.devstack.stack import start_private
from toolout.devstack.stack_watch import own_rss_mb

LEFT_OVER_TARGET_MB = 50.0


def body_of(megabytes: float) -> bytes:
    """A JSON tool output of about `megabytes` (a list of log-like records, as an API or a search tool returns)."""
    records = [{"id": i, "level": "info", "message": "request served " + "x" * 60} for i in range(16)]
    count = int(megabytes * 1_000_000 / (len(json.dumps(records[0])) + 2))
    return json.dumps([{**records[i % 16], "id": i} for i in range(count)]).encode()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    body = body_of(args.body_mb)
    root = Path(tempfile.mkdtemp(prefix="toolout-upload-burst-"))
    stack = start_private(root, workers=1)
    try:
        pid = stack.pids("api")[0]
        with ToolOutClient(stack.api_url, timeout=300) as client:
            session = client.create_session()
            for _ in range(20):
                client.store(session, body, tool_name="fetch", content_type="application/json")
            client.delete_session(session)
        time.sleep(args.rest_seconds)
        before = own_rss_mb(pid)
        started = time.monotonic()
        found = burst(stack.api_url, pid, args.width, 1, args.rest_seconds, body=body)
        took = time.monotonic() - started - args.rest_seconds
        return {
            "width": args.width,
            "body_bytes": len(body),
            "before_mb": before,
            "peak_mb": found.peak_mb,
            "after_mb": found.after_mb,
            "burst_seconds": round(took, 1),
        }
    finally:
        stack.stop()


def print_report(found: dict[str, Any]) -> bool:
    left = found["after_mb"] - found["before_mb"]
    print(f"{found['width']} concurrent uploads of {found['body_bytes'] / 1e6:.1f} MB in {found['burst_seconds']} s")
    print(
        f"API RSS before {found['before_mb']:.1f} MB, peak {found['peak_mb']:.1f} MB, after {found['after_mb']:.1f} MB"
    )
    print(f"peak / before {found['peak_mb'] / found['before_mb']:.2f}x; left after the rest {left:+.1f} MB")
    ok = left <= LEFT_OVER_TARGET_MB
    print(f"{'PASS' if ok else 'MISS'} (target: left <= {LEFT_OVER_TARGET_MB:g} MB)")
    return ok


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=200, help="agents uploading at once")
    parser.add_argument("--body-mb", type=float, default=2.3, help="size of each upload")
    parser.add_argument("--rest-seconds", type=float, default=60, help="the wait before the baseline and after")
    parser.add_argument("--json", type=Path, help="also write the result here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    found = measure(args)
    ok = print_report(found)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
