"""The HTML report: self-contained, and rendered by a real headless browser (Debian's chromium) with its
tables and plots. Built from real run reports of converted digits-tiny networks (reference simulator)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from spikeport.gather.stage import summarize as build_summary
from spikeport.report.html import write_html
from spikeport.report.inputs import ReportOptions

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless browser check needs Debian's chromium: apt-get install -y chromium"
)


@pytest.fixture(scope="module")
def summary():
    import numpy as np

    from conftest import quantized_graph, random_images, spiky_model
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator

    runs = []
    for att in ("ssa", "lrf_dyn"):
        graph = quantized_graph(spiky_model(att), random_images(16, seed=1))
        runs.append(
            ReferenceSimulator(graph)
            .run(to_channels_last(random_images(6, seed=2).numpy()), np.arange(6) % 10)
            .to_dict()
        )
    return build_summary(
        runs, ["loihi2", "cmos45nm"], ["h100"], sources=["ssa.json", "lrf_dyn.json"], options=ReportOptions()
    )  # a ReportSummary (typed records; its views are report.terminal and report.html)


# the models compared, then per run whose counts price a model (here both: one run each) its layers and energy, and
# the SSA vs LRF-Dyn memory plot
EXPECTED_PLOTS = ["models", "layers-0", "energy-0", "layers-1", "energy-1", "memory"]
EXPECTED_TABLES = {
    "answer",
    "memory-chip",
    "claim",
    "runs",
    "layers-0",
    "energy-0",
    "gpu-0",
    "comparison-0",
    "layers-1",
    "energy-1",
    "gpu-1",
    "comparison-1",
    "memory-runs",
    "memory-analytic",
    "profiles",
}


class Dom(HTMLParser):
    """Plots (figure.plot with an svg inside, and the svg's drawn paths), tables and the visible text."""

    def __init__(self):
        super().__init__()
        self.plots: list[dict] = []
        self.tables: list[str] = []
        self.text: list[str] = []
        self.external: list[str] = []
        self._in_plot = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and "plot" in (a.get("class") or "").split():
            self.plots.append({"name": a.get("data-plot"), "svg": 0, "paths": 0})
            self._in_plot = True
        elif self._in_plot and tag == "svg":
            self.plots[-1]["svg"] += 1
        elif self._in_plot and tag in ("path", "rect", "use"):
            self.plots[-1]["paths"] += 1
        elif tag == "table":
            self.tables.append(a.get("data-table"))
        for key in ("src", "href", "xlink:href"):
            if a.get(key) and not a[key].startswith(("#", "data:")):
                self.external.append(f"{tag} {key}={a[key]}")
        if tag in ("script", "link", "iframe"):
            self.external.append(tag)

    def handle_endtag(self, tag):
        if tag == "figure":
            self._in_plot = False

    def handle_data(self, data):
        self.text.append(data)


def parse(text: str) -> Dom:
    dom = Dom()
    dom.feed(text)
    return dom


def test_page_is_self_contained(summary, tmp_path):
    path = write_html(summary, tmp_path / "out" / "report.html")
    assert sorted(p.name for p in path.parent.iterdir()) == ["report.html"]  # atomic: no temp left
    text = path.read_text()
    dom = parse(text)
    assert dom.external == []  # no scripts, stylesheets or fetched resources
    assert not re.search(r"url\((?!#)", text)  # nor CSS urls
    assert [p["name"] for p in dom.plots] == EXPECTED_PLOTS and all(p["svg"] == 1 for p in dom.plots)
    assert EXPECTED_TABLES <= set(dom.tables)
    body = " ".join(dom.text)
    for needle in (
        "estimated (op counts x cost table loihi2)",
        "literature convention",
        "with SRAM accesses, no data reuse",
        "reference: the reference integer simulator",
        "estimated (roofline from hw profile h100",
        "SSA K^T V",
        "LRF-Dyn X",
        "token-serial",
        "Read before quoting",
    ):
        assert needle in body, needle


def test_single_run_still_has_memory_comparison(summary, tmp_path):
    from dataclasses import replace

    one = replace(summary, runs=summary.runs[:1])
    dom = parse(write_html(one, tmp_path / "one.html").read_text())
    assert [p["name"] for p in dom.plots] == EXPECTED_PLOTS[:3] + ["memory"]  # analytic SSA vs LRF-Dyn


def _text(cell: str) -> str:
    """A table cell's text: tags dropped, entities read."""
    import html as html_lib

    return " ".join(html_lib.unescape(re.sub("<[^>]+>", " ", cell)).split())


def test_answer_has_one_column_per_model_and_the_ratios(summary, tmp_path):
    """The first table: a column per model, the energy ratio between the models and the GPU / chip ratio in both
    modes; the headline says the accounting and where loihi2's per-op energies come from; the terms close the page."""
    import html as html_lib

    text = write_html(summary, tmp_path / "r.html").read_text()
    table = re.search(r"<table data-table='answer'>(.*?)</table>", text, re.S)[1]
    cells = [
        [_text(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r)] for r in re.findall("<tr>(.*?)</tr>", table)
    ]
    assert cells[0] == ["", "ssa", "lrf_dyn"]
    rows = {r[0]: r[1:] for r in cells[1:]}
    assert rows["energy / ssa's (loihi2)"][0] == "1 (the base)" and rows["energy / ssa's (loihi2)"][1].endswith("x")
    for mode, batch in (("latency", 1), ("throughput", 256)):  # the GPU as one figure, its ratio to the chip
        gpu = rows[f"GPU {mode} mode, batch {batch} (h100, estimated, power model)"]
        for model, cell in zip(summary.models, gpu, strict=True):
            [g] = [g for g in model.gpu if g.mode == mode]
            assert re.match(r"[\d.]+ [mu]?J \(([\d,.]+)x loihi2\); ", cell), cell
            assert g.over_chip == pytest.approx(g.energy_J / model.energy[0].energy_J)
    energy = rows["loihi2 energy (estimated, static included)"]
    dyn_over_ssa = summary.ratios[0].ratio.value
    assert summary.ratios[0].name == "lrf_dyn / ssa on loihi2" and energy[0] != energy[1]
    assert summary.models[1].energy[0].energy_J / summary.models[0].energy[0].energy_J == pytest.approx(dyn_over_ssa)
    headline = " ".join(html_lib.unescape(h) for h in re.findall(r"<p class='headline'>(.*?)</p>", text))
    assert "static power on both sides" in headline and "Loihi 1 value (Davies et al." in headline
    assert "lrf_dyn / ssa = " in headline and "The GPU in throughput mode (batch 256; h100, estimated" in headline
    assert "Latency mode (batch 1) is in the table below" in headline  # the headline compares in throughput mode
    assert "TDP x time" not in headline  # the upper bound is a caveat, not the figure
    caveats = html_lib.unescape(text[text.index("id='caveats'") :])
    assert "lies between idle power x time" in caveats and "and TDP x time" in caveats
    assert "<h2 id='terms'>Terms</h2>" in text and "<dt>chip state</dt>" in text


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


@needs_chromium
def test_renders_in_headless_chromium(summary, tmp_path):
    path = write_html(summary, tmp_path / "report.html")
    url = path.resolve().as_uri()
    dom = parse(_chromium(tmp_path, "--dump-dom", url).stdout)  # the DOM after the browser parsed it
    assert [p["name"] for p in dom.plots] == EXPECTED_PLOTS
    assert all(p["svg"] == 1 and p["paths"] > 10 for p in dom.plots), dom.plots
    assert EXPECTED_TABLES <= set(dom.tables)
    assert "estimated (op counts x cost table loihi2)" in " ".join(dom.text)

    shot = tmp_path / "shot.png"
    opened = tmp_path / "opened.html"  # the per-layer tables and plots are folded: open them for the picture
    opened.write_text(path.read_text().replace("<details>", "<details open>"))
    _chromium(tmp_path, "--hide-scrollbars", "--window-size=1280,4800", f"--screenshot={shot}", opened.as_uri())
    import numpy as np
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 4800)
    px = np.asarray(img).reshape(-1, 3).astype(int)
    ink = float(np.mean(px.sum(axis=1) < 700))
    plot_blue = int(np.sum(np.all(np.abs(px - [0x1F, 0x77, 0xB4]) < 30, axis=1)))
    assert ink > 0.02, f"screenshot nearly blank: {ink:.2%} non-white pixels"
    assert plot_blue > 500, f"the plots' blue bars were not drawn ({plot_blue} pixels)"
    assert len(np.unique(px[::7], axis=0)) > 50  # text, tables and plots, not one flat colour


