"""Names and file paths are per-session *aliases* of handles (one hash per session and `Space`).

`bind_alias` is a compare-and-set, so two writers racing for the same name (write mode `new`, default naming, two
appends to one variable) can never both win, and nothing is lost — the loser sees what won and tries again
(`infra.outputs.placement`). Nothing binds, and no counter counts, in a session that is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from infra.stores.records.model import Space


@dataclass(frozen=True)
class AliasSwap:
    """What `bind_alias` did: `bound` or not, and the handle the alias held before the call."""

    bound: bool
    previous: str | None


class RecordNames(Protocol):
    """A session's names, paths and counters."""

    def aliases(self, session_id: str, space: Space) -> dict[str, str]:
        """Every name (or path) of the session and the handle it points to."""
        ...

    def alias(self, session_id: str, space: Space, key: str) -> str | None: ...

    def bind_alias(self, session_id: str, space: Space, key: str, handle: str, *, expected: str | None) -> AliasSwap:
        """Point `key` at `handle` only if it now points at `expected` (None: only if `key` is free).

        `NotFound` when the session is gone (nothing is bound then).
        """
        ...

    def unbind_alias(self, session_id: str, space: Space, key: str, handle: str) -> bool:
        """Remove `key` only if it still points at `handle` (deleting an output never drops a newer version)."""
        ...

    def next_count(self, session_id: str, counter: str) -> int:
        """1, 2, 3, … per (session, counter): default names `<tool>_<n>`. `NotFound` when the session is gone."""
        ...
