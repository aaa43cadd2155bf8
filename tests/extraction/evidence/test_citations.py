"""The citation form the prompts ask for, read back from an answer, and chunks numbered the way Read numbers lines."""

from __future__ import annotations

from extraction.documents.lines import numbered
from extraction.evidence.citations import last_line_of, number_lines, parse_citations, unique
from extraction.evidence.model import SourceKind
from extraction.texts.report import FinalReport, parse_final_report


def test_citations_are_read_from_plain_bulleted_and_ranged_lines():
    text = "The order failed.\n[L12] payment failed\n- [L40-L42]: text across\n* [L7 - 5] reversed\nno [L9] mid-line"
    cited = [(c.start_line, c.end_line, c.quote) for c in parse_citations(text)]
    assert cited == [(12, 12, "payment failed"), (40, 42, "text across"), (5, 7, "reversed")]


def test_a_cited_answer_still_parses_as_a_final_report():
    nonce = "abc123"
    reply = (
        f'<ai-agent-{nonce}-FINAL format="text">Order ZX-9911 failed.\n[L12] payment failed</ai-agent-{nonce}-FINAL>'
    )
    report = parse_final_report(reply, nonce)
    assert isinstance(report, FinalReport) and report.found
    assert [c.start_line for c in parse_citations(report.content, source=SourceKind.CHUNK)] == [12]


def test_chunks_are_numbered_like_read_from_their_first_line_without_its_padding():
    shown = number_lines("alpha\nbeta\r\ngamma\n", 41)
    assert shown == "41\talpha\n42\tbeta\n43\tgamma"
    assert [line.split("\t", 1)[1] for line in shown.split("\n")] == [
        numbered(n, text).split("\t", 1)[1] for n, text in ((41, "alpha"), (42, "beta"), (43, "gamma"))
    ]
    assert last_line_of("alpha\nbeta\r\ngamma\n", 41) == 43


def test_repeated_citations_are_kept_once():
    cited = parse_citations("[L3] same\n[L3] same \n[L3] other")
    assert [c.quote for c in unique(cited)] == ["same", "other"]
