"""Schemathesis' CLI against the whole stack for a time budget: the outside view of the REST API.

    python -m tests.api.schemathesis_stack        (`make schemathesis`; SCHEMATHESIS_SECONDS, SCHEMATHESIS_SEED)

A private stack (`toolout.devstack.stack.start_private`: its own Redis, the offline model, the API and a Celery
worker, so jobs really run) serves `/openapi.json`; `schemathesis run` reads it and spends the budget on the
coverage, fuzzing and stateful phases (the stateful phase follows the document's links from a session to
its outputs, their reads and jobs; tests/api/schemathesis.toml keeps it to those links). Checks: no 5xx, and
every status code, content type and body as the document says. The seed is printed first, so any run can be
replayed. The hooks (tests/api/schemathesis_hooks.py) make a generated request consistent with the rules that
span parameters, which OpenAPI cannot state.

The run passes only when schemathesis found nothing and its report is clean: no operation whose generated
requests the API mostly refused (the document looser than the validation: "schema validation mismatch"),
and no operation that never got a real id (unreached by links, "missing test data"). Not collected by pytest
(no `test_` prefix): it is a five-minute run of its own; the fast regressions of what it found are in
tests/api/test_schema_constraints.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from toolout.devstack.stack import start_private

HOOKS = os.environ.get("SCHEMATHESIS_HOOKS", "tests.api.schemathesis_hooks")
CONFIG = Path(__file__).with_name("schemathesis.toml")
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
PHASES = "coverage,fuzzing,stateful"
STACK_ENV = {
    "TOOLOUT_MAX_UPLOAD_BYTES": str(1 << 20),  # a fuzzed body is small; the limit's 413 is documented
    "TOOLOUT_MAX_WAIT_SECONDS": "1",  # a long poll costs the run at most this
    "TOOLOUT_MAX_CONCURRENT_JOBS_PER_TENANT": "100000",  # the run creates jobs faster than one worker ends them
}
MODEL_LATENCY_MS = 1000
"""Each model call takes a second, so a job the stateful phase just created is still live when the next steps read
its events or cancel it (a finished job's cancel is a 409, which says nothing about the request)."""


def command(url: str, seconds: int, seed: int, report: Path) -> list[str]:
    executable = Path(sys.executable).with_name("schemathesis")
    return [
        str(executable),
        f"--config-file={CONFIG}",
        "run",
        f"{url}/openapi.json",
        f"--max-time={seconds}",
        f"--seed={seed}",
        f"--phases={PHASES}",
        f"--checks={CHECKS}",
        "--request-timeout=30",
        "--report=json",
        f"--report-json-path={report}",
        "--no-color",
    ]


def problems(report: dict[str, Any]) -> list[str]:
    """What makes the run fail: findings, errors, errored cases, a phase that did not pass, two coverage warnings."""
    found = [f"{len(report['failures'])} failures: {report['failures']}"] if report["failures"] else []
    found += [f"errors: {report['errors']}"] if report["errors"] else []
    errored = report["test_cases"]["errored"]
    found += [f"{errored} test cases errored (a hook or the transport raised)"] if errored else []
    found += [
        f"phase {name}: {phase['status']}"
        for name, phase in report["phases"].items()
        if name in PHASES.split(",") and phase["status"] != "success"
    ]
    warnings = report["warnings"]
    found += (
        [f"schema validation mismatch: {warnings['validation_mismatch']}"] if warnings["validation_mismatch"] else []
    )
    found += [f"never reached with real data: {warnings['missing_test_data']}"] if warnings["missing_test_data"] else []
    return found


def summary(report: dict[str, Any]) -> str:
    operations, cases = report["operations"], report["test_cases"]
    return (
        f"schemathesis {report['schemathesis_version']}, seed {report['seed']}: {cases['generated']} cases over "
        f"{operations['tested']}/{operations['total']} operations in {report['running_time']:.0f} s, "
        f"{cases['with_failures']} with failures"
    )


def run(seconds: int, seed: int) -> int:
    root = Path(tempfile.mkdtemp(prefix="toolout-schemathesis-"))
    report_path = root / "report.json"
    stack = start_private(root, workers=1, model_latency_ms=MODEL_LATENCY_MS, extra=STACK_ENV)
    try:
        print(f"schemathesis against {stack.api_url} for {seconds} s, seed {seed}", flush=True)
        env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS}
        subprocess.run(command(stack.api_url, seconds, seed, report_path), check=False, env=env)
    finally:
        stack.stop()
    report = json.loads(report_path.read_text())
    print(summary(report))
    found = problems(report)
    for problem in found:
        print(f"FAIL {problem}")
    print(f"logs: {root / 'logs'}" if found else "PASS")
    return 1 if found else 0


def main() -> int:
    seconds = int(os.environ.get("SCHEMATHESIS_SECONDS", "300"))
    seed = int(os.environ.get("SCHEMATHESIS_SEED") or random.randrange(1 << 31))
    return run(seconds, seed)


if __name__ == "__main__":
    sys.exit(main())
