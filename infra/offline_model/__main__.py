"""`python -m infra.offline_model [--host H] [--port P]`: serve the offline model (knobs from TOOLOUT_OFFLINE_*)."""

from __future__ import annotations

import argparse

from infra.offline_model.server import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="toolout offline model (deterministic, no LLM)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    serve(args.host, args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
