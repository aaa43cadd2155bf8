"""A job's steps as typed values: the one vocabulary every executor and the job store share.

A step is a frozen dataclass naming its job and its arguments; a `Fanout` is a level of parts (maps, or the
reduce groups of one level) and the reduce stage that runs once every part is settled. A step of the
pipeline answers with the `Next` one (None: the job has ended, or is someone else's to go on with), and
`workers.job.drive` runs it on either executor.

Each step type is declared there, once, with its task name, queue and code (`drive.STEPS`); steps travel as Celery
task messages and, for the stage after a fan-out, as JSON stored on the job (`JobFanIn.expect_parts`): both go
through the registry's `message` and `from_message`, so a step's wire form (its task name and positional
arguments) is written in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from extraction.documents.chunking import Chunk

Span = list[int]
Cover = list[Span]
"""What one reduce input holds of the document: `[chunk index, start byte, end byte]` per chunk, as JSON-friendly
lists because covers travel in task arguments (the chunk plan is computed once, at the start, and is not stored)."""


def chunk_covers(chunks: list[Chunk]) -> list[Cover]:
    """Level 0: each map output covers its own chunk."""
    return [[[chunk.index, chunk.start, chunk.end]] for chunk in chunks]


def group_covers(groups: list[list[int]], covers: list[Cover]) -> list[Cover]:
    """What each reduce group covers: everything its members (positions in `covers`) cover."""
    return [[span for member in members for span in covers[member]] for members in groups]


@dataclass(frozen=True)
class Start:
    job_id: str


@dataclass(frozen=True)
class Map:
    """One chunk's map call: a part of level 0."""

    job_id: str
    index: int
    start: int
    end: int

    @property
    def settles(self) -> int:
        """The level whose fan-in this part counts toward."""
        return 0


@dataclass(frozen=True)
class ReduceGroup:
    """One group of level-`level` outputs reduced into output `group` of level `level + 1`."""

    job_id: str
    level: int
    group: int
    members: list[int]
    cover: Cover

    @property
    def settles(self) -> int:
        return self.level + 1


@dataclass(frozen=True)
class ReduceStage:
    """The stage after a level: finish, or plan the next round of groups; `covers[i]` is what part `i` holds."""

    job_id: str
    level: int
    covers: list[Cover]


@dataclass(frozen=True)
class ReadGrep:
    job_id: str


@dataclass(frozen=True)
class Query:
    """The query sub-agent (`workers.job.query`), on the agent queue: loading and SQL happen there."""

    job_id: str


Part = Map | ReduceGroup
Step = Start | Map | ReduceGroup | ReduceStage | ReadGrep | Query


@dataclass(frozen=True)
class Fanout:
    """Parts that may run at once, and the stage that runs after the last of them is settled."""

    parts: list[Part]
    then: ReduceStage


Next = Fanout | Step | None


@dataclass(frozen=True)
class Settled:
    """A map recorded its output and settled its level in the same round trip: `then` is what
    `JobFanIn.settle_level` answered (the stage after the level, `stored`, for the one map that completed it)."""

    then: str | None
