"""--backend loihi2: the hardware plan on Loihi 2 where lava-loihi is installed; without it, the same plan on
Loihi2SimCfg with simulated embedded IO, said on the first line, and what is missing for the chip and how INRC
access works."""

import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import BackendUnavailableError
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
def test_cli_runs_the_plan_simulated_and_says_so_first(tmp_path, capsys):
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
    # per-layer recorders are a simulation feature: a chip run compares its own outputs, so --compare is refused
    assert main(["run", str(art), "--backend", "loihi2", "--samples", "1", "--compare", "reference"]) == 2
    assert "--compare" in capsys.readouterr().err
