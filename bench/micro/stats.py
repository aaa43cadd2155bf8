"""Benchmark the streaming stats pass and the chunk planner against raw tiktoken, in one run.

    python -m bench.micro.stats [--mb 100] [--stream-mb 1024] [--threads N]

Measured on the same deterministic bytes with the same thread count:
  (a) raw `encode_ordinary_batch` throughput on the very pieces StatsCounter tokenizes,
  (b) StatsCounter throughput (sha256, lines, decoding, index included) and its ratio to (a),
  (c) chunk planning time on top of (b), for a realistic chunk budget,
  (d) peak RSS growth while streaming `--stream-mb` of generated data through StatsCounter,
      in a fresh child process so the in-memory corpus above does not hide it.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench import REPO_ROOT
from bench.report import print_table, verdict
from extraction.documents.chunking import chunk_budget, plan_chunks
from extraction.documents.stats import (
    BATCH_BYTES,
    PIECE_BYTES,
    StatsCounter,
    default_threads,
    group_into_batches,
    piece_ends,
)
from extraction.documents.tokens import DEFAULT_ENCODING, get_encoding

MB = 1_000_000
BLOCK_BYTES = 8 << 20
SEGMENT_BYTES = 256 << 10
SEGMENTS = 48
TARGET_RATIO = 0.80
TARGET_PLAN_EXTRA = 0.10
TARGET_STREAM_MB = 64

# a word list reads best packed, not one word per line
# fmt: off
WORDS = [
    "the", "request", "failed", "because", "upstream", "timeout", "retry", "status", "error", "warning", "info",
    "user", "order", "payment", "invoice", "shipped", "pending", "cancelled", "région", "données", "überprüfung",
    "東京", "注文", "статус", "✓", "→", "latency", "p99",
]
# fmt: on


# --- corpus ------------------------------------------------------------------------------------
def log_line(rnd: random.Random, n: int) -> str:
    level = rnd.choice(["INFO", "WARN", "ERROR", "DEBUG"])
    words = " ".join(rnd.choices(WORDS, k=rnd.randint(4, 18)))
    return f"2026-01-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{n * 7 % 60:02d}Z {level} {words}"


def json_record(rnd: random.Random, n: int) -> dict:
    return {
        "id": n,
        "user": f"u{rnd.randint(1, 99999)}",
        "amount": round(rnd.uniform(0, 5000), 2),
        "status": rnd.choice(WORDS),
        "tags": rnd.sample(WORDS, 3),
        "note": " ".join(rnd.choices(WORDS, k=8)),
    }


def segment(rnd: random.Random) -> bytes:
    """About 256 KiB of one flavour: log lines, prose, pretty JSON, JSON lines or one minified array."""
    kind, parts, size, n = rnd.randrange(5), [], 0, rnd.randint(0, 10**6)
    while size < SEGMENT_BYTES:
        n += 1
        if kind == 0:
            part = log_line(rnd, n) + "\n"
        elif kind == 1:
            part = " ".join(rnd.choices(WORDS, k=rnd.randint(40, 120))).capitalize() + ".\n\n"
        elif kind == 2:
            part = json.dumps(json_record(rnd, n), indent=2, ensure_ascii=False) + ",\n"
        elif kind == 3:
            part = json.dumps(json_record(rnd, n), ensure_ascii=False) + "\n"
        else:
            part = json.dumps([json_record(rnd, n + i) for i in range(40)], ensure_ascii=False, separators=(",", ":"))
        parts.append(part)
        size += len(part.encode())
    return "".join(parts).encode()


def segment_pool(seed: int = 2) -> list[bytes]:
    rnd = random.Random(seed)
    return [segment(rnd) for _ in range(SEGMENTS)]


def generated_blocks(total_bytes: int, pool: list[bytes], seed: int = 7) -> Iterator[bytes]:
    """Deterministic blocks of about BLOCK_BYTES, made on the fly from the segment pool."""
    rnd, produced = random.Random(seed), 0
    per_block = max(1, BLOCK_BYTES // SEGMENT_BYTES)
    while produced < total_bytes:
        block = b"".join(rnd.choices(pool, k=per_block))
        if len(block) > total_bytes - produced:
            block = block[: total_bytes - produced]
        produced += len(block)
        yield block


# --- measurements ------------------------------------------------------------------------------
def raw_tokenize_seconds(data: bytes, threads: int, piece_bytes: int) -> float:
    """(a): tiktoken alone on the same pieces, pre-cut and pre-decoded, in the same batches."""
    ends = piece_ends(data, piece_bytes, final=True)
    starts = [0, *ends[:-1]]
    texts = [data[a:b].decode("utf-8", "replace") for a, b in zip(starts, ends, strict=True)]
    batches: list[list[str]] = []
    first = 0
    for grouped in group_into_batches(ends, BATCH_BYTES):
        batches.append(texts[first : first + len(grouped)])
        first += len(grouped)
    encoding = get_encoding(DEFAULT_ENCODING)
    started = time.perf_counter()
    for batch in batches:
        sum(len(tokens) for tokens in encoding.encode_ordinary_batch(batch, num_threads=threads))
    return time.perf_counter() - started


def stats_seconds(data: bytes, threads: int, piece_bytes: int):
    """(b): the full StatsCounter pass, fed in BLOCK_BYTES blocks as a blob stream would."""
    started = time.perf_counter()
    counter = StatsCounter(DEFAULT_ENCODING, threads=threads, piece_bytes=piece_bytes)
    for offset in range(0, len(data), BLOCK_BYTES):
        counter.feed(data[offset : offset + BLOCK_BYTES])
    measured = counter.finish()
    return time.perf_counter() - started, measured


def planning_seconds(data: bytes, measured, budget: int) -> tuple[float, int]:
    """(c): plan_chunks with ranged reads served from memory."""
    started = time.perf_counter()
    chunks = plan_chunks(measured.index, lambda a, b: data[a:b], size=len(data), budget_tokens=budget)
    return time.perf_counter() - started, len(chunks)


def proc_status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Linux lets a process reset its peak RSS (VmHWM) by writing 5 to clear_refs."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_growth_mb(run) -> float:
    """Peak RSS during `run()` minus RSS before it (falls back to ru_maxrss growth off Linux)."""
    if reset_peak_rss() and (before := proc_status_kb("VmRSS")) is not None:
        run()
        return ((proc_status_kb("VmHWM") or before) - before) / 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def stream_child(stream_mb: int, threads: int, piece_bytes: int) -> None:
    """(d), in a fresh process: peak RSS growth while streaming generated blocks."""
    pool = segment_pool()
    get_encoding(DEFAULT_ENCODING).encode_ordinary_batch(["warm up the tokenizer threads"] * 4, num_threads=threads)
    result: dict[str, float] = {}

    def run() -> None:
        started = time.perf_counter()
        counter = StatsCounter(DEFAULT_ENCODING, threads=threads, piece_bytes=piece_bytes)
        for block in generated_blocks(stream_mb * MB, pool):
            counter.feed(block)
        measured = counter.finish()
        result.update(
            seconds=time.perf_counter() - started,
            tokens=measured.stats.tokens,
            index_json_bytes=len(measured.index.model_dump_json()),
        )

    result["delta_mb"] = peak_rss_growth_mb(run)
    print(json.dumps(result))


def run_stream_child(stream_mb: int, threads: int, piece_bytes: int) -> dict:
    command = [
        sys.executable,
        "-m",
        "bench.micro.stats",
        "--stream-child",
        "--stream-mb",
        str(stream_mb),
        "--threads",
        str(threads),
        "--piece-bytes",
        str(piece_bytes),
    ]
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPO_ROOT).stdout
    return json.loads(output.strip().splitlines()[-1])


# --- report ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100, help="in-memory corpus size for (a)-(c), MB")
    parser.add_argument("--stream-mb", type=int, default=1000, help="bytes streamed for the memory test (d), MB")
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--piece-bytes", type=int, default=PIECE_BYTES)
    parser.add_argument("--repeat", type=int, default=2, help="best of N timings for (a) and (b)")
    parser.add_argument("--context", type=int, default=128_000, help="model context tokens for the chunk budget")
    parser.add_argument("--output", type=int, default=16_384, help="reserved output tokens")
    parser.add_argument("--prompt", type=int, default=2_000, help="map prompt tokens")
    parser.add_argument("--stream-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stream_child:
        stream_child(args.stream_mb, args.threads, args.piece_bytes)
        return

    data = b"".join(generated_blocks(args.mb * MB, segment_pool()))
    size_mb = len(data) / MB
    raw = min(raw_tokenize_seconds(data, args.threads, args.piece_bytes) for _ in range(args.repeat))
    timed = [stats_seconds(data, args.threads, args.piece_bytes) for _ in range(args.repeat)]
    stats_time, measured = min(timed, key=lambda pair: pair[0])
    budget = chunk_budget(args.context, args.output, args.prompt)
    plan_time, chunk_count = planning_seconds(data, measured, budget)
    small_budget = chunk_budget(32_000, 4_096, args.prompt)
    small_plan_time, small_chunks = planning_seconds(data, measured, small_budget)
    stream = run_stream_child(args.stream_mb, args.threads, args.piece_bytes)

    ratio, extra, small_extra = raw / stats_time, plan_time / stats_time, small_plan_time / stats_time
    print(
        f"toolout stats bench: {size_mb:.0f} MB mixed text/JSON, {measured.stats.tokens:,} tokens, "
        f"{args.threads} threads, {DEFAULT_ENCODING}, pieces ≤ {args.piece_bytes // 1024} KiB, best of {args.repeat}\n"
    )
    print_table(
        [
            ("measure", "value", "target", "result"),
            ("(a) raw encode_ordinary_batch", f"{size_mb / raw:.1f} MB/s ({raw:.2f} s)", "baseline", ""),
            ("(b) StatsCounter", f"{size_mb / stats_time:.1f} MB/s ({stats_time:.2f} s)", "", ""),
            ("    ratio (b)/(a)", f"{ratio:.2f}x", f">= {TARGET_RATIO:.2f}x", verdict(ratio >= TARGET_RATIO)),
            (
                f"(c) plan_chunks, budget {budget:,}",
                f"{plan_time:.3f} s, {chunk_count} chunks = +{extra:.1%}",
                f"<= {TARGET_PLAN_EXTRA:.0%}",
                verdict(extra <= TARGET_PLAN_EXTRA),
            ),
            (
                f"    info: budget {small_budget:,}",
                f"{small_plan_time:.3f} s, {small_chunks} chunks = +{small_extra:.1%}",
                "",
                "",
            ),
            (
                f"(d) stream {args.stream_mb} MB, peak RSS growth",
                f"{stream['delta_mb']:.1f} MB",
                f"<= {TARGET_STREAM_MB} MB",
                verdict(stream["delta_mb"] <= TARGET_STREAM_MB),
            ),
            ("    stream throughput", f"{args.stream_mb / stream['seconds']:.1f} MB/s", "", ""),
            ("    token index JSON", f"{stream['index_json_bytes'] / 1024:.0f} KiB for {args.stream_mb} MB", "", ""),
        ]
    )


if __name__ == "__main__":
    main()
