"""netx's ``dense_rec`` layer (lava-dl's RecurrentDense block, slayer's ``block.cuba.Recurrent``) as the op
``recurrent_lif``: a LIF group that reads its own spikes of the previous step. One file written here in netx's layout
runs on the reference, the torch reference, fake-quant, spikeport's Lava backend and lava-dl's own netx Network, bit for
bit; it survives the artifact and the netx export; check-hw places its recurrent synapse with its group."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from runs import netx_spikes
from spikeport import fixedpoint as fx
from spikeport.errors import ArtifactError, ConversionError
from spikeport.ir import artifact
from spikeport.netx import read as netx, weights as netx_weights
from spikeport.runtime.targets import run_recorded

T = 32
GROUPS = ("layer1.neuron", "layer2.neuron")


def write_recurrent_net(path, rec_scale: int = 1, bias=None):
    """input 6 -> dense_rec 5 -> dense_rec 4, CUBA neurons, as slayer's ``Recurrent`` block writes them. Layer 1's input
    weights are excitatory and its recurrent ones mixed: netx optimizes them together, Lava truncates each with its own
    sign mode. ``rec_scale`` 0: the same network without its recurrence."""
    rng = np.random.default_rng(3)
    layers = (
        (6, 5, rng.integers(0, 60, (5, 6)), rng.integers(-60, 50, (5, 5))),
        (5, 4, rng.integers(-60, 60, (4, 5)), rng.integers(-40, 60, (4, 4))),
    )
    with h5py.File(path, "w") as f:
        f.create_dataset("layer/0/type", (1,), "S10", [b"input"])
        f["layer/0/shape"] = np.array([6])
        for i, (n_in, n_out, w, w_rec) in enumerate(layers, start=1):
            g = f.create_group(f"layer/{i}")
            g.create_dataset("type", (1,), "S10", [b"dense_rec"])
            g["shape"], g["inFeatures"], g["outFeatures"] = np.array([n_out]), n_in, n_out
            g["weight"], g["weight_rec"] = (2 * w).astype(np.float32), (2 * w_rec * rec_scale).astype(np.float32)
            n = g.create_group("neuron")
            n["type"], n["iDecay"], n["vDecay"], n["vThMant"] = b"CUBA", 1024, 256, 400
            n["refDelay"], n["gradedSpike"] = 1, False
        if bias is not None:
            f["layer/1/bias"] = np.asarray(bias, np.float32)
    return path


def spikes(samples: int, seed: int = 1) -> np.ndarray:
    return (np.random.default_rng(seed).random((samples, T, 6)) < 0.3).astype(np.int8)


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    return write_recurrent_net(tmp_path_factory.mktemp("rec") / "rec.net")


# ----------------------------------------------------------------------------------------- import, no Lava
def test_dense_rec_imports_as_a_dense_and_a_recurrent_lif_group(net):
    graph = netx.graph_from_netx(net, T=T)
    assert [graph.nodes[n].op for n in graph.order] == ["input", "dense", "recurrent_lif", "dense", "recurrent_lif"]
    with h5py.File(net) as f:
        w, w_rec = netx_weights.netx_dense_weights(f["layer/1/weight"][()], f["layer/1/weight_rec"][()])
    group, syn = graph.nodes["layer1.neuron"], graph.nodes["layer1.dense_rec"]
    assert np.array_equal(syn.params["weight_mant"].astype(np.int64) << syn.attrs["weight_exp"], w)
    assert np.array_equal(group.params["weight_mant"].astype(np.int64) << group.attrs["weight_exp"], w_rec)
    assert (group.attrs["du"], group.attrs["dv"], group.attrs["vth"]) == (1023, 256, 400)
    assert w.min() >= 0 and w_rec.min() < 0 < w_rec.max()  # one optimization, two sign modes


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (lambda f: f["layer/1/type"].__setitem__(0, b"dense"), r"layer/1.*'weight_rec'.*only with, a 'dense_rec'"),
        (lambda f: f.__delitem__("layer/1/neuron"), r"layer/1.*'dense_rec'.*CUBA neuron group"),
        (lambda f: f["layer/1/neuron/type"].__setitem__((), b"SDNN"), r"layer/1.*'dense_rec'.*CUBA neuron group"),
        (lambda f: f.__setitem__("layer/2/delay", np.ones(4)), r"layer/2.*delays.*'dense_rec'.*weight exponent"),
        (lambda f: _replace(f, "layer/2/weight_rec", np.ones((4, 3))), r"layer/2.*holds 12 weights, expected 4 x 4"),
    ],
    ids=["weight_rec in a dense layer", "no neuron group", "SDNN neuron", "delays", "weight_rec size"],
)
def test_a_dense_rec_layer_spikeport_cannot_read_exactly_is_refused_by_name(tmp_path, edit, error):
    path = write_recurrent_net(tmp_path / "bad.net")
    with h5py.File(path, "a") as f:
        edit(f)
    with pytest.raises(ArtifactError, match=error):
        netx.graph_from_netx(path, T=T)


def _replace(f: h5py.File, key: str, value: np.ndarray) -> None:
    del f[key]
    f[key] = value


def layer1_by_the_equation(graph, x: np.ndarray, s_before: np.ndarray | None = None) -> np.ndarray:
    """Layer 1's spikes written out: a_in[t] = W x[t] + W_rec s[t-1] with s[-1] = ``s_before`` (default none), and the
    LIF of fixedpoint."""
    syn, group = graph.nodes["layer1.dense_rec"], graph.nodes["layer1.neuron"]
    w = syn.params["weight_mant"].astype(np.int64) << syn.attrs["weight_exp"]
    w_rec = group.params["weight_mant"].astype(np.int64) << group.attrs["weight_exp"]
    a = group.attrs
    p = fx.LifParams(a["du"], a["dv"], a["vth"], group.params["bias_mant"], a["bias_exp"])
    u = v = np.zeros((len(x), 5), np.int64)
    s = np.zeros((len(x), 5), np.int64) if s_before is None else s_before
    out = []
    for t in range(x.shape[1]):
        u, v, s = fx.lif_step(fx.INT, u, v, x[:, t].astype(np.int64) @ w.T + s @ w_rec.T, p)
        out.append(s)
    return np.stack(out, axis=1)


def test_the_group_reads_its_previous_spikes_and_counts_its_recurrent_synapses(net):
    """The reference against the equation; the recurrence changes the spikes; each spike drives C recurrent synapses,
    counted on the group's row."""
    graph, x = netx.graph_from_netx(net, T=T), spikes(3)
    report = run_recorded(graph, x)
    ours = report.recording["layer1.neuron"]
    assert np.array_equal(ours, layer1_by_the_equation(graph, x)) and 0.2 < ours.mean() < 0.7
    plain = run_recorded(netx.graph_from_netx(write_recurrent_net(net.parent / "plain.net", rec_scale=0), T=T), x)
    for name in GROUPS:
        assert np.count_nonzero(plain.recording[name] != report.recording[name]) > 50, name
    row = next(layer for layer in report.layers if layer.name == "layer1.neuron")
    assert row.op == "recurrent_lif" and row.input_kind == "activation" and row.state_bytes == 5 * 9
    assert row.total("synops") == row.total("spikes") * 5 == int(ours.sum()) * 5


