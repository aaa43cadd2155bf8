"""Quality and cost of every strategy, and of two peers' baselines, on generated and real outputs with checked answers.

    python -m bench.quality.run [--quick] [--set all|generated|corpus] [--model M --api-base URL --api-key K]
                                [--markdown FILE] [--json FILE]

For each scenario (bench/quality/scenarios.py: lookups, counts, sums, a top-N, an absent fact over
a JSON array, a nested JSON object, NDJSON, CSV and a service log, all generated; bench/quality/corpus.py:
real loghub logs, CSV tables with NA, a GeoJSON and documentation pages, read from the corpus
beside the checkout) and each way of answering —
toolout's `auto`, `query`, `full-chunked`, `read-grep` and `truncate`, run through the service's
own job pipeline in this process (`toolout.local`), and the two baselines of
bench/quality/baselines.py (Codex's head+tail cut at 10K tokens; a 2 KB preview plus Read/Grep as
Claude Code and deepagents do) — it prints whether the answer is right, the input tokens, model
calls and seconds, then totals per strategy and a table per content kind. `--quick` runs the
generated outputs at 120 KB and the corpus's quick subset: what CI runs.

Without `--model` it starts the offline model (offline_model): a deterministic ranking
stand-in, not an LLM, so its table says what each strategy lets a simple reader find, not what a
real model would answer. A strategy this build does not have (e.g. `query` before it lands) is
shown as n/a with the reason.

Exit status 1 when the query strategy exists and gets an `exact` scenario wrong (the answers it is
built to give exactly: lookups and counts on structured data).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.quality.baselines import Outcome, run_head_tail, run_preview_agent
from bench.quality.corpus import corpus_scenarios
from bench.quality.scenarios import Case, Scenario, scenarios
from bench.quality.tables import Row, kinds_markdown, markdown, routes
from extraction.evidence.model import QUOTELESS
from toolout.local import LocalToolOut

STRATEGIES = ["auto", "query", "full-chunked", "read-grep", "truncate"]
BASELINES: dict[str, Callable[[LocalToolOut, str, bytes, str], Outcome]] = {
    "head+tail-10K": run_head_tail,
    "preview-2KB+RG": run_preview_agent,
}
ALL = [*STRATEGIES, *BASELINES]
FULL_BYTES, QUICK_BYTES = 2_000_000, 120_000
OFFLINE = "openai/toolout-offline"
Plain = tuple[LocalToolOut, str] | None
"""The deployment with evidence off and the same output's handle there."""


def query_missing() -> str | None:
    """Why this build cannot run `query`, or None when it can (the mode exists and DuckDB is installed)."""
    from extraction.strategies.routing import Mode

    if "query" not in {mode.value for mode in Mode}:
        return "this build has no query mode (extraction.strategies.routing.Mode)"
    if importlib.util.find_spec("duckdb") is None:
        return "duckdb is not installed (the server extra)"
    return None


def run_strategy(local: LocalToolOut, handle: str, case: Case, scenario: Scenario, strategy: str) -> Outcome:
    """One answer: a toolout job in the given mode, or a baseline."""
    if strategy in BASELINES:
        return BASELINES[strategy](local, handle, case.content, scenario.request)
    started = time.perf_counter()
    result = local.extract(handle, scenario.request, strategy)
    job = result.job
    used = job.mode_used or "-"
    if job.fallback_reason:
        used += " (fell back)"
    quotes = [item for item in job.evidence if item.source not in QUOTELESS]
    seconds = time.perf_counter() - started
    verified = sum(item.verified for item in quotes)
    return Outcome(result.text, job.usage, seconds, used, len(quotes), verified, len(job.evidence))


def answer_one(
    local: LocalToolOut, handle: str, case: Case, scenario: Scenario, strategy: str, plain: Plain = None
) -> Row:
    """One answer; with `plain` (a deployment with evidence off and the output stored there too), the same job
    again without evidence, whose tokens and seconds are the baseline the evidence's overhead is measured on."""
    try:
        outcome = run_strategy(local, handle, case, scenario, strategy)
        baseline = (
            run_strategy(plain[0], plain[1], case, scenario, strategy) if plain and strategy in STRATEGIES else None
        )
    except Exception as exc:  # noqa: BLE001 - one failing run is a row of the table, not the end of the bench
        return Row(scenario.name, strategy, "error", note=f"{type(exc).__name__}: {exc}"[:200])
    usage = outcome.usage
    return Row(
        scenario.name,
        strategy,
        "right" if case.check(outcome.answer) else "wrong",
        outcome.used,
        usage.input_tokens,
        usage.calls,
        outcome.seconds,
        usage.cost_usd,
        answer=outcome.answer,
        evidence=outcome.items,
        quotes=outcome.quotes,
        verified=outcome.verified,
        plain_tokens=baseline.usage.input_tokens if baseline else None,
        plain_seconds=baseline.seconds if baseline else None,
        plain_status=("right" if case.check(baseline.answer) else "wrong") if baseline else None,
    )


