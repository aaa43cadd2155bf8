"""The two real web pages of the corpus (Python documentation) and their visible text, computed from the files.

The corpus is found as every test finds it (`toolout.devstack.datasets.corpus_dir`: `../shared/corpus` beside
the checkout, or `TOOLOUT_CORPUS_DIR`); without it there are no pages, and the tests over them skip (under
`CI=true` it fails).

The visible text is what a browser shows: every text node outside `<head>`, scripts, styles and templates,
whitespace collapsed — counted with the stdlib's HTML parser, independently of the converter under test.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from extraction.documents.tokens import count_tokens
from tests.corpus_files import CORPUS

PAGES = [CORPUS / "re.html", CORPUS / "json.html"] if CORPUS else []
HIDDEN = frozenset({"head", "script", "style", "template", "noscript"})
MAX_TEXT_RATIO = 1.5
"""Every strategy reads at most this many times the page's visible-text tokens (issue 29)."""


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden, self.parts = 0, list[str]()

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.hidden += tag in HIDDEN

    def handle_endtag(self, tag: str) -> None:
        self.hidden = max(0, self.hidden - (tag in HIDDEN))

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def visible_text(page: Path) -> str:
    parser = _Visible()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return " ".join(" ".join(parser.parts).split())


def visible_tokens(page: Path) -> int:
    return count_tokens(visible_text(page))


def a_sentence(page: Path) -> str:
    """A line of the page's body text: the first line of the first paragraph (`<p>`) without markup or entities."""
    html = page.read_text(encoding="utf-8")
    for chunk in html.split("<p>")[1:]:
        line = chunk.split("</p>", 1)[0].split("\n", 1)[0].strip()
        if "<" not in line and "&" not in line and len(line) > 30:
            return line
    raise AssertionError(f"no plain paragraph in {page}")
