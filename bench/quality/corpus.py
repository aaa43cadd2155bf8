"""The quality harness's real-content scenarios: files nobody here wrote, questions a user would ask of them.

The corpus (`../shared/corpus`, or `TOOLOUT_CORPUS_DIR`; `toolout.devstack.datasets.corpus_dir`) holds loghub
logs, a GeoJSON, two CSV tables with `NA` for missing values and two Python documentation pages.
Every expected answer is computed here from the file itself — `csv`, `json`, `re` over its bytes —
and never typed: `tests/test_quality_corpus.py` fails when a literal in this module is an answer
(or gives one away in a question).

The questions are what the service must get right on such output, not what today's code can:
HTML read as raw markup, CSV columns with `NA` loaded as text, and a GeoJSON's nested arrays are
what they measure.

    python -m bench.quality.corpus      # every corpus scenario's question and computed answer, as JSON
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from bench.quality.scenarios import Case, Scenario
from toolout.devstack.datasets import corpus_dir

ROOT = Path(__file__).resolve().parents[2]
AIRPORT = "K83"
"""The faa code the lookup asks for (a key of the question; the answer is read from the file): mid-file, so no head
or tail holds it, and with a digit: the offline model's readers skip plain words under four letters (ASE, JFK)."""
YEAR = "2013"
"""The year the weather sum asks for: every row's (the filter a stand-in can read; the sum is what is measured)."""


@dataclass(frozen=True)
class Question:
    """One question on one corpus file; `answer` computes the right answer's values from the file's bytes."""

    name: str
    file: str
    form: str
    ask: str
    request: str
    answer: Callable[[bytes], Case]
    content_type: str = "text/plain"
    quick: bool = False

    def scenario(self, root: Path) -> Scenario:
        """The harness's scenario: the file read once per run, its answer computed from what was read."""
        return Scenario(
            self.name,
            self.form,
            self.ask,
            self.request,
            lambda _size: self.answer((root / self.file).read_bytes()),
            self.file,
            self.content_type,
            source="corpus",
            quick=self.quick,
        )


# ---------------------------------------------------------------- logs (loghub)


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def _count(data: bytes, *needles: str) -> Case:
    """How many lines contain every needle."""
    return Case(data, (str(sum(all(n in line for n in needles) for line in _lines(data))),))


def _first(data: bytes, pattern: str) -> re.Match[str]:
    """The first line's match of `pattern` (in file order, as a reader meets it)."""
    return next(m for line in _lines(data) if (m := re.search(pattern, line)))


def apache_errors(data: bytes) -> Case:
    return _count(data, "] [error] ")


def apache_first_forbidden(data: bytes) -> Case:
    found = _first(data, r" (\d\d:\d\d:\d\d) \d{4}\] \[error\] \[client ([\d.]+)\] Directory index forbidden")
    return Case(data, found.groups())


def linux_ssh_failures(data: bytes) -> Case:
    return _count(data, " sshd(pam_unix)[", "authentication failure;")


def linux_boot(data: bytes) -> Case:
    found = _first(data, r" (\d\d:\d\d:\d\d) \S+ kernel: Linux version (\S+) ")
    return Case(data, found.groups())


def zookeeper_warns(data: bytes) -> Case:
    return _count(data, " - WARN ")


def zookeeper_first_error(data: bytes) -> Case:
    found = _first(data, r" (\d\d:\d\d:\d\d),\d+ - ERROR +\[[^\]]*?([A-Za-z$]+)@\d+\]")
    return Case(data, found.groups())


# ---------------------------------------------------------------- CSV (nycflights13)


def _rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def _numbers(rows: list[dict[str, str]], column: str) -> list[float]:
    """The column's values, `NA` (missing) left out."""
    return [float(r[column]) for r in rows if r[column] != "NA"]


def airport_altitude(data: bytes) -> Case:
    row = next(r for r in _rows(data) if r["faa"] == AIRPORT)
    return Case(data, (row["name"], row["alt"]))


def airports_in_alaska(data: bytes) -> Case:
    return Case(data, (str(sum(r["tzone"] == "America/Anchorage" for r in _rows(data))),))


def weather_average_temp(data: bytes) -> Case:
    at = [r for r in _rows(data) if r["origin"] == "EWR"]
    return Case(data, near=(fmean(_numbers(at, "temp")),))


def weather_wind_total(data: bytes) -> Case:
    at = [r for r in _rows(data) if r["year"] == YEAR]
    return Case(data, (str(len(at)),), near=(sum(_numbers(at, "wind_speed")),))


# ---------------------------------------------------------------- GeoJSON (nativejson-benchmark)


def _rings(data: bytes) -> list[list[list[float]]]:
    features = json.loads(data)["features"]
    return [ring for f in features for ring in f["geometry"]["coordinates"]]


def canada_rings(data: bytes) -> Case:
    return Case(data, (str(len(_rings(data))),))


def canada_points(data: bytes) -> Case:
    return Case(data, (str(sum(len(ring) for ring in _rings(data))),))


def canada_north(data: bytes) -> Case:
    return Case(data, near=(max(lat for ring in _rings(data) for _lon, lat in ring),))


# ---------------------------------------------------------------- HTML (Python 3.11 documentation)


def entry_text(data: bytes, anchor: str) -> str:
    """The text of one documented object: its `<dt id=anchor>` up to the next object's signature, tags removed."""
    page = data.decode()
    start = page.index(f'id="{anchor}"')
    end = page.find('<dt class="sig', start + 1)
    return html.unescape(re.sub(r"<[^>]+>", "", page[start : end if end > 0 else None]))


