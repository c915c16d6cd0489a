"""Issue 41 requirement 3: the deploy side without torch. In the Python 3.10 + upstream lava-nc environment (no
torch, `make test-lava310`), an artifact converted by the main environment runs on the reference and on Lava, on
its own data set (digits, read by spikeport.data), and check-hw, bundle and inspect read it."""

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
    artifact = Path(ARTIFACTS) / "lrf_dyn.spk.h5"
    spikeport("run", str(artifact), "--backend", backend, "--samples", "2", "--json", "run.json", cwd=tmp_path)
    report = json.loads((tmp_path / "run.json").read_text())
    assert report["samples"] == 2 and len(report["predictions"]) == 2
    assert report["accuracy"] is not None  # scored against the digits test labels
    if backend == "lava":  # the same digits, the same spikes: the same predictions as the reference
        spikeport("run", str(artifact), "--backend", "reference", "--samples", "2", "--json", "ref.json", cwd=tmp_path)
        assert json.loads((tmp_path / "ref.json").read_text())["predictions"] == report["predictions"]


@needs_results
def test_check_hw_bundle_and_inspect_without_torch(tmp_path):
    artifact = Path(ARTIFACTS) / "lrf_dyn.spk.h5"
    assert "fits" in spikeport("check-hw", str(artifact), cwd=tmp_path).stdout
    spikeport("bundle", str(artifact), "--out", "bundle", "--samples", "2", "--dataset", "digits", "--quiet",
              cwd=tmp_path)  # fmt: skip
    assert (tmp_path / "bundle" / "inputs.npy").is_file() and (tmp_path / "bundle" / "labels.npy").is_file()
    assert spikeport("inspect", str(artifact), cwd=tmp_path).stdout.strip()
