"""What the sweeper (`api.lifecycle`) asks of the record store: which sessions sat idle past their TTL, which
sessions and outputs passed their retention deadline, which replaced versions' grace period is over.

A version replaced by a newer one is *retired*: kept readable for a grace period (a running extraction job may be
reading it) and then removed by the sweeper. Deleting a session or output (`sessions.drop_session_records`,
`outputs.delete_output`) takes it off every list here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from infra.stores.records.model import OutputRecord


@dataclass(frozen=True)
class Expiring:
    """A session or an output past its retention deadline: `kind` is `session` or `output`, `id` its id or handle."""

    kind: str
    id: str

    @property
    def member(self) -> str:
        return f"{self.kind}:{self.id}"

    @classmethod
    def of(cls, member: str) -> Expiring:
        kind, _, ident = member.partition(":")
        return cls(kind, ident)


class RecordRetention(Protocol):
    """Deadlines, idleness and retired versions: what is due for deletion, soonest first."""

    def idle_sessions(self, limit: int = 100) -> list[str]:
        """Sessions unused for longer than the TTL, oldest first (the sweeper's work list)."""
        ...

    def expire_session_at(self, session_id: str, at: float) -> None:
        """Give the session a retention deadline: from `at` it reads as gone, and `expiring` hands it to the
        sweeper (an output's own deadline is its record's `expires_at`, indexed by `outputs.put_output`)."""
        ...

    def expiring(self, before: float, limit: int = 100) -> list[Expiring]:
        """Sessions and outputs whose retention deadline is before `before`, soonest first (the sweeper's list;
        deleting one takes it off)."""
        ...

    def retire_output(self, record: OutputRecord, at: float) -> None:
        """Mark a version replaced at time `at` (again: postpone it); `retired_outputs` hands it to the sweeper."""
        ...

    def retired_outputs(self, before: float, limit: int = 100) -> list[OutputRecord]:
        """Versions retired before `before`, oldest first (deleting one takes it off the list)."""
        ...
