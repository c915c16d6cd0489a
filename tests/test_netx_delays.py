"""Axonal delays (netx's dense 'delay', Lava's DelayDense / DelaySparse): lava-dl's gts/ntidigits network against its
Loihi ground truth, and a small file against lava-dl's own netx on Lava."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from runs import lava_spikes as run_lava, netx_spikes, reference_spikes
from spikeport.cli import main
from spikeport.errors import ArtifactError, ConversionError
from spikeport.netx import read as netx
from spikeport.runtime.lava.lavadl import run_lavadl_netx
from test_netx_interop import lava_dl_netx_tests


def ntidigits():
    root = lava_dl_netx_tests() / "gts" / "ntidigits"
    x = np.load(root / "input.npy").T[None].astype(np.int8)  # (64, 3000) netx order -> [1, T, 64]
    return root / "ntidigits.net", x, np.load(root / "output.npy")


def test_ntidigits_imports_with_per_neuron_delays_up_to_its_average_layer():
    path, _, _ = ntidigits()
    with pytest.raises(ArtifactError, match=r"layer/5.*'average'.*num_layers"):
        netx.graph_from_netx(path)
    graph = netx.graph_from_netx(path, T=4, num_layers=5)  # as lava-dl's test loads it
    assert graph.nodes["input"].shape == (64,)  # [1, 1, 64] + flatten: the flat vector it is
    d2 = graph.nodes["layer2.dense"].params["delay"]
    with h5py.File(path) as f:
        axonal = np.asarray(f["layer/2/delay"][()]).astype(int)
    assert d2.shape == (256, 64) and np.array_equal(d2[:, 0], axonal) and (d2 == d2[:, :1]).all()
    assert "delay" not in graph.nodes["layer4.dense"].params and d2.max() == 62


@pytest.mark.slow
def test_ntidigits_reference_equals_loihi_ground_truth_at_every_step():
    """3000 steps: the output layer (3 synapses deep) at step t is the recording's column t + 4 (the source's own
    step and one step per synapse); 22,572 spikes, none different. lava-dl's test compares one column only."""
    path, x, gt = ntidigits()
    T = x.shape[1]
    graph = netx.graph_from_netx(path, T=T, num_layers=5)
    _, ref = reference_spikes(graph, x)
    out = ref["layer4.neuron"][0].T  # [242, T]
    assert out.sum() == gt.sum() == 22572
    assert np.array_equal(out[:, : T - 4], gt[:, 4:])


@pytest.mark.lava
@pytest.mark.slow
def test_ntidigits_on_spikeport_lava_equals_reference():
    """The whole 3000-step recording on spikeport's Lava backend (DelaySparse with per-synapse delays): every
    layer's spikes at every step equal the reference's."""
    path, x, _ = ntidigits()
    graph = netx.graph_from_netx(path, T=x.shape[1], num_layers=5)
    _, ref = reference_spikes(graph, x)
    _, lava = run_lava(graph, x)
    for name in ("layer2.neuron", "layer3.neuron", "layer4.neuron"):
        assert np.array_equal(ref[name], lava[name]) and ref[name].sum() > 1000, name


def write_delay_net(path, seed: int = 0):
    """input 6 -> dense 5 (axonal delays, one per output neuron) -> dense 3 (a full [out, in] delay matrix)."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        f.create_dataset("layer/0/type", (1,), "S10", [b"input"])
        f["layer/0/shape"] = np.array([6])
        for i, (n_in, n_out, delay) in enumerate(
            ((6, 5, rng.integers(0, 7, 5)), (5, 3, rng.integers(0, 5, (3, 5)))), start=1
        ):
            g = f.create_group(f"layer/{i}")
            g.create_dataset("type", (1,), "S10", [b"dense"])
            g["shape"], g["inFeatures"], g["outFeatures"] = np.array([n_out]), n_in, n_out
            g["weight"] = (2 * rng.integers(-40, 60, (n_out, n_in))).astype(np.float32)
            g["delay"] = delay.astype(np.float32)
            n = g.create_group("neuron")
            n["type"], n["iDecay"], n["vDecay"], n["vThMant"] = b"CUBA", 1024, 256, 60
    return path


@pytest.mark.lava
def test_delays_equal_lava_dl_netx_on_lava_and_spikeport_lava(tmp_path):
    """A handmade file, 1 sample x 40 steps of random spikes: lava-dl's netx (DelayDense) on Lava == spikeport's
    reference == spikeport's Lava backend, every layer at every step."""
    path = write_delay_net(tmp_path / "delays.net")
    x = (np.random.default_rng(1).random((1, 40, 6)) < 0.4).astype(np.int8)
    theirs = run_lavadl_netx(path, x)
    _, ref = netx_spikes(path, x, "reference")
    _, lava = netx_spikes(path, x, "lava")
    for k, name in enumerate(("layer1.neuron", "layer2.neuron")):
        assert np.array_equal(theirs[k], ref[name]) and np.array_equal(lava[name], ref[name]), name
        assert ref[name].sum() > 0
    with pytest.raises(ConversionError, match="no reset between samples"):
        netx_spikes(path, np.concatenate([x, x]), "lava")


def test_cli_runs_ntidigits_unmodified_and_round_trips_its_delays(tmp_path, capsys):
    path, x, _ = ntidigits()
    np.save(tmp_path / "short.npy", np.load(path.parent / "input.npy")[:, :200])  # netx order (64, T)
    args = ["--inputs", str(tmp_path / "short.npy"), "--input-layout", "netx", "--json", str(tmp_path / "r.json")]
    assert main(["run", str(path), *args, "--num-layers", "5"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["T"] == 200 and report["netx"]["input_shape"] == [64]
    capsys.readouterr()
    assert main(["run", str(path), *args]) == 2
    assert "--num-layers" in capsys.readouterr().err
    out = tmp_path / "b"
    assert main(["convert", str(path), "--out", str(out), "--num-layers", "5", "--steps", "200"]) == 0
    assert main(["export", str(out / "model.spk.h5"), "--netx", str(tmp_path / "back.net")]) == 0
    graph, back = netx.graph_from_netx(path, T=200, num_layers=5), netx.graph_from_netx(tmp_path / "back.net", T=200)
    for i in (2, 3):  # the file comes back without its flatten layer: layer i is layer/i-1 there
        assert np.array_equal(
            graph.nodes[f"layer{i}.dense"].params["delay"], back.nodes[f"layer{i - 1}.dense"].params["delay"]
        )
    _, a = reference_spikes(graph, x[:, :200])
    _, b = reference_spikes(back, x[:, :200])
    for i in (2, 3, 4):
        assert np.array_equal(a[f"layer{i}.neuron"], b[f"layer{i - 1}.neuron"])
    assert a["layer4.neuron"].sum() > 0
