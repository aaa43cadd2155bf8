"""The Lua scripts spell no model name themselves: fields, statuses and usage counters come from the header
`infra.stores.jobs.scripts` generates from `JobRecord`, `Usage` and `JobStatus`, and every name a script
looks up in those tables exists. Shared helpers live once, in `_prelude.lua`.
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import pytest
import redis

from extraction.protocols import Usage
from infra.redis.lua import PRELUDE, lua_table
from infra.stores.jobs.model import JobRecord, JobStatus
from infra.stores.jobs.scripts import CODEC, JOBS_PACKAGE, names_header, script_source
from infra.stores.jobs.stores import JOB_SCRIPTS

LUA_PACKAGES = (
    *(part.package for part in JOB_SCRIPTS),
    "infra.stores.records.names",
    "infra.stores.records.plans",
    "infra.stores.idempotency",
)
_LITERAL = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_LOOKUP = re.compile(r"\b(F|STATUS|USAGE_FIELD|TOTALS)\.([A-Za-z_]\w*)")
_SHARED_HELPER = re.compile(r"^local function (\w+)", re.M)

MODEL_NAMES = (
    set(CODEC.field_names())
    | set(JobRecord.model_fields)
    | set(Usage.model_fields)
    | {status.value for status in JobStatus}
)


def scripts() -> dict[str, str]:
    """Every `.lua` file of every store, by `package/name`, as written (no header, no prelude)."""
    found = {}
    for package in LUA_PACKAGES:
        for entry in (files(package) / "lua").iterdir():
            if entry.name.endswith(".lua"):
                found[f"{package}/{entry.name}"] = entry.read_text(encoding="utf-8")
    return found


def test_every_stores_lua_folder_is_checked() -> None:
    """A script moved to a part's own `lua/` (as the job and record stores' were) is still read by these checks."""
    root = Path(__file__).resolve().parents[3]
    folders = {lua.parent.relative_to(root).as_posix().replace("/", ".") for lua in root.glob("infra/stores/**/lua")}
    assert folders == set(LUA_PACKAGES)


def code(text: str) -> str:
    """The script without its comments (they may name fields to explain them)."""
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def literals(text: str) -> set[str]:
    return {a or b for a, b in _LITERAL.findall(code(text))}


@pytest.mark.parametrize("name", sorted(scripts()))
def test_no_script_spells_a_model_name(name: str) -> None:
    spelled = literals(scripts()[name]) & MODEL_NAMES
    assert not spelled, f"{name} writes {sorted(spelled)} itself: use F.<field>, STATUS.<name> or ENDED[status]"


@pytest.mark.parametrize("name", sorted(scripts()))
def test_every_name_a_script_looks_up_is_generated(name: str) -> None:
    tables = {
        "F": set(CODEC.field_names()),
        "STATUS": {s.name.lower() for s in JobStatus},
        "USAGE_FIELD": {f for f in Usage.model_fields},
        "TOTALS": {"separator", "cost"},
    }
    unknown = [f"{t}.{key}" for t, key in _LOOKUP.findall(code(scripts()[name])) if key not in tables[t]]
    assert not unknown, f"{name} looks up names the header does not define: {unknown}"


def test_the_job_scripts_share_their_helpers_through_the_prelude() -> None:
    """No script defines a helper of its own or repeats one: the ended check and usage block are in the prelude,
    which every part of the job store shares."""
    job_scripts = {
        n: t for n, t in scripts().items() if n.startswith(f"{JOBS_PACKAGE}.") or n.startswith(f"{JOBS_PACKAGE}/")
    }
    prelude = job_scripts.pop(f"{JOBS_PACKAGE}/{PRELUDE}.lua")
    assert set(_SHARED_HELPER.findall(prelude)) >= {"job_ended", "not_live", "count_usage", "count_model_usage"}
    for name, text in job_scripts.items():
        assert not _SHARED_HELPER.findall(text), name
        assert "USAGE_COUNTS)" not in text and "TOTALS.cost" not in text, f"{name} counts usage itself"
    assert {f"{part.package}/{n}.lua" for part in JOB_SCRIPTS for n in part.names} == set(job_scripts)


def test_each_part_of_the_job_store_owns_its_own_scripts() -> None:
    """A script belongs to one part (the one whose `lua/` holds it), so two parts never register the same name."""
    names = [name for part in JOB_SCRIPTS for name in part.names]
    assert len(names) == len(set(names)) and len(JOB_SCRIPTS) == len({part.package for part in JOB_SCRIPTS})


def test_a_script_is_the_header_then_the_prelude_then_itself() -> None:
    source = script_source("infra.stores.jobs.accounting", "reserve_call")
    prelude = (files(JOBS_PACKAGE) / "lua" / f"{PRELUDE}.lua").read_text(encoding="utf-8")
    reserve = (files("infra.stores.jobs.accounting") / "lua" / "reserve_call.lua").read_text(encoding="utf-8")
    assert source == names_header() + prelude + reserve
    assert "local F = {" in names_header() and "status = 'status'" in names_header()


@pytest.mark.redis
@pytest.mark.integration
def test_a_misspelt_name_fails_the_script_instead_of_passing_nil(redis_client: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="F has no stauts"):
        redis_client.eval(lua_table("F", {"status": "status"}) + "return F.stauts", 0)
    assert redis_client.eval(lua_table("F", {"status": "status"}) + "return F.status", 0) == "status"
    for part in JOB_SCRIPTS:
        for name in part.names:  # every script compiles with its header and prelude
            assert redis_client.script_load(script_source(part.package, name))
