"""What the Redis parts of the job store share: one client, the job's lifetimes, the indexes and every part's scripts.

Each part registers its own scripts here (`register`), so a part that folds another part's step into its own round
trip (a map's model calls and trace go with its output) runs that script by name, and a batch whose scripts Redis
lost loads them again whichever part owns them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.exceptions import NoScriptError

from extraction.errors import NotFound
from infra.redis import keys
from infra.redis.client import redis_errors
from infra.stores.jobs.model import JobRecord
from infra.stores.jobs.model_calls import job_model_usage
from infra.stores.jobs.redis_indexes import JobIndexes
from infra.stores.jobs.scripts import CODEC, SHARED_SCRIPTS, ScriptSet, script_source


class RedisJobContext:
    """One Redis as the job store's parts see it; safe to share between threads and processes."""

    def __init__(
        self, client: redis.Redis, *, ttl_seconds: int, deadline_seconds: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.r = client
        self.ttl, self.deadline, self.clock = ttl_seconds, deadline_seconds, clock
        self.index = JobIndexes(client)
        self._lua: dict[str, Any] = {}
        self._by_sha: dict[str, str] = {}
        """Each registered script's source by its sha, to load it before a batch runs it."""
        self._loaded: set[str] = set()
        """The scripts this process loaded for its batches (a lone script loads itself when missing)."""
        self.register(SHARED_SCRIPTS)

    @property
    def owned_ttl(self) -> int:
        """How long a live job's own keys may outlive a silent job: its record's TTL after its deadline."""
        return self.ttl + self.deadline

    def register(self, scripts: ScriptSet) -> None:
        for name in scripts.names:
            self._lua[name] = self.r.register_script(script_source(scripts.package, name))
            self._by_sha[self._lua[name].sha] = self._lua[name].script

    def run(self, script: str, keys_: list[str], args: list[Any]) -> Any:
        with redis_errors():
            return self._lua[script](keys=keys_, args=args)

    def add_owned(self, job_id: str, key: str, command: str, args: list[Any]) -> bool:
        """Write to a key the job owns only while the job exists (False: it is gone, nothing was written)."""
        return bool(self.run("add_owned", [keys.job(job_id), key], [self.owned_ttl, command, *args]) == 1)

    def script(self, name: str, keys_: list[str], args: list[Any]) -> Command:
        """Script `name` as one command of a `batch`: plain EVALSHA (redis-py's scripts in a pipeline ask SCRIPT
        EXISTS first, one more round trip every time), which a cluster pipeline routes by its keys."""
        return ("EVALSHA", self._lua[name].sha, len(keys_), *keys_, *args)

    def batch(self, commands: Sequence[Command]) -> list[Any]:
        """`commands` in one round trip, in order. A script is loaded before the first batch that runs it, so no
        batch finds one missing but after Redis lost its scripts (a restart, SCRIPT FLUSH): then the commands
        before the first lost script took effect, and the batch resumes there once the scripts are loaded again,
        so the scripts before it (a model call counted, a trace event added) are not applied twice."""
        with redis_errors():
            self._load(commands)
            results = self._pipeline(commands)
            lost = next((i for i, found in enumerate(results) if isinstance(found, NoScriptError)), None)
            if lost is not None:
                self._loaded.clear()
                self._load(commands[lost:])
                results[lost:] = self._pipeline(commands[lost:])
            _raise_first_error(results)
            return results

    def _load(self, commands: Sequence[Command]) -> None:
        for sha in {command[1] for command in commands if command[0] == "EVALSHA"} - self._loaded:
            self.r.script_load(self._by_sha[sha])
            self._loaded.add(sha)

    def _pipeline(self, commands: Sequence[Command]) -> list[Any]:
        pipe = self.r.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)  # type: ignore[no-untyped-call]
        return list(pipe.execute(raise_on_error=False))


Command = tuple[Any, ...]
"""One Redis command as `execute_command` takes it."""


def _raise_first_error(results: list[Any]) -> None:
    for found in results:
        if isinstance(found, redis.exceptions.RedisError):
            raise found


def decode(fields: dict[str, str]) -> JobRecord:
    """The record, with its per-model counters (kept as fields of their own so Lua can add to them)."""
    record = CODEC.decode(fields)
    return record.model_copy(update={"model_usage": job_model_usage(fields)})


def not_found(job_id: str) -> NotFound:
    return NotFound(f"no extraction job {job_id!r}", job_id=job_id)


def failure_field(level: int, index: int) -> str:
    """The part's field in the failures hash: level 0 for chunks, n >= 1 for reduce groups."""
    return f"{level}:{index}"


def flat(fields: dict[str, str]) -> list[str]:
    return [item for pair in fields.items() for item in pair]
