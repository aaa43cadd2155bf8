"""Every fuzz target for a bounded time, one process each: `python -m tests.fuzz.campaign [--seconds S] [NAME…]`.

`make fuzz` runs it (FUZZ_SECONDS per target). Each run starts from the seeds kept in the repo
(tests/fuzz/corpus/NAME) plus what earlier runs on this machine found (var/fuzz/corpus/NAME, where new
inputs go), and a crash or a hang is written to var/fuzz/crashes as `NAME-crash-…` / `NAME-timeout-…`:
a file to replay with `python -m tests.fuzz.run NAME FILE`. The table gives executions per second and the
coverage reached; the exit status is 1 when any target failed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "tests" / "fuzz" / "corpus"
WORK = ROOT / "var" / "fuzz"
_STATUS = re.compile(r"#(?P<runs>\d+)\s+\w+\s+cov: (?P<cov>\d+) ft: \d+ corp: (?P<corpus>\d+)/.*?exec/s: (?P<rate>\d+)")


@dataclass
class Outcome:
    name: str
    ok: bool
    runs: int
    seconds: float
    coverage: int
    corpus: int

    def row(self) -> str:
        rate = self.runs / self.seconds if self.seconds else 0.0
        verdict = "ok" if self.ok else "FAILED"
        return f"{self.name:<14} {verdict:<7} {self.runs:>10} {rate:>10.0f} {self.coverage:>6} {self.corpus:>7}"


def libfuzzer_flags(name: str, seconds: int, timeout: int) -> list[str]:
    """A bounded run: total time, a time bound per input, memory, and where new inputs and findings go."""
    found, crashes = WORK / "corpus" / name, WORK / "crashes"
    found.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    return [
        f"-max_total_time={seconds}",
        f"-timeout={timeout}",
        "-rss_limit_mb=2048",
        "-max_len=8192",
        f"-artifact_prefix={crashes}/{name}-",
        str(found),
        str(SEEDS / name),
    ]


def fuzz(name: str, seconds: int, timeout: int) -> Outcome:
    command = [sys.executable, "-m", "tests.fuzz.run", name, *libfuzzer_flags(name, seconds, timeout)]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, errors="replace", check=False)
    elapsed = time.monotonic() - started
    log = done.stderr + done.stdout
    statuses = list(_STATUS.finditer(log))
    last = statuses[-1] if statuses else None
    if done.returncode != 0:
        print(f"--- {name}: exit {done.returncode}\n{log[-6000:]}", file=sys.stderr)
    return Outcome(
        name=name,
        ok=done.returncode == 0,
        runs=int(last["runs"]) if last else 0,
        seconds=elapsed,
        coverage=int(last["cov"]) if last else 0,
        corpus=int(last["corpus"]) if last else 0,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    parser.add_argument("--timeout", type=int, default=10, help="seconds one input may take before it is a hang")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"targets (default: all): {', '.join(TARGETS)}")
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}")
    print(f"{'target':<14} {'result':<7} {'runs':>10} {'exec/s':>10} {'cov':>6} {'corpus':>7}")
    outcomes = []
    for name in args.names or list(TARGETS):
        outcomes.append(fuzz(name, args.seconds, args.timeout))
        print(outcomes[-1].row(), flush=True)
    return 0 if all(outcome.ok for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
