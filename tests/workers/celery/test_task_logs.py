"""Celery's line per task ("Task … succeeded in …") is off in toolout workers unless asked for."""

from __future__ import annotations

import logging

import pytest
from celery import Celery
from celery.app.trace import build_tracer

from workers.celery.main import CELERY_TASK_LOGGERS, quiet_celery_task_logs


def run_one_task() -> None:
    app = Celery("logs", set_as_current=False)

    @app.task(name="toolout.test.noop", ignore_result=True)
    def noop() -> int:
        return 1

    build_tracer(noop.name, noop, app=app)("task-1", (), {}, request={"ignore_result": True})


def task_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name in CELERY_TASK_LOGGERS and "task-1" in r.getMessage()]


@pytest.fixture()
def celery_loggers(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The loggers as a fresh process has them (restored after the test), captured at INFO."""
    for name in CELERY_TASK_LOGGERS:
        monkeypatch.setattr(logging.getLogger(name), "level", logging.NOTSET)
    caplog.set_level(logging.INFO)


def test_celery_would_log_each_task(celery_loggers: None, caplog: pytest.LogCaptureFixture) -> None:
    run_one_task()
    assert any("succeeded" in line for line in task_lines(caplog)), caplog.text


def test_a_toolout_worker_does_not(celery_loggers: None, caplog: pytest.LogCaptureFixture) -> None:
    quiet_celery_task_logs()
    run_one_task()
    assert task_lines(caplog) == []
    assert logging.getLogger("celery.app.trace").isEnabledFor(logging.WARNING)  # failures are still logged