def chosen_scenarios(which: str, *, quick: bool, only: Iterable[str] | None = None) -> list[Scenario]:
    """The generated scenarios, the corpus's (its quick subset when `quick`; none if absent outside CI), or both."""
    picked = scenarios() if which in ("all", "generated") else []
    picked += corpus_scenarios(quick=quick) if which in ("all", "corpus") else []
    names = set(only) if only is not None else None
    return [s for s in picked if names is None or s.name in names]


def run_suite(
    local: LocalToolOut,
    size: int,
    chosen: list[Scenario],
    *,
    strategies: Iterable[str] = ALL,
    progress: Callable[[Row], None] = lambda row: None,
    plain: LocalToolOut | None = None,
) -> list[Row]:
    """Every chosen scenario, generated at `size` bytes (or read from the corpus), stored once, answered every way
    (and, with `plain`, each toolout job again on that deployment with evidence off)."""
    missing = query_missing()
    rows = []
    for scenario in chosen:
        case = scenario.build(size)
        handle = store(local, case, scenario)
        twin = (plain, store(plain, case, scenario)) if plain else None
        for strategy in strategies:
            row = (
                Row(scenario.name, strategy, "n/a", note=missing)
                if strategy == "query" and missing
                else answer_one(local, handle, case, scenario, strategy, twin)
            )
            progress(row)
            rows.append(row)
    return rows


def store(local: LocalToolOut, case: Case, scenario: Scenario) -> str:
    return local.store(case.content, tool_name=scenario.tool_name, content_type=scenario.content_type).handle


def warm_up(local: LocalToolOut) -> None:
    """One throw-away job first: litellm's import and first connection are the process's, not a strategy's."""
    handle = local.store("warm-up line\n" * 200, tool_name="warm-up").handle
    local.extract(handle, "warm-up", "full-chunked")


def exact_misses(rows: list[Row], chosen: list[Scenario]) -> list[Row]:
    """The `exact` scenarios the query strategy got wrong (none when query is n/a)."""
    exact = {s.name for s in chosen if s.exact}
    return [r for r in rows if r.strategy == "query" and r.scenario in exact and r.status not in ("right", "n/a")]


# ---------------------------------------------------------------- command line


def print_row(row: Row) -> None:
    note = f"  {row.note}" if row.note else ""
    print(
        f"{row.scenario:<15} {row.strategy:<15} {row.status:<6} {row.used:<24} {row.input_tokens:>11,} "
        f"{row.calls:>5} {row.seconds:>7.1f} {evidence_cell(row):>34}{note}",
        flush=True,
    )


def evidence_cell(row: Row) -> str:
    """`3/3 quotes ✓ +812 tok +0.04s`: the quotes that verified, and what evidence added against the plain job."""
    if row.strategy not in STRATEGIES or row.status in ("n/a", "error"):
        return "-"
    quotes = f"{row.verified}/{row.quotes} quotes {'✓' if row.all_verified else '✗'}"
    if row.plain_tokens is None or row.plain_seconds is None:
        return quotes
    return f"{quotes} {row.input_tokens - row.plain_tokens:+,} tok {row.seconds - row.plain_seconds:+.2f}s"


def evidence_summary(rows: list[Row]) -> str:
    """The share of toolout's answers whose every quote verifies, and what evidence cost against the plain jobs."""
    mine = [r for r in rows if r.strategy in STRATEGIES and r.status in ("right", "wrong")]
    if not mine:
        return "evidence: no toolout answers"
    whole = sum(r.all_verified for r in mine)
    text = (
        f"evidence: {whole}/{len(mine)} answers ({whole / len(mine):.1%}) have every quote verified; "
        f"{sum(r.verified for r in mine)}/{sum(r.quotes for r in mine)} quotes verified over "
        f"{sum(bool(r.quotes) for r in mine)} answers that quote; "
        f"{sum(bool(r.evidence) for r in mine)}/{len(mine)} answers carry evidence"
    )
    paired = [r for r in mine if r.plain_tokens is not None and r.plain_seconds is not None]
    return f"{text}\n{overhead(paired)}" if paired else text


