"""Provider limits shared by every worker (docs/models.md): many jobs at once against a model that allows N a minute.

    python -m bench.service.provider_limits [--rpm 120] [--jobs 10] [--chunks 32] [--workers 3] [--concurrency 32]
                                          [--redis-url redis://127.0.0.1:6379/9]

Starts the stack of toolout/devstack/stack_models.py (three offline models; the map model refuses calls past
--rpm with a 429, as a provider does), the API and --workers Celery workers of --concurrency threads, then
submits --jobs full-chunked jobs of --chunks chunks each, all at once. The baseline is the limit itself:
the map calls a minute the model allows, measured against the map calls it let through, first to last.

  no 429 reaches the model client      429s the map model answered = 0
  throughput                           map calls a minute >= 0.9 × --rpm
  every job succeeds                   jobs succeeded = --jobs, no chunk lost

Exit status 1 when a target is missed. Flushes the --redis-url database first (default db 9).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.report import print_table, verdict
from toolout.devstack import datasets
from toolout.devstack.stack import Stack
from toolout.devstack.stack_models import CHEAP, STRONG, start_models_stack

REQUEST = "every database pool exhaustion error, with its service and time"
BYTES_PER_CHUNK = 4_000
"""About what one chunk holds at the stack's 3000-token window (the document is resized to hit --chunks)."""


def sized_document(stack: Stack, session: str, chunks: int, seed: int) -> str:
    """A service log of `chunks` chunks (the estimate counts them; a bisection on the size finds it)."""
    low, high = 1_000, chunks * BYTES_PER_CHUNK * 4
    best: tuple[int, str] | None = None
    with stack.client() as client:
        for _ in range(14):
            size = (low + high) // 2
            handle = client.store(session, b"".join(datasets.service_log(size, seed=seed)), tool_name="logs.fetch")
            found = client.estimate(handle["handle"], REQUEST, mode="full-chunked")["chunks"]
            if found == chunks:
                return str(handle["handle"])
            if found > chunks and (best is None or found < best[0]):
                best = (found, str(handle["handle"]))
            low, high = (size, high) if found < chunks else (low, size)
    if best is None:
        raise RuntimeError(f"could not size a document to {chunks} chunks")
    return best[1]


def run(stack: Stack, jobs: int, chunks: int) -> tuple[list[dict], float, int]:
    with stack.client() as client:
        session = client.create_session()
        handles = [sized_document(stack, session, chunks, seed) for seed in range(jobs)]
        stack.reset_model_stats()
        started = time.monotonic()
        ids = [client.submit(handle, REQUEST, mode="full-chunked")["id"] for handle in handles]
        most_waiting = 0
        while True:
            found = [client.job(job_id) for job_id in ids]
            most_waiting = max(most_waiting, sum(job["calls_waiting"] for job in found))
            if all(job["status"] in ("succeeded", "failed", "canceled") for job in found):
                return found, time.monotonic() - started, most_waiting
            time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rpm", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/9")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-provider-limits-"))
    stack = start_models_stack(args.redis_url, root, rpm=args.rpm, workers=args.workers, concurrency=args.concurrency)
    try:
        jobs, wall, most_waiting = run(stack, args.jobs, args.chunks)
        cheap, strong = stack.model_stats(CHEAP), stack.model_stats(STRONG)
    finally:
        stack.stop()
    rate = (cheap["admitted"] - 1) / max(cheap["last_at"] - cheap["first_at"], 1e-9) * 60
    succeeded = sum(1 for job in jobs if job["status"] == "succeeded" and job["chunks_failed"] == 0)
    refused = cheap["rate_limited"] + strong["rate_limited"]
    print(
        f"{args.jobs} jobs x {args.chunks} chunks, {args.workers} workers x {args.concurrency} threads, "
        f"map model at {args.rpm} rpm: {cheap['admitted']} map calls, {strong['admitted']} reduce calls "
        f"in {wall:.1f} s; at most {most_waiting} calls waiting for their turn at once"
    )
    rows = [
        ("measure", "value", "target", "result"),
        ("429s answered by the models", str(refused), "0", verdict(refused == 0)),
        (
            "map calls a minute",
            f"{rate:.1f} ({rate / args.rpm:.2f}x limit)",
            f">= {0.9 * args.rpm:.0f}",
            verdict(rate >= 0.9 * args.rpm),
        ),
        ("jobs succeeded, no chunk lost", f"{succeeded}/{args.jobs}", str(args.jobs), verdict(succeeded == args.jobs)),
    ]
    print_table(rows)
    return 0 if all(row[3] == "PASS" for row in rows[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())
