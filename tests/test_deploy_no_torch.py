"""Issue 41 requirement 3: the deploy side without torch. In the Python 3.10 + upstream lava-nc environment (no
torch, `make test-lava310`), an artifact converted by the main environment runs on the reference and on Lava, on
its own data set (digits, read by spikeport.data), check-hw, bundle and inspect read it, and report reads the run
report, leaving out with a note what needs torch."""

import html
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lava, pytest.mark.lava310]
ARTIFACTS = os.environ.get("SPIKEPORT_LAVA310_DIR")
needs_results = pytest.mark.skipif(
    not ARTIFACTS, reason="needs the main environment's results: run `make test-lava310`"
)


def spikeport(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "spikeport", *args], capture_output=True, text=True, cwd=cwd, timeout=900
    )
    assert done.returncode == 0, f"spikeport {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done


@needs_results
@pytest.mark.parametrize("backend", ["reference", "lava"])
def test_run_on_its_data_set_without_torch(backend, tmp_path):
    if sys.version_info < (3, 11):
        assert importlib.util.find_spec("torch") is None, "the Python 3.10 target has no torch"
    artifact = Path(ARTIFACTS).resolve() / "lrf_dyn.spk.h5"  # the commands run in tmp_path
    spikeport("run", str(artifact), "--backend", backend, "--samples", "2", "--json", "run.json", cwd=tmp_path)
    report = json.loads((tmp_path / "run.json").read_text())
    assert report["samples"] == 2 and len(report["predictions"]) == 2
    assert report["accuracy"] is not None  # scored against the digits test labels
    if backend == "lava":  # the same digits, the same spikes: the same predictions as the reference
        spikeport("run", str(artifact), "--backend", "reference", "--samples", "2", "--json", "ref.json", cwd=tmp_path)
        assert json.loads((tmp_path / "ref.json").read_text())["predictions"] == report["predictions"]


@needs_results
def test_check_hw_bundle_and_inspect_without_torch(tmp_path):
    artifact = Path(ARTIFACTS).resolve() / "lrf_dyn.spk.h5"  # the commands run in tmp_path
    assert "fits" in spikeport("check-hw", str(artifact), cwd=tmp_path).stdout
    spikeport("bundle", str(artifact), "--out", "bundle", "--samples", "2", "--dataset", "digits", "--quiet",
              cwd=tmp_path)  # fmt: skip
    assert (tmp_path / "bundle" / "inputs.npy").is_file() and (tmp_path / "bundle" / "labels.npy").is_file()
    assert spikeport("inspect", str(artifact), cwd=tmp_path).stdout.strip()


@needs_results
def test_report_without_torch_says_what_it_left_out(tmp_path):
    """`spikeport report` on a run report written here: the page, the summary and the text are written; without
    torch the GPU baseline and the analytic memory are left out (no figure made up) and the report says so and
    why, on the first screen's caveats (and without matplotlib, each plot's place says so)."""
    artifact = Path(ARTIFACTS).resolve() / "lrf_dyn.spk.h5"  # the commands run in tmp_path
    spikeport("run", str(artifact), "--backend", "reference", "--samples", "2", "--json", "run.json", cwd=tmp_path)
    text = spikeport(
        "report", "run.json", "--html", "report.html", "--json", "summary.json", "--no-cache", cwd=tmp_path
    ).stdout
    text = " ".join(text.split())  # the terminal's wrapping undone
    page = html.unescape((tmp_path / "report.html").read_text())
    summary = json.loads((tmp_path / "summary.json").read_text())
    run = summary["runs"][0]
    assert run["energy"] and summary["memory"]["claim"] is not None  # what needs no torch is there
    left_out = ("GPU baseline not estimated: torch is not installed", "analytic memory not worked out: torch is not")
    if importlib.util.find_spec("torch") is None:
        assert run["gpu"] == [] and summary["memory"]["analytic"] is None
        for what in left_out:
            assert any(c.startswith(what) for c in summary["caveats"]), summary["caveats"]
            assert what in text and what in page
        assert "pip install 'spikeport[train]'" in text and "pip install 'spikeport[train]'" in page
    else:
        assert run["gpu"] and summary["memory"]["analytic"] is not None
        assert not any(what in text or what in page for what in left_out)
    if importlib.util.find_spec("matplotlib") is None:
        assert "plot left out: matplotlib is not installed here" in page and "<svg" not in page
