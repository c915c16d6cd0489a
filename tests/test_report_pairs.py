"""`spikeport report` on every combination of the run reports the demo writes (issue 27): every pair and all four,
with and without the GPU baseline, in an 80-column terminal and as HTML; no combination fails, no line is wider
than the terminal, and a ratio over zero is '-' with its reason."""

from __future__ import annotations

import itertools
import json

import pytest

from spikeport.cli import main

pytestmark = [pytest.mark.lava, pytest.mark.slow]


def combinations(runs):
    return [*itertools.combinations(runs, 2), tuple(runs)]


@pytest.mark.parametrize("gpu", [True, False], ids=["gpu", "no-gpu"])
def test_every_pair_and_all_four(demo_reports, tmp_path, capsys, monkeypatch, gpu):
    monkeypatch.setenv("COLUMNS", "80")
    for i, runs in enumerate(combinations(demo_reports.runs)):
        html, js = tmp_path / f"{i}.html", tmp_path / f"{i}.json"
        flags = ["--gpu", "h100", "--detail"] if gpu else ["--no-gpu", "--detail"]  # every table, at 80 columns
        assert main(["report", *map(str, runs), *flags, "--html", str(html), "--json", str(js)]) == 0, runs
        out = capsys.readouterr().out
        lines = [line for line in out.splitlines() if str(tmp_path) not in line]  # a long path cannot wrap
        assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80][:3]
        assert "…" not in out and "None" not in out
        summary = json.loads(js.read_text())
        assert len(summary["runs"]) == len(runs)
        assert len(summary["models"]) == len({json.loads(r.read_text())["artifact_digest"] for r in runs})
        assert all(r["chip"]["cores"] > 0 for r in summary["runs"])  # check-hw on each artifact
        assert "<table data-table='answer'>" in html.read_text()
        modes = {(b["mode"], b["batch"]) for r in summary["runs"] for b in r["gpu"]}
        assert modes == ({("latency", 1), ("throughput", 256)} if gpu else set())
        assert ("latency mode" in out and "throughput mode" in out) == gpu  # each labelled in the tables
        ratio = summary["memory"]["runs_ratio"]
        if ratio is not None:  # ssa and lrf_dyn: the chip-native lowerings hold no attention state
            assert ratio["ratio"]["attention_state_bytes"] is None
            assert ratio["ratio_reasons"]["attention_state_bytes"] == "nothing to compare: both are 0"
            assert "attention state - (nothing to compare: both are 0)" in " ".join(out.split())
