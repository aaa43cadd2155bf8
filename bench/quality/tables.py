"""The quality bench's tables: one row per scenario, and one row per content kind (what docs/quality.md shows).

A scenario's cell says whether one way of answering got it right and what it cost; a kind's cell adds
them up over that kind's scenarios, so real logs, real CSV, GeoJSON and HTML read beside the
generated forms at a glance.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.quality.scenarios import Scenario


@dataclass(frozen=True)
class Row:
    """One scenario answered one way: `status` is right, wrong, n/a or error."""

    scenario: str
    strategy: str
    status: str
    used: str = "-"
    input_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0
    cost_usd: float | None = None
    note: str = ""
    answer: str = ""
    evidence: int = 0
    """toolout's answers: the evidence items the job carries (quotes, a query's SQL and rows, a view's ranges)."""
    quotes: int = 0
    verified: int = 0
    plain_tokens: int | None = None
    """The same job with evidence off (`TOOLOUT_EVIDENCE=false`): its input tokens and seconds, the baseline."""
    plain_seconds: float | None = None
    plain_status: str | None = None

    @property
    def all_verified(self) -> bool:
        return self.verified == self.quotes


def cell(row: Row) -> str:
    """right/wrong, input tokens, calls, seconds in one cell."""
    if row.status in ("n/a", "error"):
        return row.status
    mark = "✓" if row.status == "right" else "✗"
    return f"{mark} {row.input_tokens:,} tok · {row.calls} · {row.seconds:.1f}s"


def answered(rows: list[Row], strategy: str) -> list[Row]:
    """The rows of `strategy` that produced an answer (right or wrong)."""
    return [r for r in rows if r.strategy == strategy and r.status in ("right", "wrong")]


def totals(rows: list[Row], strategy: str) -> str:
    mine = answered(rows, strategy)
    if not mine:
        return "n/a"
    right = sum(r.status == "right" for r in mine)
    tokens, calls, seconds = (sum(getattr(r, f) for r in mine) for f in ("input_tokens", "calls", "seconds"))
    costs = [r.cost_usd for r in mine if r.cost_usd is not None]
    cost = f" · ${sum(costs):.4f}" if costs else ""
    return f"{right}/{len(mine)} right · {tokens:,} tok · {calls} calls · {seconds:.1f}s{cost}"


def markdown(rows: list[Row], strategies: list[str], chosen: list[Scenario]) -> str:
    """Scenarios down, strategies across: ✓/✗, input tokens, calls, seconds; totals last; then n/a reasons."""
    names = list(dict.fromkeys(r.scenario for r in rows))
    forms = {s.name: f"{s.form}, {s.ask}" for s in chosen}
    lines = ["| scenario | " + " | ".join(strategies) + " |", "|---" * (len(strategies) + 1) + "|"]
    for name in names:
        got = {r.strategy: r for r in rows if r.scenario == name}
        lines.append(f"| {name} ({forms[name]}) | " + " | ".join(cell(got[s]) for s in strategies) + " |")
    lines.append("| **total** | " + " | ".join(totals(rows, s) for s in strategies) + " |")
    notes = {f"{r.strategy}: {r.note}" for r in rows if r.status in ("n/a", "error")}
    return "\n".join(lines + [""] + [f"- {n}" for n in sorted(notes)])


def kind_cell(rows: list[Row], strategy: str) -> str:
    """right of answered, input tokens and seconds over one kind's scenarios."""
    mine = answered(rows, strategy)
    if not mine:
        return "n/a"
    right = sum(r.status == "right" for r in mine)
    tokens, seconds = sum(r.input_tokens for r in mine), sum(r.seconds for r in mine)
    return f"{right}/{len(mine)} · {tokens:,} tok · {seconds:.1f}s"


def kinds_markdown(rows: list[Row], strategies: list[str], chosen: list[Scenario]) -> str:
    """Content kinds down (real and generated), strategies across: right, input tokens, seconds per kind."""
    kinds = list(dict.fromkeys(s.kind for s in chosen))
    lines = ["| content kind | scenarios | " + " | ".join(strategies) + " |", "|---" * (len(strategies) + 2) + "|"]
    for kind in kinds:
        names = {s.name for s in chosen if s.kind == kind}
        mine = [r for r in rows if r.scenario in names]
        cells = " | ".join(kind_cell(mine, s) for s in strategies)
        lines.append(f"| {kind} | {len(names)} | {cells} |")
    return "\n".join(lines)


def routes(rows: list[Row]) -> str:
    """Where auto went, per scenario (the table's `auto` column hides it)."""
    return ", ".join(f"{r.scenario}→{r.used}" for r in rows if r.strategy == "auto")
