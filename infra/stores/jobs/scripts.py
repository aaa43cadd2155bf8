"""The job store's Lua scripts: names generated from the job model, the shared prelude, then each script.

Every field, status and usage name a script uses comes from `JobRecord`, `Usage` and `JobStatus` through
the header built here (`F.status`, `STATUS.running`, `ENDED[status]`, `USAGE_COUNTS`), so renaming a
model field renames it in every script at once; `tests/infra/stores/test_lua_names.py` checks that no
script spells such a name out itself. The helpers every script shares (is the job still live, count
usage on the job and in the totals) are in `lua/_prelude.lua`.
"""

from __future__ import annotations

from functools import cache

from extraction.protocols import Usage
from infra.redis.hash_codec import HashCodec, scalar_text
from infra.redis.lua import lua_source, lua_table
from infra.stores.jobs.model import TERMINAL, JobRecord, JobStatus

CODEC = HashCodec(JobRecord, flatten=("usage",))
TOTALS_SEPARATOR = "\x1f"
"""Between tenant, model and counter name in a usage-totals field."""
USAGE_COUNTS = [name for name, info in Usage.model_fields.items() if info.annotation is int]
"""The integer counters of `Usage`, in the order the scripts take them (the cost follows)."""
USAGE_COST = "cost_usd"

SCRIPTS = (
    "admit",
    "create",
    "finish",
    "record_part",
    "record_failure",
    "update_live",
    "reserve_call",
    "retry_overdue",
    "add_usage",
    "settle_level",
    "add_progress",
    "add_owned",
    "count_model_call",
    "note_waiting",
    "count_start",
    "add_trace",
    "reserve_hedge",
    "count_hedges",
)


@cache
def names_header() -> str:
    """The Lua tables of names every job script starts with."""
    fields = CODEC.field_names()
    return "".join(
        [
            "-- generated from JobRecord, Usage and JobStatus (infra/stores/jobs/scripts.py)\n",
            lua_table("F", {name: name for name in fields}),
            lua_table("STATUS", {status.name.lower(): status.value for status in JobStatus}),
            lua_table("ENDED", {status.value: True for status in sorted(TERMINAL)}, strict=False),
            lua_table("USAGE_COUNTS", USAGE_COUNTS),
            lua_table("USAGE_FIELD", {name: f"usage_{name}" for name in [*USAGE_COUNTS, USAGE_COST]}),
            lua_table("TOTALS", {"separator": TOTALS_SEPARATOR, "cost": USAGE_COST}),
        ]
    )


def script_source(name: str) -> str:
    """What Redis runs for the job script `name`: the names, the prelude, the script."""
    return lua_source("infra.stores.jobs", name, names_header())


def usage_args(usage: Usage) -> list[str | int]:
    """The counters in `USAGE_COUNTS` order, then the cost ('' when unknown): what `count_usage` takes."""
    cost = "" if usage.cost_usd is None else scalar_text(usage.cost_usd)
    return [*(getattr(usage, name) for name in USAGE_COUNTS), cost]
