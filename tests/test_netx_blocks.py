"""lava-dl's netx *block* ground truth (tests/lava/lib/dl/netx/test_blocks.py + gts/dense, gts/tinynet,
gts/tinynet_sdnn, gts/complex_dense) replayed through spikeport: each block is written as a one-layer netx
file with the parameters lava-dl's test gives the block (spikeport.netx.blocks), imported with
graph_from_netx and run on spikeport's reference simulator and its Lava backend, fed as lava-dl's test feeds
the block and compared where lava-dl compares (and currents u where the recording has them).

Timing: a Lava Dense / Conv synapse delays one step, so Lava's step t of a one-synapse block is spikeport's
recorded step t - 1 (spikeport records a layer from the step the stream reaches it).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from runs import netx_spikes as run_netx, reference_spikes
from spikeport.errors import ArtifactError
from spikeport.netx.blocks import lif_neuron, rf_neuron, sdnn_neuron, write_block_netx
from spikeport.netx.inputs import from_netx_layout, from_slayer_layout
from spikeport.netx.read import graph_from_netx
from spikeport.runtime.executor import GraphExecutor
from test_netx_interop import lava_dl_netx_tests


def gts(name):
    return lava_dl_netx_tests() / "gts" / name


def lif_trace(graph, x, name):
    """Spikes and currents u [T, ...] of LIF ``name`` for sample 0 on the reference simulator. Valid for
    du = 4095 only: the current forgets every step, so u = a_in << 6 (Lava's act_shift)."""
    assert graph.nodes[name].attrs["du"] == 4095
    s, u = [], []

    def observe(t, node, value, extra):
        if node == name:
            s.append(np.asarray(value)[0].copy())
            u.append(np.asarray(extra["a_in"])[0].astype(np.int64) << 6)

    GraphExecutor(graph).run(x, observer=observe)
    return np.stack(s), np.stack(u)


def dense_lif_block(tmp_path):
    """TestLIFBlocks.test_dense: Dense(shape=(256,), LIF vth 6, du 4095, dv 415, bias_exp 6, weight.npy)."""
    root = gts("dense")
    path = write_block_netx(
        tmp_path / "dense.net", "dense", np.load(root / "weight.npy"), lif_neuron(vth=6, du=4095, dv=415, bias_exp=6)
    )
    x = from_netx_layout(np.load(root / "in.npy"))  # (N, T) -> [1, T, N]
    return path, x, np.load(root / "out.npy"), np.load(root / "current.npy")


def test_dense_lif_block_equals_loihi_spikes_and_currents_on_the_reference(tmp_path):
    """gts/dense: 200 -> 256 LIF, 2000 steps. Spikes of all 256 neurons at Lava steps 1..1999 (step 0 is
    empty: the synapse delays) and the current u (current.npy holds u / 64) at the same steps."""
    path, x, s_gt, u_gt = dense_lif_block(tmp_path)
    T = x.shape[1]
    graph = graph_from_netx(path, (200,), T=T)
    assert [graph.nodes[n].op for n in graph.order] == ["input", "dense", "lif"]
    s, u = lif_trace(graph, x, "layer0.neuron")  # [T, 256]
    assert not s_gt[:, 0].any() and not u_gt[:, 0].any()
    assert np.array_equal(s[: T - 1].T, s_gt[:, 1:])
    assert np.array_equal(u[: T - 1].T, u_gt[:, 1:] * 64)
    assert s_gt.sum() == 1826 and np.count_nonzero(u_gt) > 300_000  # the comparison is not vacuous


@pytest.mark.lava
def test_dense_lif_block_equals_loihi_spikes_on_lava(tmp_path):
    path, x, s_gt, _ = dense_lif_block(tmp_path)
    start = time.perf_counter()
    _, lava = run_netx(path, x, "lava")
    print(f"dense LIF block, {x.shape[1]} steps on Lava: {time.perf_counter() - start:.1f} s")
    assert np.array_equal(lava["layer0.neuron"][0, :-1].T, s_gt[:, 1:])


def sdnn_conv_block(tmp_path, vth=20):
    """TestSDNBlocks.test_conv: Conv(shape=(6, 6, 24), input (16, 16, 3), SigmaDelta vth 20, spike_exp 6,
    state_exp 6, layer1_kernel.npy, layer1_bias.npy, stride 2)."""
    root = gts("tinynet_sdnn")
    path = write_block_netx(
        tmp_path / "conv.net",
        "conv",
        np.load(root / "layer1_kernel.npy"),
        sdnn_neuron(vth=vth, spike_exp=6, state_exp=6),
        bias=np.load(root / "layer1_bias.npy"),
        shape=(6, 6, 24),
        stride=2,
    )
    # the block's Conv synapse has num_message_bits 0: Lava casts its input to bool (PyConvModelFixed)
    x = from_netx_layout(np.load(root / "input.npy") != 0).astype(np.int8)  # [1, 15, 16, 16, 3]
    return path, x, np.load(root / "layer1.npy")


def test_sdnn_conv_block_equals_loihi_at_the_step_lava_dl_runs(tmp_path):
    """lava-dl runs this block for one step (RunSteps(num_steps=1)): its ground truth is Lava's step 0,
    where the conv synapse still sends nothing (it delays one step) and the SigmaDelta sends its bias,
    relu(b << 12) as graded spikes (b << 12) >> 6 where b > vth. In spikeport that step is the pipeline
    fill before the recorded steps (warmup 1), which the executors do not record; so the same computation is
    recorded with warmup 0 and the synapse's delay written into the input (a zero step in front), checked
    against the imported graph step for step, and its step 0 compared with the ground truth."""
    path, x, gt = sdnn_conv_block(tmp_path)
    graph = graph_from_netx(path, (16, 16, 3), T=16)
    assert [graph.nodes[n].op for n in graph.order] == ["input", "conv", "sigma_delta"]
    assert graph.nodes["layer0.neuron"].attrs["warmup"] == 1
    x16 = np.concatenate([x, np.zeros_like(x[:, :1])], axis=1)
    _, ref = reference_spikes(graph, x16)
    shown = graph_from_netx(path, (16, 16, 3), T=16)
    shown.nodes["layer0.neuron"].attrs["warmup"] = 0
    _, lava_t = reference_spikes(shown, np.concatenate([np.zeros_like(x[:, :1]), x], axis=1))
    out, ref_out = lava_t["layer0.neuron"][0], ref["layer0.neuron"][0]  # [T, H, W, C]
    assert np.array_equal(out[1:], ref_out[:-1])  # the same run, one step earlier
    assert np.array_equal(out[0].transpose(1, 0, 2), gt[..., 0])  # (x, y, f), the one step lava-dl runs
    assert not gt[..., 1:].any()  # lava-dl's sink holds nothing after the step it ran
    assert np.count_nonzero(gt[..., 0]) == 144
    # after that step the block sends nothing: a change of sigma by vth << 12 = 81920 is out of reach of 0/1
    # inputs through weights of at most 10 (lava-dl's one-step run never shows it)
    assert not out[1:].any()


@pytest.mark.lava
def test_sdnn_conv_block_on_lava_equals_the_reference_over_the_whole_input(tmp_path):
    """All 15 steps of input.npy (binarised, as the block's synapse reads them) through spikeport's Lava
    backend equal the reference at every step. With the test's vth 20 the block is silent after its bias step
    (above), so the block runs here with vth 0: every change of the activation is sent."""
    path, x, _ = sdnn_conv_block(tmp_path, vth=0)
    _, ref = run_netx(path, x, "reference")
    start = time.perf_counter()
    _, lava = run_netx(path, x, "lava")
    print(f"SDNN conv block, {x.shape[1]} steps on Lava: {time.perf_counter() - start:.1f} s")
    assert np.array_equal(lava["layer0.neuron"], ref["layer0.neuron"])
    assert np.count_nonzero(ref["layer0.neuron"]) > 1000


def test_sdnn_dense_sigma_block(tmp_path):
    """TestSDNBlocks.test_dense: Dense(shape=(100,), Sigma, layer2_weight.npy) fed layer1.npy reshaped to
    (864, 16); the block's Dense synapse (num_message_bits 0) reads the graded input as bool. Lava's Sigma
    sends its running sum sigma += a_in every step; layer2.npy is that sum at Lava steps 0..15."""
    root = gts("tinynet_sdnn")
    path = write_block_netx(
        tmp_path / "sigma.net", "dense", np.load(root / "layer2_weight.npy"), sdnn_neuron(sigma_output=True)
    )
    graph = graph_from_netx(path, (864,), T=16)
    x = from_netx_layout((np.load(root / "layer1.npy").reshape(-1, 16) != 0).astype(np.int8))
    gt = np.load(root / "layer2.npy")  # (100, 16)
    _, ref = reference_spikes(graph, x)
    out = ref[graph.order[-1]][0]  # [T, 100]
    assert not gt[:, 0].any() and np.array_equal(out[:-1].T, gt[:, 1:])


@pytest.mark.lava
def test_sdnn_dense_sigma_block_on_lava_equals_the_reference(tmp_path):
    root = gts("tinynet_sdnn")
    path = write_block_netx(
        tmp_path / "sigma.net", "dense", np.load(root / "layer2_weight.npy"), sdnn_neuron(sigma_output=True)
    )
    x = from_netx_layout((np.load(root / "layer1.npy").reshape(-1, 16) != 0).astype(np.int8))
    _, ref = run_netx(path, x, "reference", input_shape=(864,))
    _, lava = run_netx(path, x, "lava", input_shape=(864,))
    assert np.array_equal(ref["layer0.neuron"], lava["layer0.neuron"]) and np.abs(ref["layer0.neuron"]).sum() > 0


@pytest.mark.lava
def test_sdnn_input_block_delta_encoder_equals_loihi(tmp_path):
    """TestSDNBlocks.test_input: an Input block with a Lava Delta neuron (vth 20, spike_exp 6, state_exp 6) fed
    graded integers (input_bias * sin(2 pi t / 15)) into its a_in: netx's SDNN input layer, imported as the delta
    op. Its graded output equals tinynet_sdnn/input.npy at every step (15 x 768 values, no lag: the Delta is
    fed directly), on the reference and on spikeport's Lava backend."""
    import h5py

    root, T = gts("tinynet_sdnn"), 15
    data = np.load(root / "input_bias.npy")[..., None].repeat(T, axis=3) * np.sin(2 * np.pi * np.arange(T) / T)
    path = tmp_path / "delta.net"
    with h5py.File(path, "w") as f:  # a netx file of just that input layer
        f.create_dataset("layer/0/type", (1,), "S10", [b"input"])
        f["layer/0/shape"] = np.array([3, 16, 16])
        f["layer/0/neuron/type"], f["layer/0/neuron/vThMant"] = b"SDNN", 20
    graph = graph_from_netx(path, T=T)  # an SDNN input layer: graded input by default
    x = from_netx_layout(data.astype(int))
    gt = from_netx_layout(np.load(root / "input.npy"))
    _, ref = reference_spikes(graph, x)
    assert np.array_equal(ref["layer0.neuron"], gt) and np.abs(gt).sum() > 0
    _, lava = run_netx(path, x, "lava")
    assert np.array_equal(lava["layer0.neuron"], ref["layer0.neuron"])


def rf_block(tmp_path, test):
    """TestRFBlocks: test_dense is ComplexDense(shape=(256,), RF vth 25, period 11, alpha 0.05, state_exp 6,
    decay_bits 12, weight_r.npy / weight_img.npy); test_input is ComplexInput(shape=(200,), RF_IZ vth 1.1,
    period 7, alpha 0.05), which connects its input to both the real and the imaginary a_in. netx has no
    complex input layer, so the input block is written as a ComplexDense with identity weights: the same
    sums, one synapse step later (where spikeport's record of the neuron starts)."""
    root = gts("complex_dense")
    if test == "dense":
        wr, wi = np.load(root / "weight_r.npy"), np.load(root / "weight_img.npy")
        neuron = rf_neuron(vth=25, period=11, alpha=0.05, iz=False)
    else:
        wr = wi = np.eye(200)
        neuron = rf_neuron(vth=1.1, period=7, alpha=0.05, iz=True)
    path = write_block_netx(tmp_path / f"rf_{test}.net", "dense", wr, neuron, weight_imag=wi)
    x = from_netx_layout(np.load(root / "in.npy"))  # [1, 2000, 200]
    return path, x, np.load(root / ("out.npy" if test == "dense" else "current.npy"))


@pytest.mark.parametrize("backend", ["reference", pytest.param("lava", marks=pytest.mark.lava)])
def test_complex_dense_rf_block_equals_loihi(tmp_path, backend):
    """gts/complex_dense out.npy: 256 RF neurons, 2000 steps, every spike at Lava steps 1..1999 (step 0:
    the synapses delay)."""
    path, x, gt = rf_block(tmp_path, "dense")
    graph = graph_from_netx(path, (200,), T=x.shape[1])
    rf = graph.nodes["layer0.neuron"]
    assert rf.op == "rf" and rf.inputs == ["layer0.dense.real", "layer0.dense.imag"]
    # Lava's RF(period 11, alpha 0.05, vth 25) Vars, through netx's round trip
    assert (rf.attrs["sin_decay"], rf.attrs["cos_decay"], rf.attrs["vth"], rf.attrs["iz"]) == (2103, 3273, 1600, 0)
    start = time.perf_counter()
    _, out = run_netx(path, x, backend)
    print(f"complex dense RF block on {backend}: {time.perf_counter() - start:.1f} s")
    s = out["layer0.neuron"][0]  # [T, 256]
    assert not gt[:, 0].any() and np.array_equal(s[:-1].T, gt[:, 1:])
    assert gt.sum() == 41512


@pytest.mark.parametrize("backend", ["reference", pytest.param("lava", marks=pytest.mark.lava)])
def test_complex_input_rf_iz_block_equals_loihi(tmp_path, backend):
    """gts/complex_dense current.npy: the RF_IZ input block's spikes, 200 neurons x 2000 steps, all compared."""
    path, x, gt = rf_block(tmp_path, "input")
    graph = graph_from_netx(path, (200,), T=x.shape[1])
    rf = graph.nodes["layer0.neuron"]
    assert (rf.attrs["sin_decay"], rf.attrs["cos_decay"], rf.attrs["vth"], rf.attrs["iz"]) == (3042, 2426, 70, 1)
    start = time.perf_counter()
    _, out = run_netx(path, x, backend)
    print(f"complex input RF_IZ block on {backend}: {time.perf_counter() - start:.1f} s")
    assert np.array_equal(out["layer0.neuron"][0].T, gt) and gt.sum() == 13548


def test_complex_weights_and_rf_neurons_only_come_together(tmp_path):
    """netx connects an RF neuron only in a ComplexDense (its ports are a_real_in / a_imag_in, no a_in)."""
    w = np.ones((3, 4))
    rf = rf_neuron(vth=1, period=8, alpha=0.1, iz=False)
    cases = [
        write_block_netx(tmp_path / "a.net", "dense", w, rf),
        write_block_netx(tmp_path / "b.net", "dense", w, lif_neuron(vth=1, du=4095, dv=0), weight_imag=w),
    ]
    for path in cases:
        with pytest.raises(ArtifactError, match=r"layer/0.*complex weights .* and RF neurons come together"):
            graph_from_netx(path, (4,))


def conv_lif_block(tmp_path):
    root = gts("tinynet")
    path = write_block_netx(
        tmp_path / "conv_lif.net",
        "conv",
        np.load(root / "layer1_kernel.npy"),
        lif_neuron(vth=25, du=4095, dv=1024, bias_exp=6),
        bias=np.load(root / "layer1_bias.npy"),
        shape=(6, 6, 24),
        stride=2,
    )
    x = from_slayer_layout(np.load(root / "input.npy"))[:, 1:].astype(np.int8)  # [1, 15, 16, 16, 3]
    # ground truth in slayer's (C, H, W, t) layout; current.npy holds u / 64
    return path, x, np.load(root / "layer1.npy")[0], np.load(root / "current.npy")[0].astype(np.int64) * 64


def test_conv_lif_block_equals_loihi_spikes_and_currents(tmp_path):
    """TestLIFBlocks.test_conv on gts/tinynet: Conv(shape=(6, 6, 24), input (16, 16, 3), LIF vth 25, du 4095,
    dv 1024, bias_exp 6, layer1_kernel.npy, layer1_bias.npy, stride 2), fed input.npy[..., 1:] (the recording's
    one-step offset). lava-dl zeroes u and v after step 0 (the bias-only step before the synapse delivers) and
    compares spikes and u (current.npy * 64) at all 16 steps, step 0 zeroed; spikeport's LIF starts from zero
    state when the stream reaches it, Lava's step 1, so its 15 recorded steps are Lava's steps 1..15."""
    path, x, s_gt, u_gt = conv_lif_block(tmp_path)
    graph = graph_from_netx(path, (16, 16, 3), T=15)
    s, u = lif_trace(graph, x, "layer0.neuron")  # [15, H, W, C]
    assert np.array_equal(s.transpose(3, 1, 2, 0), s_gt[..., 1:])
    assert np.array_equal(u.transpose(3, 1, 2, 0), u_gt[..., 1:])
    assert s_gt[..., 1:].sum() > 0 and np.count_nonzero(u_gt[..., 1:]) > 1000


@pytest.mark.lava
def test_conv_lif_block_equals_loihi_spikes_on_lava(tmp_path):
    path, x, s_gt, _ = conv_lif_block(tmp_path)
    _, lava = run_netx(path, x, "lava")
    assert np.array_equal(lava["layer0.neuron"][0].transpose(3, 1, 2, 0), s_gt[..., 1:])


def test_a_run_of_a_file_without_class_scores_predicts_nothing(tmp_path):
    """A conv block's output is a [6, 6, 24] map: argmax over its 864 neurons is no class (a new user's report
    showed one); the run says there is no readout instead."""

    path, x, _, _ = conv_lif_block(tmp_path)
    report, spikes = run_netx(path, x, "reference")
    assert report["predictions"] == [] and "accuracy" not in report
    assert report["netx"]["prediction"].startswith("none: the last layer 'layer0.neuron' is [6, 6, 24]")
    assert spikes["layer0.neuron"].sum() > 0