@needs_chromium
@pytest.mark.lava
@pytest.mark.browser
def test_first_screen_of_the_demo_report_names_the_chip_and_both_gpu_modes(demo_reports, tmp_path):
    """The demo's report (its four run reports: ssa and lrf_dyn on the reference and on Lava, built through the API
    as `make demo` builds them), in a 1280 x 800 window: the headline, the answer table and the memory story per
    variant are on the first screen; the first screen names the cores (or chips) of both variants and both GPU
    modes, each with its batch; the per-layer tables are folded."""
    from spikeport import api

    html = tmp_path / "report.html"
    api.report(demo_reports.runs, html=html, title="spikeport demo: digits-tiny, SSA vs LRF-Dyn")
    probe = (
        "<script>const h = window.innerHeight; const seen = [];"
        "const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);"
        "while (walk.nextNode()) { const r = document.createRange(); r.selectNodeContents(walk.currentNode);"
        "  const b = r.getBoundingClientRect(); if (b.height && b.bottom <= h && b.right <= window.innerWidth)"
        "    seen.push(walk.currentNode.textContent.trim()); }"
        "const t = document.querySelector(\"table[data-table='answer']\").getBoundingClientRect();"
        "const p = document.createElement('pre'); p.id = 'probe';"
        "p.textContent = JSON.stringify({seen: seen, answer: [t.top, t.bottom, t.right], height: h,"
        "  folded: document.querySelectorAll('details:not([open]) table[data-table^=layers]').length});"
        "document.body.appendChild(p);</script>"
    )
    page = tmp_path / "probe.html"
    page.write_text(html.read_text().replace("</body>", probe + "</body>"))
    dom = _chromium(tmp_path, "--window-size=1280,800", "--dump-dom", page.resolve().as_uri()).stdout
    import html as html_lib
    import json

    found = json.loads(html_lib.unescape(re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)[1]))
    top, bottom, right = found["answer"]
    assert 600 < found["height"] <= 800 and 0 < top < bottom <= found["height"] and right <= 1280, found["answer"]
    assert found["folded"] == 4
    screen = " ".join(found["seen"])
    for variant in ("ssa", "lrf_dyn"):  # the headline names each variant's cores
        assert re.search(rf"{variant} needs ~[\d,]+ cores", screen), variant
    cores = [cell for cell in found["seen"] if re.fullmatch(r"~[\d,]+(-[\d,]+)? cores(, \d+ chips?)?", cell)]
    assert len(cores) == 2, cores  # a cores cell per model in the answer table: the four runs are two models
    assert "GPU latency mode, batch 1 (h100, estimated, power model)" in screen
    assert "GPU throughput mode, batch 256 (h100, estimated, power model)" in screen
    assert len(re.findall(r"\(([\d,.]+)x loihi2\)", screen)) == 4  # GPU / loihi2: each model, both modes
    assert re.search(r"lrf_dyn / ssa = [\d.]+x", screen) and "static power on both sides" in screen
    assert "CPU here (ONNX Runtime, measured): batch 1; batch 256" in screen

    shot = tmp_path / "first-screen.png"
    _chromium(tmp_path, "--hide-scrollbars", "--window-size=1280,800", f"--screenshot={shot}", html.as_uri())
    from PIL import Image

    assert Image.open(shot).size == (1280, 800)
    keep = os.environ.get("SPIKEPORT_SCREENSHOTS")  # a folder to keep the picture in, for a person to look at
    if keep:
        shutil.copy(shot, Path(keep) / "demo-report-first-screen.png")


