"""lava-dl's mnist.net: its output layer has no neuron group, so netx gives it a non-spiking integrator (a Lava LIF
with du = -1, dv = 4096, vth = 2**17) whose result is its v. spikeport imports it as that LIF, records its v in both
executors and predicts with it; lava-dl's netx on Lava gives the same spikes and the same v at every step."""

from __future__ import annotations

import numpy as np
import pytest

from runs import netx_spikes
from spikeport import fixedpoint as fx
from spikeport.ir.kernels.lif import is_integrator
from spikeport.netx import read as netx
from spikeport.runtime.recording import v_key
from test_netx_interop import lava_dl_netx_tests

T = 16  # mnist.net's simulation/tSample


def mnist_path():
    return lava_dl_netx_tests() / "mnist.net"


def digit_images(n: int) -> np.ndarray:
    """scikit-learn digits on a 28 x 28 canvas through netx's stored input transform (weight 76, here with
    bias -64 so that background pixels stay silent): integer images [n, 784] for the input neuron's bias."""
    from sklearn.datasets import load_digits

    d = load_digits()
    canvas = np.zeros((n, 28, 28))
    canvas[:, 2:26, 2:26] = np.kron(d.images[:n] / 16.0, np.ones((3, 3)))
    return np.rint(76 * canvas.reshape(n, 784) - 64).astype(np.int32)


def test_layer_without_neuron_is_netx_default_integrator():
    graph = netx.graph_from_netx(mnist_path(), T=T)
    out = graph.nodes["layer3.neuron"]
    assert out.op == "lif" and (out.attrs["du"], out.attrs["dv"], out.attrs["vth"]) == (-1, 4096, 1 << 17)
    assert is_integrator(out) and not is_integrator(graph.nodes["layer2.neuron"])


def test_integrator_arithmetic_is_a_lossless_sum():
    """du = -1: u = sum of a_in << 6 (no decay); dv = 4096: v = u + bias << bias_exp; never a spike."""
    rng = np.random.default_rng(0)
    a_in = rng.integers(-3000, 3000, (12, 5))
    p = fx.LifParams(-1, 4096, 1 << 17, np.array([3, -7, 0, 11, -1]), 6)
    u = v = np.zeros(5, np.int64)
    for t in range(12):
        u, v, s = fx.lif_step(fx.INT, u, v, a_in[t], p)
        assert not s.any()
        assert np.array_equal(u, (a_in[: t + 1].sum(0)) << 6)
        assert np.array_equal(v, u + (p.bias_mant << 6))


def lavadl_mnist(image: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """lava-dl's netx.hdf5.Network(mnist.net) on Lava fixed_pt, one image as the input neuron's bias (as lava-dl's
    PilotNet/TinyNet tests feed theirs): spikes of every layer [T + 3 steps, n] and the output layer's v."""
    import os
    import tempfile

    from spikeport.runtime.lava import compat

    Network = compat.netx_network()  # lava-dl's class; numpy 2 needs compat step 5 for mnist.net's input layer
    from lava.magma.core.run_conditions import RunSteps

    from spikeport.runtime.lava.procs.processes import SpikeRecorder, StateRecorder
    from spikeport.runtime.lava.run import sim_config

    net = Network(net_config=str(mnist_path()))
    net.in_layer.neuron.bias_mant.init = image
    steps = T + len(net.layers) - 1  # the last layer sits 3 synapses deep
    with tempfile.TemporaryDirectory() as tmp:
        paths, recorders = [], []
        for k, layer in enumerate(net.layers):
            paths.append(os.path.join(tmp, f"{k}.npy"))
            n = int(layer.out.shape[0])
            np.lib.format.open_memmap(paths[-1], mode="w+", dtype=np.int32, shape=(steps, n)).flush()
            recorders.append(SpikeRecorder(shape=(n,), path=paths[-1]))
            layer.out.connect(recorders[-1].s_in)
        paths.append(os.path.join(tmp, "v.npy"))
        np.lib.format.open_memmap(paths[-1], mode="w+", dtype=np.int32, shape=(steps, 10)).flush()
        v_rec = StateRecorder(shape=(10,), path=paths[-1])
        v_rec.ref.connect_var(net.out_layer.neuron.v)
        try:
            net.run(condition=RunSteps(num_steps=steps), run_cfg=sim_config(fast=False))
        finally:
            net.stop()
        recorded = [np.load(p) for p in paths]
    return recorded[:-1], recorded[-1]


@pytest.mark.lava
@pytest.mark.slow
def test_mnist_spikes_and_integrator_v_equal_lava_dl_netx_and_spikeport_lava():
    """3 digit images x 16 steps: lava-dl's netx on Lava == spikeport's reference == spikeport's Lava backend, in
    the spikes of layers 0-2 and the output integrator's v at every step; the prediction is argmax of the final v."""
    images = digit_images(3)
    ref_report, ref = netx_spikes(mnist_path(), images, "reference", input_drive="bias", steps=T)
    lava_report, lava = netx_spikes(mnist_path(), images, "lava", input_drive="bias", steps=T)
    names = ["layer0.neuron", "layer1.neuron", "layer2.neuron", "layer3.neuron"]
    for key in [*names, v_key("layer3.neuron")]:
        assert np.array_equal(ref[key], lava[key]), key
    assert all(ref[n].sum() > 0 for n in names[:3]) and ref["layer3.neuron"].sum() == 0
    final_v = ref[v_key("layer3.neuron")][:, -1].reshape(3, 10)
    assert ref_report["predictions"] == lava_report["predictions"] == [int(i) for i in np.argmax(final_v, -1)]
    assert ref_report["netx"]["output_v"] == final_v.tolist()
    for s in range(2):  # lava-dl's netx, one image per run (its input neuron's bias)
        spikes, v = lavadl_mnist(images[s])
        for k, name in enumerate(names):  # layer k is k synapses deep: its step t is netx's row t + k
            assert np.array_equal(spikes[k][k : k + T], ref[name][s].reshape(T, -1)), (s, name)
        assert np.array_equal(v[3 : 3 + T], ref[v_key("layer3.neuron")][s].reshape(T, -1)), s
        assert np.abs(v).max() > 0


@pytest.mark.lava
def test_lava_dl_netx_loads_mnist_net_through_the_compat_step():
    """lava-dl's own loader on mnist.net: numpy 2 refuses int() of the input layer's 1-element weight; compat
    step 5 (netx_network) reads it as the scalar transform lava-dl expects (its own test_mnist, layer types)."""
    from spikeport.runtime.lava import compat

    Network = compat.netx_network()
    net = Network(net_config=str(mnist_path()))
    assert len(net) == 4 and net.in_layer.transform == {"weight": 76, "bias": 64}
    assert [type(layer).__name__ for layer in net.layers] == ["Input", "Dense", "Dense", "Dense"]


def test_cli_runs_mnist_on_flat_images_and_prints_the_integrator_output(tmp_path, capsys):
    """`spikeport run mnist.net --input-drive bias` on flat images [S, 784]: the prediction is argmax of the
    integrator's final v, which the report keeps and the command prints."""
    import json

    from spikeport.cli import main

    np.save(tmp_path / "x.npy", digit_images(2))
    args = ["run", str(mnist_path()), "--inputs", str(tmp_path / "x.npy"), "--input-drive", "bias", "--steps", "16"]
    assert main([*args, "--json", str(tmp_path / "r.json")]) == 0
    assert "output: v of the integrator 'layer3.neuron' at the last step" in capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["predictions"] == [int(np.argmax(v)) for v in report["netx"]["output_v"]]
    assert report["netx"]["prediction"].startswith("argmax of the output integrator's v")
