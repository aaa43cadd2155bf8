"""Each kind of step is declared once (`workers.job.drive.STEPS`): its task name, queue, message type and code,
from which the executors, the task routes and the wire form are all read."""

from __future__ import annotations

from typing import get_args

import pytest

from workers.job.drive import STEP_QUEUES, STEPS, Registry, StepDeclarationError
from workers.job.steps import Map, Query, ReadGrep, ReduceGroup, ReduceStage, Start, Step

NAMES_AND_QUEUES = {
    "toolout.start_extraction": "extract",
    "toolout.map_chunk": "map",
    "toolout.reduce_stage": "reduce",
    "toolout.reduce_group": "reduce",
    "toolout.read_grep": "agent",
    "toolout.query": "agent",
}
"""What compose files, the docs and the RabbitMQ leg name: a step's task and queue must not change with its code."""

ONE_OF_EACH: list[Step] = [
    Start("j1"),
    Map("j1", 2, 100, 200),
    ReduceStage("j1", 1, [[[0, 0, 100]], [[1, 100, 200]]]),
    ReduceGroup("j1", 0, 3, [0, 1], [[0, 0, 100], [1, 100, 200]]),
    ReadGrep("j1"),
    Query("j1"),
]


def noop(rt, step, by):
    return None


def test_every_step_type_is_declared_once_with_its_task_name_and_queue() -> None:
    kinds = STEPS.kinds()
    assert {kind.task: kind.queue for kind in kinds} == NAMES_AND_QUEUES
    assert sorted(kind.message.__name__ for kind in kinds) == sorted(t.__name__ for t in get_args(Step))
    assert all(kind.queue in STEP_QUEUES for kind in kinds)


@pytest.mark.parametrize("queue", ["", "maps", "webhooks"])
def test_a_step_without_a_queue_of_the_steps_is_refused(queue: str) -> None:
    with pytest.raises(StepDeclarationError, match="needs a queue"):
        Registry().step("toolout.map_chunk", queue=queue, message=Map)(noop)


def test_a_step_declared_twice_is_refused() -> None:
    steps = Registry()
    steps.step("toolout.map_chunk", queue="map", message=Map)(noop)
    with pytest.raises(StepDeclarationError, match="declared twice"):
        steps.step("toolout.map_chunk_again", queue="map", message=Map)(noop)
    with pytest.raises(StepDeclarationError, match="declared twice"):
        steps.step("toolout.map_chunk", queue="map", message=Start)(noop)


def test_a_declared_step_is_run_by_its_code() -> None:
    steps, ran = Registry(), []
    steps.step("toolout.start_extraction", queue="extract", message=Start)(lambda rt, step, by: ran.append((step, by)))
    steps.of(Start("j9")).code(None, Start("j9"), "t1")  # type: ignore[arg-type]  # the code is given no runtime
    assert ran == [(Start("j9"), "t1")]
    assert steps.task_of(Start) == "toolout.start_extraction"


@pytest.mark.parametrize("step", ONE_OF_EACH, ids=lambda step: type(step).__name__)
def test_a_step_survives_its_message_and_its_stored_form(step: Step) -> None:
    task, args = STEPS.message(step)
    assert task in NAMES_AND_QUEUES and STEPS.from_message(task, args) == step
    assert STEPS.from_stored(STEPS.stored(step, "task-7")) == (step, "task-7")