def overhead(paired: list[Row]) -> str:
    """What evidence added over the same jobs run without it, and which answers it turned right or wrong."""
    plain_tokens = sum(r.plain_tokens or 0 for r in paired)
    plain_seconds = sum(r.plain_seconds or 0.0 for r in paired)
    tokens = sum(r.input_tokens for r in paired) - plain_tokens
    seconds = sum(r.seconds for r in paired) - plain_seconds
    changed = [f"{r.scenario}/{r.strategy} {r.plain_status}→{r.status}" for r in paired if r.plain_status != r.status]
    return (
        f"evidence overhead over {len(paired)} jobs: {tokens:+,} input tokens ({tokens / max(plain_tokens, 1):+.1%}), "
        f"{seconds:+.1f} s ({seconds / max(plain_seconds, 1e-9):+.1%}); answers right/wrong differently without "
        f"evidence: {', '.join(changed) or 'none'}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"outputs of {QUICK_BYTES // 1000} KB: the CI subset")
    parser.add_argument("--kb", type=int, help=f"size of each generated output (default {FULL_BYTES // 1000} KB)")
    parser.add_argument("--model", help="any litellm model string (default: start the offline model)")
    parser.add_argument("--api-base", help="the model's endpoint, as litellm takes it")
    parser.add_argument("--api-key", help="the model's key (or litellm's usual environment variables)")
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument(
        "--set", default="all", choices=["all", "generated", "corpus"], help="generated outputs, the corpus's, or both"
    )
    parser.add_argument("--strategies", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    parser.add_argument(
        "--no-plain", action="store_true", help="skip the baseline jobs with evidence off (no overhead measured)"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown to this file")
    parser.add_argument("--json", type=Path, help="also write every row, the scenarios and the table to this file")
    return parser.parse_args(argv)


def report(rows: list[Row], strategies: list[str], chosen: list[Scenario]) -> dict[str, Any]:
    """The run as data, for a caller in another process (the CI test runs this bench as a subprocess)."""
    return {
        "strategies": strategies,
        "scenarios": [{"name": s.name, "exact": s.exact, "source": s.source, "kind": s.kind} for s in chosen],
        "rows": [asdict(row) for row in rows],
        "markdown": markdown(rows, strategies, chosen),
        "kinds": kinds_markdown(rows, strategies, chosen),
        "evidence": evidence_summary(rows),
    }


def run_with_model(args: argparse.Namespace, model: str, api_base: str | None, api_key: str | None) -> int:
    size = args.kb * 1000 if args.kb else QUICK_BYTES if args.quick else FULL_BYTES
    strategies = [s for s in args.strategies.split(",") if s]
    chosen = chosen_scenarios(args.set, quick=args.quick, only=args.only.split(",") if args.only else None)
    corpus = sum(s.source == "corpus" for s in chosen)
    print(f"quality: {model} at {api_base or 'its default endpoint'}; outputs of {size / 1e6:.2f} MB, {corpus} corpus")
    print(
        f"{'scenario':<15} {'strategy':<15} {'status':<6} {'used':<24} {'input tok':>11} {'calls':>5} {'seconds':>7} "
        f"{'evidence (vs. the job without)':>34}"
    )
    with (
        LocalToolOut(model, api_base=api_base, api_key=api_key) as local,
        LocalToolOut(model, api_base=api_base, api_key=api_key, evidence=False) as plain,
    ):
        warm_up(local)
        warm_up(plain)
        twin = None if args.no_plain else plain
        rows = run_suite(local, size, chosen, strategies=strategies, progress=print_row, plain=twin)
    done = report(rows, strategies, chosen)
    text = (
        f"{done['markdown']}\n\nauto routed: {routes(rows)}\n\n{done['evidence']}\n\n"
        f"Per content kind:\n\n{done['kinds']}\n"
    )
    print("\n" + text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(done, indent=1))
    misses = exact_misses(rows, chosen)
    for row in misses:
        print(f"MISS query got {row.scenario} {row.status}: {row.note or row.answer[:300]!r}")
    return 1 if misses else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.model:
        return run_with_model(args, args.model, args.api_base, args.api_key)
    from toolout.devstack import processes

    with tempfile.TemporaryDirectory() as logs:
        port = processes.free_port()
        with processes.running(processes.offline_model(port, {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}, Path(logs))):
            return run_with_model(args, OFFLINE, f"http://127.0.0.1:{port}/v1", "offline")


if __name__ == "__main__":
    sys.exit(main())
