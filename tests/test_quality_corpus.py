"""The quality bench's corpus answers are computed from the real files, never typed (bench/quality/corpus.py).

A typed answer goes stale silently when a file changes and can be tuned to what a strategy returns;
a computed one cannot. The bench lists every question with its computed answer
(`python -m bench.quality.corpus`, run as a process: tests import no bench module); here no literal of
that module may be one of those answers (nor give one away in a question), and the counts must follow
the files: on a copy of the corpus whose logs and tables hold every line twice, they double.

The corpus sits beside the checkout (`../shared/corpus`, or `TOOLOUT_CORPUS_DIR`). Without it these
tests skip, except under `CI=true`, where `corpus_dir` raises and they fail.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest

from tests.corpus_files import listing
from toolout.devstack.datasets import CORPUS_ENV, corpus_dir

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "bench" / "quality" / "corpus.py"


@pytest.fixture(scope="module")
def corpus() -> Path:
    found = corpus_dir(ROOT)
    if found is None:
        pytest.skip(f"no corpus beside the checkout nor at ${CORPUS_ENV} (CI=true fails instead)")
    return found


@pytest.fixture(scope="module")
def questions(corpus: Path) -> list[dict[str, Any]]:
    return listing(corpus)


def literals(path: Path) -> tuple[list[str], list[float]]:
    """The module's string and number constants, docstrings left out (prose about the data is no answer)."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    constants = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docstrings]
    strings = [c.lower() for c in constants if isinstance(c, str)]
    numbers = [float(c) for c in constants if isinstance(c, int | float) and not isinstance(c, bool)]
    return strings, numbers


def test_every_file_has_one_to_three_questions_each_with_a_computed_answer(questions: list[dict[str, Any]]) -> None:
    per_file: dict[str, int] = {}
    for q in questions:
        per_file[q["file"]] = per_file.get(q["file"], 0) + 1
        assert q["must"] or q["near"], q["name"]
    assert len(per_file) == 8 and all(1 <= n <= 3 for n in per_file.values()), per_file
    assert len({q["name"] for q in questions}) == len(questions)


def test_no_literal_of_the_corpus_module_is_an_answer(questions: list[dict[str, Any]]) -> None:
    """Typed answers, and questions that hold their own answer, are both caught: requests are literals too."""
    strings, numbers = literals(MODULE)
    typed = []
    for q in questions:
        typed += [(q["name"], v) for v in q["must"] if any(v.lower() in s for s in strings) or _number_in(v, numbers)]
        typed += [(q["name"], v) for v in q["near"] if any(abs(v - n) < 0.5 for n in numbers)]
        typed += [(q["name"], v) for v in q["near"] if any(f"{v:.1f}" in s for s in strings)]
    assert not typed


def _number_in(value: str, numbers: list[float]) -> bool:
    try:
        return float(value) in numbers
    except ValueError:
        return False


def test_the_counts_follow_the_files(corpus: Path, questions: list[dict[str, Any]], tmp_path: Path) -> None:
    """Every log and table line written twice: each count on them doubles, so it is counted, not typed."""
    for source in corpus.iterdir():
        data = source.read_bytes()
        if source.suffix in (".log", ".csv"):
            header, _, body = data.partition(b"\n") if source.suffix == ".csv" else (b"", b"", data)
            data = (header + b"\n" if header else b"") + body + body
        (tmp_path / source.name).write_bytes(data)
    doubled = {q["name"]: q for q in listing(tmp_path)}
    counts = [q for q in questions if q["ask"].startswith("count") and q["file"].endswith((".log", ".csv"))]
    assert len(counts) >= 5
    assert all(int(doubled[q["name"]]["must"][0]) == 2 * int(q["must"][0]) for q in counts), counts


def test_the_corpus_is_where_ci_finds_it(corpus: Path) -> None:
    """CI clones the repository beside `shared/`: the default place, unless the override names another."""
    if not os.environ.get(CORPUS_ENV):
        assert corpus == ROOT.parent / "shared" / "corpus"
    assert {"Apache_2k.log", "weather.csv", "canada.json", "re.html"} <= {p.name for p in corpus.iterdir()}
