"""The job store's Lua scripts: names generated from the job model, the shared prelude, then each script.

Every field, status and usage name a script uses comes from `JobRecord`, `Usage` and `JobStatus` through
the header built here (`F.status`, `STATUS.running`, `ENDED[status]`, `USAGE_COUNTS`), so renaming a
model field renames it in every script at once; `tests/infra/stores/test_lua_names.py` checks that no
script spells such a name out itself. The helpers every script shares (is the job still live, count
usage on the job and in the totals) are in `lua/_prelude.lua`; each part of the store keeps its own scripts
in its own `lua/` folder (`ScriptSet`).
"""

from __future__ import annotations

from dataclasses import dataclass
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

JOBS_PACKAGE = "infra.stores.jobs"
"""Where the prelude every part's scripts share lives, with the scripts more than one part runs."""


@dataclass(frozen=True)
class ScriptSet:
    """The scripts of one part of the job store: `<package>/lua/<name>.lua` for each of `names`."""

    package: str
    names: tuple[str, ...]


SHARED_SCRIPTS = ScriptSet(JOBS_PACKAGE, ("add_owned",))
"""Scripts more than one part runs (the fan-in's expected parts and the tasks' ids both use `add_owned`)."""


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


def script_source(package: str, name: str) -> str:
    """What Redis runs for the job script `name` of `package`: the names, the shared prelude, the script."""
    return lua_source(package, name, names_header(), prelude_from=JOBS_PACKAGE)


def usage_args(usage: Usage) -> list[str | int]:
    """The counters in `USAGE_COUNTS` order, then the cost ('' when unknown): what `count_usage` takes."""
    cost = "" if usage.cost_usd is None else scalar_text(usage.cost_usd)
    return [*(getattr(usage, name) for name in USAGE_COUNTS), cost]
