"""How winding one job's path through toolout's own modules is: modules entered, and returns to a module already left.

Runs ONE full-chunked job (several chunks and a reduce) on the in-memory stores and a scripted model, from
the Celery entry (the tasks `register_tasks` defines, run eagerly in this process) and from the embedded
entry (`LocalDispatcher.run`), and traces every Python call with `sys.setprofile`. At each call and return
the *current module* is the innermost first-party module on the stack (extraction, infra, workers, api,
toolout); a *return* is the current module changing to one that was current before and then left. Each
entry gets a warm-up job first, untraced, so imports and caches do not count.

    python tests/workers/job_path.py --root PATH      # the checkout to measure (put first on sys.path)
    python tests/workers/job_path.py --fold workers.job --fold workers.celery   # as if each were one module

`--fold PREFIX` counts every module under PREFIX as one module: what merging them would leave of the count,
measured without moving any code (the bound on what a layout change alone can buy).

Runs on the layout before the infra/ and workers/ moves too: each import below lists its old names.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

LOG_CHARS = 20_000
SCOPES = {
    "all": ("extraction.", "infra.", "workers.", "api.", "toolout."),
    "path": ("workers.", "extraction.strategies."),
}
"""`all`: every first-party module counts. `path`: only the job's path — its steps and executors (workers/) and the
strategies they drive; a store, a blob, a tokenizer or a prompt is a leaf the path visits, not a place it goes."""


def first(*names: str) -> Any:
    """The first of `module:attribute` that imports (new layout first, then the old names)."""
    for name in names:
        module, _, attribute = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError:
            continue
    raise ImportError(f"none of {names}")


@dataclass
class PathCounter:
    """Per thread: the current first-party module and the ones it has left; the counts are shared."""

    scope: tuple[str, ...] = SCOPES["all"]
    entered: set[str] = field(default_factory=set)
    returns: Counter[str] = field(default_factory=Counter)
    paths: set[tuple[str, str, str]] = field(default_factory=set)
    """Distinct returns: (module left, module returned to, its function); a loop's repeats count once."""
    local: threading.local = field(default_factory=threading.local)
    folds: tuple[str, ...] = ()
    """Prefixes whose modules count as one (`--fold`)."""

    def profile(self, frame: FrameType, event: str, _: object) -> None:
        if event == "call":
            self.now(innermost(frame, self.scope))
        elif event == "return":
            self.now(innermost(frame.f_back, self.scope))

    def now(self, frame: FrameType | None) -> None:
        state = self.local.__dict__
        module = None if frame is None else self.folded(str(frame.f_globals["__name__"]))
        current, left = state.get("current"), state.setdefault("left", set())
        if module == current:
            return
        if current is not None:
            left.add(current)
        if frame is not None and module is not None:
            self.entered.add(module)
            if module in left:
                self.returns[module] += 1
                self.paths.add((current or "", module, frame.f_code.co_qualname))
        state["current"] = module

    def folded(self, module: str) -> str:
        return next((prefix for prefix in self.folds if module == prefix or module.startswith(prefix + ".")), module)

    def distinct(self) -> Counter[str]:
        return Counter(module for _, module, _ in self.paths)

    def __enter__(self) -> PathCounter:
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)
        return self

    def __exit__(self, *_: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def innermost(frame: FrameType | None, scope: tuple[str, ...]) -> FrameType | None:
    """The innermost frame of code in `scope` on the stack (None: only the script and libraries)."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(scope):
            return frame
        frame = frame.f_back
    return None


def tests_of_pipeline(name: str) -> Any:
    """The pipeline tests' document and needle (their module moved with `workers.job`)."""
    return first(f"tests.workers.job.test_pipeline:{name}", f"tests.workers.test_pipeline:{name}")


def runtime() -> Any:
    """A runtime on the in-memory stores (`memory://`) with the needle-finding scripted model of the tests."""
    from extraction.strategies.mapreduce import ModelLimits
    from infra.settings import Settings
    from tests.workers.conftest import CHUNK_NOTES, needle_model

    open_stores = first("infra.wiring.stores:open_stores", "infra.stores:open_stores")
    build_runtime = first("workers.job.runtime:build_runtime", "workers.runtime:build_runtime")
    settings = Settings(redis_url="memory://", blob_store="memory://", broker_url="memory://", truncate_bytes=400)
    limits = ModelLimits(context_tokens=4000, max_output_tokens=500)
    return build_runtime(
        settings, open_stores(settings), needle_model(tests_of_pipeline("NEEDLE"), misses=CHUNK_NOTES), limits=limits
    )


def new_job(rt: Any) -> str:
    """A full-chunked job over a slice of the tests' log document: a few chunks, each answering with data
    (`CHUNK_NOTES`), so one final reduce call joins them."""
    from tests.workers.conftest import store_output, submit

    filler, needle = tests_of_pipeline("FILLER"), tests_of_pipeline("NEEDLE")
    data = (filler[:LOG_CHARS] + needle + "\n" + filler[LOG_CHARS : 2 * LOG_CHARS]).encode()
    return str(submit(rt, store_output(rt, data), "database pool errors", mode="full-chunked").id)


def celery_entry(rt: Any) -> Any:
    """The worker's tasks on an eager app: each task sent runs at once, in this thread."""
    create_celery = first("workers.celery.app:create_celery", "workers.celery_app:create_celery")
    register_tasks = first("workers.celery.tasks:register_tasks", "workers.tasks:register_tasks")
    start = first("workers.celery.app:START", "workers.celery_app:START")
    celery = create_celery(rt.settings)
    celery.conf.update(task_always_eager=True, task_eager_propagates=True)
    register_tasks(celery, rt)
    return lambda job_id: celery.tasks[start].apply(args=[job_id]).get()


def local_entry(rt: Any) -> Any:
    """The embedded executor with one step thread, so the per-thread counts do not depend on scheduling."""
    from workers.local import LocalDispatcher

    return LocalDispatcher(rt, concurrency=1).run


def measure(entry: Any, scope: tuple[str, ...], folds: tuple[str, ...] = ()) -> PathCounter:
    rt = runtime()
    run = entry(rt)
    run(new_job(rt))  # warm-up, untraced
    job_id = new_job(rt)
    with PathCounter(scope, folds=folds) as counter:
        run(job_id)
    job = rt.jobs.records.get(job_id)
    assert job.status.value == "succeeded" and job.chunks_total > 2, (job.status, job.error)
    print(f"  job: {job.chunks_total} chunks, reduce tree {job.reduce_tree}, {job.usage.calls} model calls")
    return counter


def report(name: str, counter: PathCounter) -> None:
    distinct, every = counter.distinct(), counter.returns
    print(
        f"{name}: {len(counter.entered)} modules entered, {len(counter.paths)} distinct returns to a module left"
        f" ({sum(every.values())} in all, loops repeating)"
    )
    ours = {module: count for module, count in distinct.items() if module.startswith("workers.")}
    print(f"    of which into workers/: {sum(ours.values())} distinct in {len(ours)} modules")
    print("    distinct  in all  module")
    for module, count in distinct.most_common():
        print(f"    {count:8d}  {every[module]:6d}  {module}")


def only_from(root: str) -> None:
    """Import first-party code from `root` alone: an editable install's finder (`pip install -e`, as `make install`
    does) would otherwise serve a module the measured tree lacks from the installed checkout, mixing two trees."""
    sys.meta_path[:] = [
        finder for finder in sys.meta_path if not getattr(finder, "__module__", "").startswith("__editable__")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.getcwd(), help="the checkout to measure (default: the current directory)")
    parser.add_argument("--modules", action="store_true", help="list the modules entered too")
    parser.add_argument("--scope", choices=sorted(SCOPES), default="all", help="all first-party modules, or the path")
    parser.add_argument("--fold", action="append", default=[], help="count the modules under this prefix as one")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    sys.path.insert(0, root)
    only_from(root)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    first("extraction.tokenizer_files:ensure_offline_encodings", "infra.tokenizer_files:ensure_offline_encodings")()
    print(f"tree: {root}")
    for name, entry in (
        ("celery entry (register_tasks)", celery_entry),
        ("embedded entry (LocalDispatcher.run)", local_entry),
    ):
        counter = measure(entry, SCOPES[args.scope], tuple(args.fold))
        report(name, counter)
        if args.modules:
            print("    entered: " + " ".join(sorted(counter.entered)))


if __name__ == "__main__":
    main()
