"""The query strategy on `make demo`'s 20 MB orders JSON, beside full-chunked, in the same run.

    python -m bench.micro.query_orders [--mb 20]

Starts the offline model, stores the demo's orders JSON (`toolout.devstack.datasets.json_orders`) in the
embedded mode (`toolout.local`, the service's pipeline on a thread pool), and asks:

1. the planted-order lookup (`ORDER_NEEDLE.request`) with `auto` (must route to `query`) and with
   `full-chunked`: input tokens and seconds of each;
2. "how many orders have status refunded, and their total_cents?" with `query` (checked
   against the numbers counted from the JSON) and `full-chunked` (printed beside it).

Targets (docs/query.md): auto → query, the planted order found, ≤ 20,000 input tokens, and ≤ 1/10 of
full-chunked's seconds. Exit status 1 if one is missed or the query count is not exact.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from toolout.devstack import processes
from toolout.devstack.datasets import ORDER_NEEDLE, json_orders
from toolout.local import LocalToolOut, Result

COUNT_STATUS = "refunded"
COUNT_REQUEST = f"How many orders have status {COUNT_STATUS}, and what is their total_cents?"
MAX_TOKENS, MAX_TIME_RATIO = 20_000, 0.10


def timed(local: LocalToolOut, handle: str, request: str, mode: str) -> tuple[Result, float]:
    started = time.perf_counter()
    result = local.extract(handle, request, mode)
    return result, time.perf_counter() - started


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--mb", type=int, default=20)
    opts = args.parse_args()
    data = b"".join(json_orders(opts.mb * 10**6))
    orders = json.loads(data)
    failed = [o for o in orders if o["status"] == COUNT_STATUS]
    expected = f"{len(failed)} | {sum(o['total_cents'] for o in failed)}"
    with tempfile.TemporaryDirectory() as var:
        port = processes.free_port()
        model = processes.offline_model(port, {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, Path(var)).start()
        try:
            model.wait_ready()
            return run(data, expected, f"http://127.0.0.1:{port}/v1")
        finally:
            model.kill()


def run(data: bytes, expected: str, api_base: str) -> int:
    with LocalToolOut("openai/toolout-offline", api_base=api_base, api_key="offline") as local:
        handle = local.store(data, tool_name="orders.list", content_type="application/json").handle
        warm = local.store("warm-up line\n" * 2000, tool_name="warm").handle
        local.extract(warm, "warm-up", "full-chunked")  # litellm's first call is the process's, not a strategy's
        rows = []
        for request, mode in [
            (ORDER_NEEDLE.request, "auto"),
            (ORDER_NEEDLE.request, "full-chunked"),
            (COUNT_REQUEST, "query"),
            (COUNT_REQUEST, "full-chunked"),
        ]:
            result, seconds = timed(local, handle, request, mode)
            rows.append((request, mode, result.job, seconds, result.text))
    print(f"{'request':<10} {'mode':<13} {'used':<13} {'input tokens':>13} {'calls':>6} {'seconds':>8}  answer")
    for request, mode, job, seconds, text in rows:
        answer = " ".join(text.split("\n", 2)[-1].split())[:90]
        label = "lookup" if request == ORDER_NEEDLE.request else "count+sum"
        print(
            f"{label:<10} {mode:<13} {job.mode_used:<13} {job.usage.input_tokens:>13,} {job.usage.calls:>6} "
            f"{seconds:>8.1f}  {answer}"
        )
    (_, _, auto, auto_s, auto_text), (_, _, full, full_s, _), (_, _, _, _, count_text) = rows[:3]
    checks = {
        "auto routes to query": auto.mode_used == "query",
        "the planted order is found": ORDER_NEEDLE.needle in auto_text and "card declined" in auto_text,
        f"≤ {MAX_TOKENS:,} input tokens": auto.usage.input_tokens <= MAX_TOKENS,
        f"≤ {MAX_TIME_RATIO:.0%} of full-chunked's time ({auto_s / full_s:.1%})": auto_s <= MAX_TIME_RATIO * full_s,
        f"count and total exact ({expected})": expected in count_text,
    }
    for name, ok in checks.items():
        print(f"{'OK ' if ok else 'MISS'} {name}")
    print(
        f"tokens: query {auto.usage.input_tokens:,} = "
        f"{auto.usage.input_tokens / max(1, full.usage.input_tokens):.2%} of full-chunked"
    )
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
