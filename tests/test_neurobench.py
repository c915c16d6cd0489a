"""NeuroBench's metrics (the neurobench package itself) on a converted model's float network, beside spikeport's
integer counts of the artifact on the same images (issue 43): the figures agree where they count the same thing."""

from __future__ import annotations

import json

import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import api
from spikeport.cli import main
from spikeport.errors import ConfigError

pytest.importorskip("neurobench", reason="neurobench is not installed (requirements-nodeps.txt)")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """A digits-tiny lrf_dyn checkpoint whose layers fire, converted (the artifact names its checkpoint)."""
    from spikeport.train import checkpoint as ck

    folder = tmp_path_factory.mktemp("nb")
    model = spiky_model("lrf_dyn")
    path = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": model.state_dict(),
            "epoch": 1,
            "model_config": model.cfg.to_dict(),
            "train_config": {"dataset": "digits"},
        },
        folder / "checkpoint.pt",
    )
    conv = api.convert(path, folder / "build", calibrate=16, samples=8, onnx=False, progress=False)
    return model, conv.artifact_path


def test_neurobench_figures_beside_spikeports(converted):
    model, artifact = converted
    r = api.neurobench(artifact, samples=8, batch_size=4)
    assert r.float_logits_equal and r.samples == 8 and r.neurobench_version == "2.3.0"
    rows = {row.metric: row for row in r.rows}
    # NeuroBench's own static metric: the float model's parameters and buffers in bytes
    floats = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
    assert rows["Footprint"].neurobench == floats and 0.2 < rows["Footprint"].ratio < 0.3  # 8-bit, BN folded
    # the same quantity on both sides: LIF outputs that are zero; synops of spike-fed Linear / Conv layers
    act = rows["ActivationSparsity"]
    assert 0 < act.neurobench < 1 and abs(act.spikeport - act.neurobench) < 0.05
    assert 0.8 < rows["SynapticOperations: Effective_ACs"].ratio < 1.25
    assert 0.8 < rows["SynapticOperations: Effective_MACs"].ratio < 1.25
    # membranes that changed vs every neuron every step: spikeport's is the upper bound
    mem = rows["MembraneUpdates"]
    assert 0 < mem.neurobench <= mem.spikeport
    assert all(row.why for row in r.rows) and json.dumps(r.to_dict())


def test_neurobench_command_and_its_refusals(converted, tmp_path, capsys):
    _, artifact = converted
    out = tmp_path / "nb.json"
    assert main(["neurobench", str(artifact), "--samples", "4", "--json", str(out), "--quiet"]) == 0
    d = json.loads(out.read_text())
    assert d["schema"] == "spikeport.neurobench" and d["samples"] == 4
    assert {row["metric"] for row in d["rows"]} >= {"Footprint", "ActivationSparsity", "MembraneUpdates"}
    from spikeport.ir import artifact as artifact_io

    bare = artifact_io.write(quantized_graph(spiky_model("ssa"), random_images(8, seed=1)), tmp_path / "m.spk.h5")
    with pytest.raises(ConfigError, match="names no checkpoint it was converted from.*--checkpoint CKPT"):
        api.neurobench(bare, samples=2)