def test_torch_reference_and_fake_quant_run_the_same_step(net):
    """The same record step on torch: the reference-torch target's ops (TorchIntOps) and QAT's fake-quant ops."""
    torch = pytest.importorskip("torch")
    from spikeport.convert.fakequant import FakeQuantExecutor
    from spikeport.runtime.sim.torch_reference import TorchReferenceSimulator

    graph, x = netx.graph_from_netx(net, T=T), spikes(3, seed=5)
    ref = run_recorded(graph, x).recording
    for executor in (TorchReferenceSimulator(graph, "cpu").executor, FakeQuantExecutor(graph)):
        got: dict[str, list[np.ndarray]] = {}
        keep = got.setdefault
        with torch.no_grad():
            executor.run(torch.as_tensor(x), lambda t, name, out, extra, keep=keep: keep(name, []).append(out.numpy()))
        for name in GROUPS:
            assert np.array_equal(np.stack(got[name], axis=1), ref[name]), (type(executor).__name__, name)


def test_artifact_and_netx_export_round_trips_keep_every_spike(net, tmp_path):
    graph, x = netx.graph_from_netx(net, T=T), spikes(2)
    back = artifact.read(artifact.write(graph, tmp_path / "rec.spk.h5"))
    assert back.nodes["layer2.neuron"].op == "recurrent_lif"
    assert np.array_equal(
        back.nodes["layer2.neuron"].params["weight_mant"], graph.nodes["layer2.neuron"].params["weight_mant"]
    )
    from spikeport.netx.write import export_netx

    exported = export_netx(back, tmp_path / "back.net")
    assert [layer.type for layer in exported.layers] == ["dense_rec", "dense_rec"] and not exported.left_out
    with h5py.File(net) as a, h5py.File(tmp_path / "back.net") as b:
        for layer in ("layer/1", "layer/2"):  # the integers netx and Lava apply come back, weight and weight_rec
            ours, theirs = (
                netx_weights.netx_dense_layer_weights(a[layer]),
                netx_weights.netx_dense_layer_weights(b[layer]),
            )
            assert all(np.array_equal(x, y) for x, y in zip(ours, theirs, strict=True)), layer
    ref = run_recorded(graph, x).recording
    for other in (back, netx.graph_from_netx(tmp_path / "back.net", T=T)):
        again = run_recorded(other, x).recording
        assert all(np.array_equal(again[name], ref[name]) for name in GROUPS)


