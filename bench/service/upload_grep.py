"""P3 and P5 of the service bench (`python -m bench.service.end_to_end --only p3,p5`): an upload's speed and
memory against raw tiktoken, and what a needle query through read-grep sends to the model.

Apart from P1/P2 because they price other things than orchestration: bytes through the API, and tokens.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

from bench.report import verdict
from bench.service.harness import proc_status_kb, running_stack
from bench.service.jobs import timed_job, upload
from extraction.documents.stats import PIECE_BYTES, default_threads
from toolout.client import ToolOutClient
from toolout.devstack import datasets

MB = 1_000_000
TARGET_P3_RATIO = 0.8
TARGET_P3_RSS_MB = 64
TARGET_P5_SHARE = 0.05


# --- P3 ----------------------------------------------------------------------------------------------
def p3(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    from bench.micro.stats import generated_blocks, raw_tokenize_seconds, segment_pool

    data = b"".join(generated_blocks(args.upload_mb * MB, segment_pool()))
    threads = default_threads()
    raws, uploads, growths = [], [], []
    with running_stack(args.redis_url, model=None, worker=None) as stack, stack.client() as client:
        session = client.create_session()
        client.store(session, streamed(data[: 2 * MB]))  # warm-up: tokenizer, thread pool, spool dir
        pid = stack.pid("api")
        for _ in range(2):  # alternated, so load from elsewhere on the machine hits both sides alike
            raws.append(raw_tokenize_seconds(data, threads, PIECE_BYTES))
            growth_mb, seconds, meta = upload_with_rss(client, session, data, pid)
            uploads.append(seconds)
            growths.append(growth_mb)
    return p3_rows(len(data), min(raws), min(uploads), max(growths), meta, threads)


def streamed(data: bytes, block: int = 1 << 20) -> Iterator[bytes]:
    """The upload body as a generator of 1 MiB blocks (chunked transfer, as an agent streams it)."""
    view = memoryview(data)
    for offset in range(0, len(data), block):
        yield bytes(view[offset : offset + block])


def upload_with_rss(client: ToolOutClient, session: str, data: bytes, pid: int) -> tuple[float, float, dict]:
    """(peak RSS growth of the API in MB, upload seconds, stored meta); the peak is reset first."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    before = proc_status_kb(pid, "VmRSS")
    started = time.perf_counter()
    meta = client.store(session, streamed(data), tool_name="bench.mixed", content_type="text/plain")
    seconds = time.perf_counter() - started
    return (proc_status_kb(pid, "VmHWM") - before) / 1024, seconds, meta


def p3_rows(
    size: int, raw: float, seconds: float, growth_mb: float, meta: dict, threads: int
) -> list[tuple[str, str, str, str]]:
    mb = size / MB
    ratio = raw / seconds
    return [
        ("measure", "value", "target", "result"),
        (
            f"raw encode_ordinary_batch, {threads} threads, this process (best of 2)",
            f"{mb / raw:.1f} MB/s ({raw:.2f} s)",
            "baseline",
            "",
        ),
        (f"upload {mb:.0f} MB through the API (best of 2)", f"{mb / seconds:.1f} MB/s ({seconds:.2f} s)", "", ""),
        ("    ratio upload / raw", f"{ratio:.2f}x", f">= {TARGET_P3_RATIO:.1f}x", verdict(ratio >= TARGET_P3_RATIO)),
        (
            "API peak RSS growth during an upload (worst of 2)",
            f"{growth_mb:.1f} MB",
            f"<= {TARGET_P3_RSS_MB} MB",
            verdict(growth_mb <= TARGET_P3_RSS_MB),
        ),
        ("    stored", f"{meta['tokens']:,} tokens, {meta['lines']:,} lines", "", ""),
    ]


# --- P5 ----------------------------------------------------------------------------------------------
def p5(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    incident = datasets.POOL_INCIDENT
    with (
        running_stack(args.redis_url, model={"TOOLOUT_OFFLINE_LATENCY_MS": "0"}, worker={"concurrency": 8}) as stack,
        stack.client() as client,
    ):
        meta = upload(client, datasets.service_log(args.log_mb * MB))
        seconds, job = timed_job(client, meta["handle"], incident.request, "read-grep", interval=0.05)
    return p5_rows(meta, job, seconds, incident.needle)


def p5_rows(meta: dict, job: dict, seconds: float, needle: str) -> list[tuple[str, str, str, str]]:
    usage = job["usage"]
    share = usage["input_tokens"] / meta["tokens"]
    found = needle in (job.get("result") or "") and job["mode_used"] == "read-grep"
    return [
        ("measure", "value", "target", "result"),
        (f"document: {meta['bytes'] / MB:.0f} MB service log", f"{meta['tokens']:,} tokens", "baseline", ""),
        (
            "read-grep input tokens",
            f"{usage['input_tokens']:,} in / {usage['output_tokens']:,} out, {usage['calls']} calls",
            "",
            "",
        ),
        ("    share of the document", f"{share:.3%}", f"<= {TARGET_P5_SHARE:.0%}", verdict(share <= TARGET_P5_SHARE)),
        ("turns / tool calls", f"{job['agent_turns']} / {job['agent_tool_calls']}", "", ""),
        (
            "planted fact found",
            f"{'yes' if found else 'NO'} ({job['status']}, {job['mode_used']})",
            "found",
            verdict(found),
        ),
        ("job wall time", f"{seconds:.2f} s", "", ""),
    ]
