"""One definition per term (issue 36): the report's terms (``report.glossary.TERMS``) and every counter's label say
the same in docs/glossary.md as on the page, and the report never names two figures alike: check-hw's chip state
and the executor's model state, the attention state of the lowering that ran and the papers' streaming one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spikeport import counters
from spikeport.cli import main
from spikeport.report.glossary import TERMS
from test_report_cli import _write, tiny_run_report

GLOSSARY = Path(__file__).resolve().parents[1] / "docs" / "glossary.md"


def flat(text: str) -> str:
    return " ".join(text.split())


def test_glossary_page_says_what_the_report_says():
    doc = flat(GLOSSARY.read_text())
    for term, definition in TERMS.items():
        assert f"- **{term}**: {flat(definition)}." in doc, term
    for c in counters.COUNTERS:  # the per-layer tables' headings
        assert f"- **{c.label}**: {flat(c.doc)}" in doc, c.name
    defined = re.findall(r"^- \*\*([^*]+)\*\*:", GLOSSARY.read_text(), re.M)
    assert len(defined) == len(set(defined)), sorted(t for t in defined if defined.count(t) > 1)  # one definition


@pytest.mark.parametrize("detail", [False, True], ids=["first-screen", "detail"])
def test_report_names_each_state_once(tmp_path, capsys, monkeypatch, detail):
    monkeypatch.setenv("COLUMNS", "200")
    run = _write(tmp_path, "run.json", tiny_run_report())
    html = tmp_path / "r.html"
    assert main(["report", run, "--no-gpu", "--html", str(html), *(["--detail"] if detail else [])]) == 0
    out = capsys.readouterr().out
    page = html.read_text()
    for text in (out, page):
        assert "neuron state" not in text  # check-hw's chip state and the executor's LIF state are told apart
    if detail:
        assert "model state" in out and "LIF state" in out and "streaming attention state" in out
    assert "docs/glossary.md" in out
    for term in TERMS:
        assert f"<dt>{term}</dt>" in page