# ----------------------------------------------------------------------------------------------------- Lava
@pytest.mark.lava
def test_joint_weights_mirror_lava_dl_and_lava():
    """netx_dense_weights == lava-dl's optimize_weight_bits of [weight | weight_rec], then each part through Lava
    Dense's own sign mode, clip and truncate (the real code)."""
    from spikeport.runtime.lava import compat

    compat.import_lava()
    from lava.lib.dl.netx.utils import optimize_weight_bits
    from lava.utils.weightutils import clip_weights, determine_sign_mode, truncate_weights

    rng = np.random.default_rng(0)
    cases = [
        (rng.integers(0, 128, (5, 6)) * 2, rng.integers(-128, 128, (5, 5)) * 2),
        (rng.integers(-50, 51, (4, 3)), rng.integers(-20, 21, (4, 4))),
        (-rng.integers(0, 128, (4, 5)) * 2, rng.integers(0, 30, (4, 4)) * 4),
        (rng.integers(-3, 4, (3, 3)) * 64, rng.integers(-1, 2, (3, 3)) * 64),
        (rng.integers(0, 255, (3, 4)), np.zeros((3, 3), np.int64)),
    ]
    for w, w_rec in cases:
        opt, bits, exp, _ = optimize_weight_bits(np.hstack([w, w_rec]))
        expected = []
        for part in (opt[:, : w.shape[1]], opt[:, w.shape[1] :]):
            mode = determine_sign_mode(part)
            lava = truncate_weights(clip_weights(part, mode, num_bits=8), mode, bits).astype(np.int64)
            expected.append(lava >> -exp if exp < 0 else lava << exp)
        got = netx_weights.netx_dense_weights(w, w_rec)
        assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True)), (w, w_rec)


@pytest.mark.lava
def test_dense_rec_on_lava_equals_lava_dl_netx_and_the_reference(net):
    """One sample x 32 steps: lava-dl's netx Network (RecurrentDense) on Lava == spikeport's reference == spikeport's
    Lava backend (LIFReset + a Sparse from its s_out to its a_in), every layer at every step."""
    from spikeport.runtime.lava.lavadl import run_lavadl_netx

    x = spikes(1)
    theirs = run_lavadl_netx(net, x)
    _, ref = netx_spikes(net, x, "reference")
    lava_report, lava = netx_spikes(net, x, "lava")
    for k, name in enumerate(GROUPS):
        assert np.array_equal(theirs[k], ref[name]) and np.array_equal(lava[name], ref[name]), name
        assert 0.2 < ref[name].mean() < 0.7, name
    assert lava_report["lava"]["processes"] == 7  # source, then (Conv, LIFReset, recurrent Sparse) per layer
    with pytest.raises(ConversionError, match=r"layer1\.neuron.*no reset between samples"):
        netx_spikes(net, spikes(2), "lava")  # the recurrent synapse keeps a sample's last spikes for the next


@pytest.mark.lava
def test_a_group_that_fires_before_its_input_arrives_is_refused_on_lava(tmp_path):
    """A bias that fires neuron 0 on its own: on Lava the group runs one step before its input arrives, and its
    recurrent synapse carries that spike into the first step (lava-dl's netx does so, the reference does not)."""
    from spikeport.runtime.lava.lavadl import run_lavadl_netx

    path = write_recurrent_net(tmp_path / "bias.net", bias=[500, 0, 0, 0, 0])
    x = spikes(1)
    _, ref = netx_spikes(path, x, "reference")
    theirs = run_lavadl_netx(path, x)
    graph = netx.graph_from_netx(path, T=T)
    assert np.array_equal(ref["layer1.neuron"], layer1_by_the_equation(graph, x))
    carried = layer1_by_the_equation(graph, x, s_before=np.array([[1, 0, 0, 0, 0]]))  # neuron 0's spike before
    assert not np.array_equal(carried, ref["layer1.neuron"]) and np.array_equal(theirs[0], carried)
    with pytest.raises(ConversionError, match=r"layer1\.neuron.*runs 1 step\(s\) before its input.*bias"):
        netx_spikes(path, x, "lava")


@pytest.mark.lava
def test_cli_runs_dense_rec_on_lava_compared_with_the_reference(net, tmp_path, capsys):
    from spikeport.cli import main

    np.save(tmp_path / "x.npy", spikes(1, seed=7))
    args = ["run", str(net), "--inputs", str(tmp_path / "x.npy"), "--backend", "lava", "--compare", "reference"]
    assert main([*args, "--json", str(tmp_path / "r.json")]) == 0
    assert "bit-exact" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["executor"] == "lava-fixed_pt" and report["compare"]["identical"]
    assert {row["layer"] for row in report["compare"]["layers"]} == set(GROUPS)


@pytest.mark.lava
def test_check_hw_places_the_recurrent_synapse_with_its_group(net):
    from spikeport.runtime.loihi2.check_hw import check_hw

    graph = netx.graph_from_netx(net, T=T)
    result = check_hw(graph)
    loop = next(p for p in result.processes if p.name == "layer1.neuron<-layer1.neuron")
    assert (loop.type, loop.layer, loop.placement) == ("Sparse", "layer1.neuron", "chip")
    assert (
        loop.feeds == ["layer1.neuron"]
        and "layer1.neuron<-layer1.neuron" in next(p for p in result.processes if p.name == "layer1.neuron").feeds
    )
    recurrent = np.count_nonzero(graph.nodes["layer1.neuron"].params["weight_mant"])
    group = result.by_layer()["layer1.neuron"]  # its input Conv (6 x 5 kernel) and its recurrent synapses
    assert group["synapses"] == 6 * 5 + recurrent and not result.violations
