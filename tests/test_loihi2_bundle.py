"""spikeport bundle: a folder an INRC member runs as it is. Built here, run.sh runs it with the first python on PATH
(this environment: the plan's simulation, said first), writes result.json that `spikeport report` reads; a folder
named with spaces, quotes, $() and non-ASCII runs as any other; files are checked against their digests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import quantized_graph, random_images, spiky_model

pytestmark = pytest.mark.lava

WEIRD = 'b dir "q" $(touch pwned) \u00e9'


@pytest.fixture(scope="module")
def art(tmp_path_factory):
    from spikeport.ir import artifact

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    return artifact.write(graph, tmp_path_factory.mktemp("art") / "m.spk.h5")


def run_sh(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)  # the bundle's own lib/ must be what runs
    return subprocess.run(["bash", str(folder / "run.sh"), *args], capture_output=True, text=True, env=env,
                          cwd=folder.parent, timeout=600)  # fmt: skip


def test_bundle_runs_as_it_is_and_report_reads_its_result(art, tmp_path, capsys):
    from spikeport.cli import main

    out = tmp_path / WEIRD
    assert main(["bundle", str(art), "--out", str(out), "--samples", "2", "--read-state", "block.1.mlp.fc2_lif"]) == 0
    said = capsys.readouterr().out
    assert "run it there: bash '" in said  # the folder quoted for the shell
    manifest = json.loads((out / "bundle.json").read_text())
    assert manifest["samples"] == 2 and manifest["partition"] == "oheogulch" and manifest["states"]
    assert {"run.sh", "run.slurm", "README.md", "requirements-deploy.txt", "lib"} <= {p.name for p in out.iterdir()}
    assert "torch" not in (out / "requirements-deploy.txt").read_text().replace("no torch", "")
    assert "--partition=oheogulch" in (out / "run.slurm").read_text()
    done = run_sh(out)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("spikeport bundle: SIMULATION (Loihi2SimCfg, simulated embedded IO)")
    assert "identical to the reference at every step (2 samples)" in done.stdout and lines[-1] == "wrote result.json"
    assert not (tmp_path / "pwned").exists() and not (out.parent / "pwned").exists()
    result = json.loads((out / "result.json").read_text())
    assert result["executor"] == "loihi2-sim" and result["hardware"]["outputs_identical"] is True
    assert result["hardware"]["states_identical"] is True and result["samples"] == 2
    assert main(["report", str(out / "result.json"), "--quiet"]) == 0
    # the README's expected first line is the one the run printed
    assert lines[0].split(":")[0] + ":" in (out / "README.md").read_text()


def test_bundle_folder_is_refused_or_replaced_whole_and_files_are_checked(art, tmp_path, capsys):
    from spikeport.cli import main

    out = tmp_path / "b"
    assert main(["bundle", str(art), "--out", str(out), "--samples", "1"]) == 0
    assert main(["bundle", str(art), "--out", str(out), "--samples", "1"]) == 2
    assert "already holds files" in capsys.readouterr().err
    (out / "stray.txt").write_text("x")
    assert main(["bundle", str(art), "--out", str(out), "--samples", "1", "--force"]) == 0
    assert not (out / "stray.txt").exists() and [p.name for p in tmp_path.iterdir()] == ["b"]  # no temporary left
    with open(out / "inputs.npy", "r+b") as f:  # a changed input: the run refuses before running anything
        f.seek(-1, os.SEEK_END)
        f.write(b"\x01")
    done = run_sh(out)
    assert done.returncode == 2 and "inputs.npy: missing or changed" in done.stderr
    assert not (out / "result.json").exists()


def test_bundle_readme_says_where_check_hws_warnings_are():
    """check-hw's verdict ends '(2 warnings, 1 pitfall above)', true in check-hw's output; the bundle's README does not
    hold those lines, so it says where they are."""
    from spikeport.runtime.loihi2.bundle import verdict_here

    said = verdict_here("OK: fits one Oheo Gulch chip, ~100 cores (2 warnings, 1 pitfall above)")
    assert "above" not in said and "(2 warnings, 1 pitfall: `spikeport check-hw` on the artifact prints them" in said
    assert verdict_here("OK: ~5 cores") == "OK: ~5 cores"
