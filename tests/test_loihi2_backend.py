"""--backend loihi2: the hardware plan on Loihi 2 where lava-loihi is installed; without it, the same plan on
Loihi2SimCfg with simulated embedded IO, said on the first line, and what is missing for the chip and how INRC
access works."""

import dataclasses

import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import BackendUnavailableError
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2 import backend as loihi2

NO_LOIHI = bool(loihi2.missing())


@pytest.mark.skipif(not NO_LOIHI, reason="lava-loihi is installed here")
def test_require_loihi2_names_what_is_missing_and_the_access_route():
    with pytest.raises(BackendUnavailableError) as err:
        loihi2.require_loihi2()
    text = str(err.value)
    assert "lava-loihi" in text and loihi2.NC_COMPILER in text and "Loihi 2 system" in text
    assert "INRC" in text and "vLab" in text and "sinfo" in text and "--backend lava" in text


@pytest.mark.lava
@pytest.mark.skipif(not NO_LOIHI, reason="lava-loihi is installed here")
def test_cli_runs_the_plan_simulated_and_says_so_first(tmp_path, capsys, monkeypatch):
    import json

    from spikeport.cli import main
    from spikeport.ir import artifact

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    art = artifact.write(graph, tmp_path / "m.spk.h5")
    report = tmp_path / "hw.json"
    rc = main(["run", str(art), "--backend", "loihi2", "--samples", "2", "--json", str(report)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert err.splitlines()[0].startswith("loihi2: lava-loihi is not installed here") and "simulated embedded IO" in err
    d = json.loads(report.read_text())
    assert d["executor"] == "loihi2-sim" and d["hardware"]["embedded_io"] == "simulated embedded IO"
    # digits' biases need 15 bits here, past Loihi 2's 13: the adapter drive, said once (issue 42)
    assert d["hardware"]["outputs_identical"] is True and d["hardware"]["drive"] == "adapter"
    assert err.count("spikeport run: note: input drive adapter: these samples' biases need 15 signed bits") == 1
    # the drive and the read states from the command line
    assert main(["run", str(art), "--backend", "loihi2", "--samples", "1", "--input-drive", "adapter",
                 "--read-state", "block.1.mlp.fc2_lif", "--json", str(report)]) == 0  # fmt: skip
    d = json.loads(report.read_text())["hardware"]
    assert d["drive"] == "adapter" and d["states_identical"] is True and d["plan"]["states"] == ["block.1.mlp.fc2_lif"]
    capsys.readouterr()
    # --compare reference as the README writes it: the plan compares its own outputs and read states every run (a chip
    # has no per-layer recorders), and the verdict is on the result line, as Lava's is
    argv = ["run", str(art), "--backend", "loihi2", "--samples", "2", "--compare", "reference", "--read-state",
            "block.1.mlp.fc2_lif", "--json", str(report)]  # fmt: skip
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(loihi2-sim), bit-exact with the reference (its outputs every time step and the read states" in out
    assert RunReport.from_json(report).identical is True
    # a difference makes the verdict and the exit status say so
    from spikeport.runtime import targets

    real = targets._run_loihi2

    def tampered(*a, **kw):
        r = real(*a, **kw)
        r.hardware.outputs_identical = False
        r.hardware.first_mismatch = {"output": "head.token_sum", "sample": 1, "time_step": 2, "index": 0, "value": 3,
                                     "expected": 4}  # fmt: skip
        return r

    monkeypatch.setitem(targets.TARGETS, "loihi2", dataclasses.replace(targets.TARGETS["loihi2"], execute=tampered))
    assert main(argv[:-2]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "DIFFERS from the reference (first at output head.token_sum, sample 1, time step 2)" in out
    assert "FIRST MISMATCH" in out and "loihi2-sim 3 vs reference 4" in out
