"""`python -m offline_model [--host H] [--port P] [--rpm N] [--tpm N] [--tail-fraction F --tail-multiplier M]`.

Knobs come from TOOLOUT_OFFLINE_*; the flags override TOOLOUT_OFFLINE_RPM/_TPM/_TAIL_FRACTION/_TAIL_MULTIPLIER
(`--tail-fraction 0.05 --tail-multiplier 10`: one call in twenty takes ten times the latency)."""

from __future__ import annotations

import argparse

from offline_model.config import OfflineModelConfig
from offline_model.server import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="toolout offline model (deterministic, no LLM)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--rpm", type=int, default=None, help="requests per minute; past them: 429 (0 = none)")
    parser.add_argument("--tpm", type=int, default=None, help="tokens per minute (prompt + max_tokens; 0 = none)")
    parser.add_argument("--tail-fraction", type=float, default=None, help="share of calls that are slow (0-1)")
    parser.add_argument("--tail-multiplier", type=float, default=None, help="a slow call's latency, in base latencies")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    given = {"rpm": args.rpm, "tpm": args.tpm, "tail_fraction": args.tail_fraction}
    given["tail_multiplier"] = args.tail_multiplier
    values = {name: str(value) for name, value in given.items() if value is not None}
    serve(args.host, args.port, OfflineModelConfig.from_env().with_values(values), log_level=args.log_level)


if __name__ == "__main__":
    main()