def fullmatch_added(data: bytes) -> Case:
    found = re.search(r"New in version (\d+\.\d+)", entry_text(data, "re.fullmatch"))
    return Case(data, (found.group(1),) if found else ())


def loads_encoding_removed(data: bytes) -> Case:
    pattern = r"Changed in version (\d+\.\d+): The keyword argument encoding has been removed"
    found = re.search(pattern, entry_text(data, "json.loads"))
    return Case(data, (found.group(1),) if found else ())


# ---------------------------------------------------------------- the questions


def _logs() -> Iterator[Question]:
    yield Question(
        "apache-errors",
        "Apache_2k.log",
        "log",
        "count",
        "How many lines in this Apache log are [error] level?",
        apache_errors,
    )
    yield Question(
        "apache-forbidden",
        "Apache_2k.log",
        "log",
        "when/which",
        "When did the first 'Directory index forbidden by rule' error happen, and which client IP caused it?",
        apache_first_forbidden,
        quick=True,
    )
    yield Question(
        "linux-ssh-fails",
        "Linux_2k.log",
        "log",
        "count",
        "How many sshd(pam_unix) authentication failure lines does this syslog have?",
        linux_ssh_failures,
    )
    yield Question(
        "linux-boot",
        "Linux_2k.log",
        "log",
        "when/which",
        "At what time did the kernel log its 'Linux version' line (the boot), and which kernel version booted?",
        linux_boot,
    )
    yield Question(
        "zk-warns",
        "Zookeeper_2k.log",
        "log",
        "count",
        "How many WARN lines does this ZooKeeper log have?",
        zookeeper_warns,
    )
    yield Question(
        "zk-first-error",
        "Zookeeper_2k.log",
        "log",
        "when/which",
        "What is the time of the first ERROR line in this ZooKeeper log, and which class logged it?",
        zookeeper_first_error,
    )


def _tables() -> Iterator[Question]:
    csv_type = "text/csv"
    yield Question(
        "airport-alt",
        "airports.csv",
        "CSV",
        "lookup",
        f"What is the name and the altitude (alt) of the airport with faa code {AIRPORT}?",
        airport_altitude,
        csv_type,
        quick=True,
    )
    yield Question(
        "airports-alaska",
        "airports.csv",
        "CSV",
        "count",
        "How many airports have tzone America/Anchorage?",
        airports_in_alaska,
        csv_type,
    )
    yield Question(
        "weather-avg-temp",
        "weather.csv",
        "CSV with NA",
        "average",
        "What is the average temp at origin EWR, leaving out the hours whose temp is missing?",
        weather_average_temp,
        csv_type,
    )
    yield Question(
        "weather-wind-sum",
        "weather.csv",
        "CSV with NA",
        "count+sum",
        f"How many hourly rows are from year {YEAR}, and what is their total wind_speed (missing values left out)?",
        weather_wind_total,
        csv_type,
        quick=False,  # 2.9 MB: every strategy over it costs minutes on the offline model; full runs only
    )


def _documents() -> Iterator[Question]:
    geo, page = "application/json", "text/html"
    yield Question(
        "canada-rings",
        "canada.json",
        "GeoJSON",
        "count",
        "How many rings (coordinate arrays) does the Polygon geometry of the Canada feature have?",
        canada_rings,
        geo,
        quick=False,  # 2.2 MB: as above
    )
    yield Question(
        "canada-points",
        "canada.json",
        "GeoJSON",
        "count",
        "How many coordinate points (longitude, latitude pairs) does the Canada border have in all its rings?",
        canada_points,
        geo,
    )
    yield Question(
        "canada-north",
        "canada.json",
        "GeoJSON",
        "max",
        "What is the northernmost latitude (the largest latitude) among the Canada border's coordinates?",
        canada_north,
        geo,
    )
    yield Question(
        "re-fullmatch",
        "re.html",
        "HTML",
        "lookup",
        "In which Python version was re.fullmatch() added?",
        fullmatch_added,
        page,
    )
    yield Question(
        "json-encoding",
        "json.html",
        "HTML",
        "when/which",
        "In which Python version was the encoding keyword argument of json.loads() removed?",
        loads_encoding_removed,
        page,
        quick=True,
    )


def questions() -> list[Question]:
    """Every corpus question, in the order the table shows them."""
    return [*_logs(), *_tables(), *_documents()]


def corpus_scenarios(root: Path | None = None, *, quick: bool = False) -> list[Scenario]:
    """The corpus's scenarios (the quick subset when `quick`); none when the corpus is absent outside CI."""
    found = root or corpus_dir(ROOT)
    if found is None:
        return []
    return [q.scenario(found) for q in questions() if q.quick or not quick]


def listing(root: Path) -> list[dict[str, Any]]:
    """Each question with its computed answer: what the test on literal answers reads."""
    out = []
    for q in questions():
        case = q.answer((root / q.file).read_bytes())
        out.append(
            {"name": q.name, "file": q.file, "ask": q.ask, "request": q.request, "must": case.must, "near": case.near}
        )
    return out


def main() -> int:
    root = corpus_dir(ROOT)
    if root is None:
        print("no corpus found (../shared/corpus or TOOLOUT_CORPUS_DIR)", file=sys.stderr)
        return 2
    print(json.dumps(listing(root), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
