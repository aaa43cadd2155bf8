"""Running a job's steps, the one place that knows which code a step is and what follows it, for every executor.

Each kind of step is declared once, here (`@STEPS.step(task, queue=..., message=...)` on its code): its Celery task
name, the queue its task goes to, the message type it takes (`workers.job.steps`) and the code that runs it. Task
routes (`workers.celery.app`), the tasks `workers.celery.tasks` registers and the wire form of a step (`message`,
`stored`) are all read from that one registry. `run` maps a step to its code; `advance` hands what the step answered
to an `Executor`, which supplies only *how* work is sent: Celery publishes task messages (`workers.celery.tasks`),
the embedded mode runs them on a thread pool (`workers.local`). So a job follows the same path, and ends the same
way, on either.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import astuple, dataclass
from typing import Any, Protocol, TypeVar

from workers.job import agent, context, pipeline
from workers.job.runtime import Runtime
from workers.job.steps import Fanout, Map, Next, Query, ReadGrep, ReduceGroup, ReduceStage, Settled, Start, Step

log = logging.getLogger("toolout.workers")

STEP_QUEUES = ("extract", "map", "reduce", "agent")
"""The queues a job's steps go to (`workers.celery.app.QUEUES` adds the webhooks'): the start step, the maps, the
reduces and the sub-agents, so each kind of work can be scaled on its own and reduce never waits behind maps."""

Code = Callable[[Runtime, Any, str | None], Next | Settled]
"""A step's code: the runtime, the step, and the id of the task that runs it (a part settles its level under it)."""
C = TypeVar("C", bound=Code)


class StepDeclarationError(ValueError):
    """A step declared without what every executor needs of it: a queue, a name and a message type of its own."""


@dataclass(frozen=True)
class StepKind:
    """One kind of step as declared: its task name, its queue, the message it takes and its code."""

    task: str
    queue: str
    message: type[Step]
    code: Code


class Registry:
    """Every kind of step, declared once with `step`; looked up by task name (a message) or type (a step)."""

    def __init__(self) -> None:
        self._by_task: dict[str, StepKind] = {}
        self._by_type: dict[type[Step], StepKind] = {}

    def step(self, task: str, *, queue: str, message: type[Step]) -> Callable[[C], C]:
        """Declare the decorated function as the code of the step `message`, sent as the task `task` to `queue`."""
        if queue not in STEP_QUEUES:
            raise StepDeclarationError(f"step {task} needs a queue, one of {', '.join(STEP_QUEUES)}; got {queue!r}")
        if task in self._by_task or message in self._by_type:
            raise StepDeclarationError(f"step {task} ({message.__name__}) is declared twice")

        def declare(code: C) -> C:
            kind = StepKind(task, queue, message, code)
            self._by_task[task], self._by_type[message] = kind, kind
            return code

        return declare

    def kinds(self) -> list[StepKind]:
        return list(self._by_task.values())

    def of(self, step: Step) -> StepKind:
        return self._by_type[type(step)]

    def task_of(self, message: type[Step]) -> str:
        """The task name of the step type `message`."""
        return self._by_type[message].task

    def message(self, step: Step) -> tuple[str, list[Any]]:
        """The step as a task message: its task name and positional arguments (JSON-friendly lists)."""
        return self.of(step).task, list(astuple(step))

    def from_message(self, task: str, args: list[Any] | tuple[Any, ...]) -> Step:
        return self._by_task[task].message(*args)

    def stored(self, step: Step, task_id: str) -> str:
        """The stage after a fan-out as kept on the job (`JobFanIn.expect_parts`): with its task id fixed, so a
        cancel can revoke it."""
        task, args = self.message(step)
        return json.dumps({"task": task, "id": task_id, "args": args})

    def from_stored(self, text: str) -> tuple[Step, str]:
        """A stage `stored` on the job, and its task id."""
        kept = json.loads(text)
        return self.from_message(kept["task"], kept["args"]), str(kept["id"])


STEPS = Registry()


@STEPS.step("toolout.start_extraction", queue="extract", message=Start)
def start_extraction(rt: Runtime, step: Start, by: str | None) -> Next:
    return context.start(rt, step.job_id)


@STEPS.step("toolout.map_chunk", queue="map", message=Map)
def map_chunk(rt: Runtime, step: Map, by: str | None) -> Settled | None:
    return pipeline.run_map(rt, step.job_id, step.index, step.start, step.end, by=by)


@STEPS.step("toolout.reduce_stage", queue="reduce", message=ReduceStage)
def reduce_stage(rt: Runtime, step: ReduceStage, by: str | None) -> Next:
    return pipeline.run_reduce_stage(rt, step.job_id, step.level, step.covers)


@STEPS.step("toolout.reduce_group", queue="reduce", message=ReduceGroup)
def reduce_group(rt: Runtime, step: ReduceGroup, by: str | None) -> None:
    pipeline.run_reduce_group(rt, step.job_id, step.level, step.group, step.members, step.cover)


@STEPS.step("toolout.read_grep", queue="agent", message=ReadGrep)
def read_grep(rt: Runtime, step: ReadGrep, by: str | None) -> None:
    agent.run_read_grep(rt, step.job_id)


@STEPS.step("toolout.query", queue="agent", message=Query)
def query(rt: Runtime, step: Query, by: str | None) -> Next:
    from workers.job.query import run_query  # DuckDB: imported by the worker that runs a query job

    return run_query(rt, step.job_id)


class Executor(Protocol):
    """How an executor sends work; what to send is `advance`'s to decide."""

    def fan_out(self, fanout: Fanout) -> None:
        """Run the parts (in any order, at once if it can), then `fanout.then` once all are settled."""
        ...

    def send(self, step: Step) -> None:
        """Run one step (and whatever it answers, through `advance`)."""
        ...


def advance(executor: Executor, answer: Next | Settled) -> None:
    """Hand a step's answer on: a fan-out, one step, or nothing (the job ended, or a part's fan-in is the store's)."""
    if isinstance(answer, Fanout):
        executor.fan_out(answer)
    elif answer is not None and not isinstance(answer, Settled):
        executor.send(answer)


def run(rt: Runtime, step: Step, *, by: str | None = None) -> Next | Settled:
    """Run one step here; `by` is the task that runs it (a part settles its level under that id)."""
    return STEPS.of(step).code(rt, step, by)
