"""What a whole-index read costs as jobs spread over slots: drawn ids (256 index slots) against plain UUID4s.

    python -m bench.micro.index_walk [--redis-url redis://127.0.0.1:6379/14] [--jobs 20000]

The watchdog's overdue scan and a `/metrics` usage sum walk every per-slot copy of their index
(`infra/redis/slot_index.py`).
The baseline is what ids landing anywhere would write, plain `uuid.uuid4()`; toolout's `draw_id` keeps them on 256
slots. Each side writes `--jobs` active jobs and their usage into a database it empties first (never point it at a
database with data), then times the two reads (median of 5) and prints copies, milliseconds and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable

import redis

from infra.redis.slots import draw_id
from infra.stores.jobs.redis_indexes import JobIndexes

TARGET_RATIO = 0.1
"""A tenth of the baseline's time: 256 copies against thousands (the gap widens with the number of jobs)."""


def walk_ms(client: redis.Redis, make_id: Callable[[], str], jobs: int) -> tuple[int, float]:
    """Copies written and the median time of one overdue scan plus one usage sum over them."""
    client.flushdb()
    indexes = JobIndexes(client)
    pipe = client.pipeline(transaction=False)
    for _ in range(jobs):
        job_id = make_id()
        pipe.zadd(indexes.active.key_for(job_id), {job_id: time.time() + 600})
        pipe.hincrby(indexes.usage.key_for(job_id), "dev\x1fmodel\x1fcalls", 1)
    pipe.execute()
    times = []
    for _ in range(5):
        started = time.perf_counter()
        indexes.overdue(time.time(), 100)
        indexes.summed(indexes.usage)
        times.append(time.perf_counter() - started)
    copies = len(list(indexes.active.copies()))
    client.flushdb()
    return copies, statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--jobs", type=int, default=20_000)
    args = parser.parse_args()
    client = redis.Redis.from_url(args.redis_url, decode_responses=True)
    base_copies, base_ms = walk_ms(client, lambda: str(uuid.uuid4()), args.jobs)
    ours_copies, ours_ms = walk_ms(client, draw_id, args.jobs)
    print(f"{args.jobs} active jobs: overdue scan + usage sum over every per-slot copy")
    print(f"  baseline (uuid4 ids): {base_copies:>6} copies  {base_ms:8.1f} ms")
    print(f"  toolout (draw_id):    {ours_copies:>6} copies  {ours_ms:8.1f} ms   ratio {ours_ms / base_ms:.3f}")
    verdict = "PASS" if ours_ms <= TARGET_RATIO * base_ms else "MISS"
    print(f"  target: ratio <= {TARGET_RATIO}: {verdict}   (model calls: 0, tokens: 0: Redis only)")
    raise SystemExit(0 if verdict == "PASS" else 1)


if __name__ == "__main__":
    main()