def test_without_torch_the_report_says_what_it_left_out(monkeypatch, tmp_path):
    """Issue 41: a deploy install (numpy, h5py, Lava: no torch, no matplotlib; tests/test_deploy_no_torch.py runs
    one) reports a run without the figures that need torch, the GPU baseline and the analytic memory: none made up,
    each named with why and how to get it first among the caveats; the page says where each plot would be."""
    import numpy as np

    from conftest import quantized_graph, random_images, spiky_model
    from spikeport.gather import torchless
    from spikeport.report import plots
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    run = ReferenceSimulator(graph).run(to_channels_last(random_images(4, seed=2).numpy()), np.arange(4)).to_dict()
    kept = ReportOptions(cache_dir=str(tmp_path / "cache"))
    with_torch = build_summary([run], ["loihi2"], ["h100"], sources=["r.json"], options=kept)
    monkeypatch.setattr(torchless, "torch_missing", lambda: True)
    monkeypatch.setattr(plots, "available", lambda: False)
    # what the report cache holds (worked out where torch was) is read, not left out
    cached = build_summary([run], ["loihi2"], ["h100"], sources=["r.json"], options=kept)
    assert cached.runs[0].gpu == with_torch.runs[0].gpu != [] and cached.memory.analytic == with_torch.memory.analytic
    assert cached.caveats == with_torch.caveats
    s = build_summary([run], ["loihi2"], ["h100"], sources=["r.json"], options=ReportOptions(cache=False))
    assert s.caveats[:2] == [torchless.NO_GPU, torchless.NO_MEMORY]
    assert s.runs[0].gpu == [] and torchless.NO_GPU in s.runs[0].notes
    assert s.memory.analytic is None and s.memory.claim is not None  # the claim needs no torch
    page = write_html(s, tmp_path / "r.html").read_text()
    dom = parse(page)
    assert dom.plots == [] and "<svg" not in page and "memory-analytic" not in dom.tables
    assert page.count("data-plot-missing=") == 3  # models, layers-0, energy-0 (no analytic memory: no memory plot)
    text = " ".join("".join(dom.text).split())
    assert "GPU baseline not estimated: torch is not installed here" in text
    assert "pip install 'spikeport[train]'" in text
