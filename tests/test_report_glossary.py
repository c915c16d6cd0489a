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


@pytest.mark.lava
def test_each_state_is_one_number_wherever_shown(demo_reports, tmp_path):
    """Issue 43: LIF state, chip state and streaming attention state read the same in every section, or beside what
    makes them differ: the executors' LIF state is the model's neurons in check-hw's chip state (whose other parts are
    named) and the analytic LIF state @Loihi; the analytic streaming attention state @Loihi is the blocks x the
    claim's per-layer figure, with the same ratio."""
    from spikeport import api

    s = api.report([str(r) for r in demo_reports.runs], gpu_baseline=False, json=tmp_path / "r.json")
    rows = {r["figure"]: r for r in s.memory.analytic.summary}
    for m in s.models:
        counted = next(r for r in s.runs if r.source == m.counts_from).state_memory.neuron_state_bytes
        assert m.chip is not None and m.chip.state_parts["model neurons"] == counted > 0, m.name
        assert sum(m.chip.state_parts.values()) == m.chip.state_bytes_on_chip  # the parts add up to the chip state
        assert rows["LIF state @Loihi"]["bytes"][m.attention] == counted
    claim = s.memory.claim
    core = rows["attn core state @Loihi"]["bytes"]
    assert core["ssa"] == claim.layers * claim.ssa_bytes and core["lrf_dyn"] == claim.layers * claim.dyn_bytes
    assert rows["attn core state @Loihi"]["ratio_to_ssa"]["lrf_dyn"] == pytest.approx(claim.ratio.value)
    page = (tmp_path / "r.json").read_text()
    assert '"LIF state @Loihi"' in page and '"model neurons"' in page


def test_report_rows_follow_the_kernel_records_roles(monkeypatch):
    """The neuron and attention rows of the state table and the firing rate are chosen by the role an op's kernel
    record declares, not by its name: a new neuron op (here a copy of lif's record under another name) lands in the
    neuron row as soon as it declares the role, and recurrent_lif, rf and sigma_delta count there too."""
    from dataclasses import replace

    from spikeport.ir.kernels import KERNELS, fires, kernel, role
    from spikeport.ir.kernels.base import KernelRole
    from spikeport.report.summary import state_memory
    from spikeport.run_report import RunReport

    lif = kernel("lif")
    newcomer = replace(lif, spec=replace(lif.spec, op="izhikevich"))
    monkeypatch.setitem(KERNELS._table, "izhikevich", newcomer)
    assert role("izhikevich") is KernelRole.NEURON and fires("izhikevich")
    assert {op: role(op) for op in ("recurrent_lif", "rf", "sigma_delta", "dendritic", "attention", "conv")} == {
        "recurrent_lif": KernelRole.NEURON,
        "rf": KernelRole.NEURON,
        "sigma_delta": KernelRole.NEURON,
        "dendritic": KernelRole.ATTENTION,
        "attention": KernelRole.ATTENTION,
        "conv": KernelRole.OTHER,
    }
    data = tiny_run_report()
    before = state_memory(RunReport.from_dict(data))
    extra = dict(data["layers"][-2], name="block.0.izh", op="izhikevich", state_bytes=1000)
    data["layers"].insert(len(data["layers"]) - 1, extra)
    after = state_memory(RunReport.from_dict(data))
    assert after.neuron_state_bytes == before.neuron_state_bytes + 1000
    assert after.attention_state_bytes == before.attention_state_bytes
    assert role("an op of another version") is KernelRole.OTHER and not fires("an op of another version")
