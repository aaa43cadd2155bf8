"""The job's path stays short: `tests/workers/job_path.py` counts the modules one full-chunked job enters and the
returns to a module it had left, and folding modules together (`--fold`) counts what a merge would leave."""

from __future__ import annotations

from tests.workers import job_path

PATH_MODULES_AT_MOST = 13
"""11 before evidence: checking an answer's quotes is a step of its own (`workers.job.evidence`), too big
to fold into `workers.job.pipeline` or `workers.job.outcomes` under ~300 lines; 12 before the strategies were made
independent: the live job and the start step every strategy shares (`workers.job.context`) left
`workers.job.pipeline` so that no strategy imports another (docs/architecture.md, job path)."""


def test_a_jobs_path_enters_at_most_thirteen_modules_from_either_entry() -> None:
    for entry in (job_path.celery_entry, job_path.local_entry):
        counter = job_path.measure(entry, job_path.SCOPES["path"])
        assert len(counter.entered) <= PATH_MODULES_AT_MOST, sorted(counter.entered)
        assert "workers.job.pipeline" in counter.entered and counter.paths


def test_folding_the_steps_into_one_module_counts_their_hops_as_none() -> None:
    apart = job_path.measure(job_path.local_entry, job_path.SCOPES["path"])
    folded = job_path.measure(job_path.local_entry, job_path.SCOPES["path"], folds=("workers.job",))
    assert "workers.job" in folded.entered and not any(m.startswith("workers.job.") for m in folded.entered)
    assert len(folded.paths) < len(apart.paths)
    assert not any(left == back == "workers.job" for left, back, _ in folded.paths)
