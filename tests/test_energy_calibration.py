"""Loihi 2 energy split as Intel's benchmarks report it (static power x time + dynamic per op), against Intel's one
public measurement with public weights (PilotNet-LIF on Oheo Gulch), and `spikeport calibrate` fitting the profile
to it (scripts/pilotnet_energy.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))


@pytest.fixture(scope="module")
def pilotnet(tmp_path_factory):
    from test_netx_interop import lava_dl_netx_tests

    lava_dl_netx_tests()  # skips where lava-dl's test data is absent
    import pilotnet_energy

    out = tmp_path_factory.mktemp("pilot")
    assert pilotnet_energy.main(["--out", str(out)]) == 0
    return out


def test_pilotnet_lif_estimate_against_intels_measurement(pilotnet, capsys):
    from spikeport.hw_profiles import load_profile
    from spikeport.metrics.energy import estimate
    from spikeport.run_report import RunReport

    run = RunReport.from_json(pilotnet / "pilotnet_lif_measured.json")
    m = run.energy_measured
    assert m is not None and m["total_J"] == pytest.approx(1.661e-3, rel=1e-3)
    assert m["dynamic_J"] == pytest.approx(1.094e-3, rel=1e-3) and m["static_J"] == pytest.approx(0.567e-3, rel=1e-3)
    before = estimate(run, "loihi2", chips=1)
    assert before.static is not None
    # the figures: the dynamic op-count estimate 1.391 mJ, 1.27x the measured dynamic part
    assert before.energy_J == pytest.approx(1.391e-3, rel=2e-3)
    assert before.energy_J / m["dynamic_J"] == pytest.approx(1.27, abs=0.01)
    assert before.total_J / m["total_J"] == pytest.approx(1.18, abs=0.01)  # static at the measured time: 1.00x
    assert before.static.energy_J == pytest.approx(m["static_J"], rel=1e-6)
    # calibrated on this run (one point: the fit reproduces it by construction)
    calibrated = load_profile(pilotnet / "loihi2-calibrated.yaml")
    after = estimate(run, calibrated, chips=1)
    assert after.total_J / m["total_J"] == pytest.approx(1.0, abs=0.005)
    assert after.energy_J / m["dynamic_J"] == pytest.approx(1.0, abs=0.005)
    assert calibrated.get("energy", "synop").confidence == "calibrated"
    assert calibrated.calibration["scale"] == pytest.approx(m["dynamic_J"] / before.energy_J, rel=1e-6)
    assert calibrated.calibration["runs"][0]["source"] == "pilotnet_lif_measured.json"


def test_calibrate_command_and_report_show_the_split(pilotnet, tmp_path, capsys):
    from spikeport.cli import main

    out = tmp_path / "mine.yaml"
    assert main(["calibrate", str(pilotnet / "pilotnet_lif_measured.json"), "--out", str(out), "--name", "mine"]) == 0
    said = capsys.readouterr().out
    assert "per-op energies x 0.78" in said and "wrote" in said
    assert yaml.safe_load(out.read_text())["name"] == "mine"
    report = tmp_path / "r.json"
    assert main(["report", str(pilotnet / "pilotnet_lif_measured.json"), "--profile", "loihi2", "--no-gpu",
                 "--json", str(report)]) == 0  # fmt: skip
    energy = json.loads(report.read_text())["runs"][0]["energy"]
    measured = next(e for e in energy if e["kind"] == "measured")
    estimated = next(e for e in energy if e["profile"] == "loihi2")
    assert measured["label"].startswith("measured by Intel") and measured["static"]["energy_J"] > 0
    assert estimated["total_J"] == pytest.approx(estimated["energy_J"] + estimated["static"]["energy_J"])
    # a run report without the measured split cannot calibrate
    bare = json.loads((pilotnet / "pilotnet_lif_measured.json").read_text())
    del bare["energy_measured"]["static_J"]
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    assert main(["calibrate", str(tmp_path / "bare.json"), "--out", str(tmp_path / "x.yaml")]) == 2
    assert "lacks static_J" in capsys.readouterr().err
