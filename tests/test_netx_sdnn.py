"""lava-dl's PilotNet SDNN (gts/pilotnet_sdnn) imported unmodified: the Delta encoder input layer, the hidden
SigmaDelta layers and the Sigma decoder output layer, against lava-dl's ground truth and recordings, on the
reference simulator, spikeport's Lava backend and lava-dl's own netx on Lava.

Alignment of lava-dl's files (established by the tests below, all exact):
- ``output.npy`` (1, 9): test_pilotnet_sdnn's sink on the Sigma (layer 9, depth 8) at Lava steps 0..8, with
  ``input.npy`` (one frame, netx (x, y, f, t) layout) repeated by the RingBuffer every step. Lava steps 0..7
  are the pipeline fill (the Sigma sums what the bias-driven SigmaDelta layers send before the input reaches
  it), step 8 is stream step 0: the reference's fill steps t = -8..-1 and t = 0.
- ``act0.npy`` (100, 33, 3, 20): the Delta's output s_out (x << 6 at step 0, then 0) at Lava steps 0..19.
- ``sigma{k}.npy`` (x, y, f, 20), k = 1, 2: the ``sigma`` Var of layer k's SigmaDelta (the running sum of its
  a_in, without bias) after Lava steps 0..19 of the same run (20 steps).
- ``sigma{k}_square.npy``, k = 1..4: the same for ``square_network.net`` (conv layers 0..4 only, no Sigma
  output and no output file) fed with the first 33 columns (x = 0..32) of ``input.npy``.
"""

from __future__ import annotations

import sysconfig
import time
from pathlib import Path

import numpy as np
import pytest

from spikeport.errors import ArtifactError, DataError
from spikeport.netx.read import graph_from_netx
from spikeport.runtime.executor import GraphExecutor

# lava-dl's wheel ships its netx test networks and their ground truth beside the package
GTS = Path(sysconfig.get_paths()["purelib"]) / "tests" / "lava" / "lib" / "dl" / "netx" / "gts"
SDNN = GTS / "pilotnet_sdnn"
LAVA_STEPS = 20  # the length of lava-dl's recordings

pytestmark = pytest.mark.skipif(not (SDNN / "network.net").is_file(), reason="lava-dl's netx test data not installed")


def frame(square: bool = False) -> np.ndarray:
    """input.npy (W, H, C, 1) in netx's layout -> [1, 1, H, W, C]; the square network reads x = 0..32."""
    from spikeport.netx.inputs import load_graded_inputs

    x = load_graded_inputs(SDNN / "input.npy", layout="netx")
    return x[:, :, :, :33] if square else x


def lava_timeline(path: Path, x: np.ndarray, steps: int) -> tuple[dict, dict]:
    """The reference on a constant frame for ``steps`` stream steps, every node's output at its Lava steps:
    {node: {t: value}} for t = -fill .. steps - 1 (fill steps included), and the graph's Lava depths."""
    from spikeport.runtime.lava.backend import depths

    graph = graph_from_netx(path, x.shape[2:], T=steps, input_drive="graded")
    rec: dict[str, dict[int, np.ndarray]] = {}

    def observe(t: int, name: str, value, extra) -> None:
        rec.setdefault(name, {})[t] = np.asarray(value)[0]

    GraphExecutor(graph).run(np.repeat(x, steps, axis=1), observe, fill_observer=observe)
    return rec, depths(graph)


def at_lava_step(rec: dict[int, np.ndarray], depth: int, j: int) -> np.ndarray:
    """A node at Lava depth d sends stream step t at Lava step t + d (before the fill: nothing)."""
    t = j - depth
    return rec[t] if t in rec else np.zeros_like(rec[0])


def xyz(a: np.ndarray) -> np.ndarray:
    """channels-last (H, W, C) -> netx's (x, y, f) = (W, H, C)."""
    return a.transpose(1, 0, 2) if a.ndim == 3 else a


def recorded_sigma(rec: dict, depth: dict, k: int) -> np.ndarray:
    """Layer k's SigmaDelta ``sigma`` Var after Lava steps 0..19: the running sum of its synapse's outputs."""
    syn = f"layer{k}.conv"
    a_in = np.stack([xyz(at_lava_step(rec[syn], depth[syn], j)) for j in range(LAVA_STEPS)], -1)
    return np.cumsum(a_in, axis=-1)


def test_pilotnet_sdnn_imports_delta_sigma_delta_and_sigma():
    graph = graph_from_netx(SDNN / "network.net", (33, 100, 3), input_drive="graded")
    ops = [graph.nodes[n].op for n in graph.order]
    assert ops[:2] == ["input", "delta"] and ops[-1] == "sigma"  # dense layers on a (1, 1, C) map: 1 x 1 convs
    assert ops.count("sigma_delta") == 7 and graph.nodes["input"].attrs["kind"] == "graded"
    assert graph.nodes["layer0.neuron"].attrs == {"vth": 0, "spike_exp": 6, "state_exp": 6, "cum_error": 0}
    assert graph.nodes["layer9.neuron"].attrs == {"warmup": 8}  # 4 conv + 4 dense synapses before it


def test_pilotnet_sdnn_reference_equals_lava_dl_ground_truth_and_recordings():
    start = time.perf_counter()
    rec, depth = lava_timeline(SDNN / "network.net", frame(), LAVA_STEPS)
    wall = time.perf_counter() - start
    gt = np.load(SDNN / "output.npy")  # (1, 9): the Sigma at Lava steps 0..8
    out = np.stack([at_lava_step(rec["layer9.neuron"], depth["layer9.neuron"], j).ravel() for j in range(9)], -1)
    assert depth["layer9.neuron"] == 8 and np.count_nonzero(gt) == 8
    assert np.array_equal(out, gt), f"Sigma output {out} != lava-dl's ground truth {gt}"
    act0 = np.stack([xyz(at_lava_step(rec["layer0.neuron"], 0, j)) for j in range(LAVA_STEPS)], -1)
    assert np.array_equal(act0, np.load(SDNN / "act0.npy"))
    for k in (1, 2):
        theirs = np.load(SDNN / f"sigma{k}.npy")
        ours = recorded_sigma(rec, depth, k)
        assert ours.shape == theirs.shape and np.count_nonzero(theirs) > 0
        assert np.count_nonzero(ours != theirs) == 0, f"sigma{k}: {np.count_nonzero(ours != theirs)} mismatches"
    print(f"reference: 9 layers, {LAVA_STEPS} stream steps + 8 fill steps in {wall:.2f} s")


def test_square_network_reference_equals_lava_dl_recordings():
    rec, depth = lava_timeline(SDNN / "square_network.net", frame(square=True), LAVA_STEPS)
    for k in (1, 2, 3, 4):
        theirs = np.load(SDNN / f"sigma{k}_square.npy")
        ours = recorded_sigma(rec, depth, k)
        assert ours.shape == theirs.shape and np.count_nonzero(theirs) > 0
        assert np.count_nonzero(ours != theirs) == 0, f"sigma{k}_square: {np.count_nonzero(ours != theirs)} mismatches"


def test_run_netx_reports_the_sigma_output():
    from runs import netx_spikes as run_netx

    x = np.repeat(frame(), 3, axis=1)
    report, spikes = run_netx(SDNN / "network.net", x, input_drive="graded")
    assert report["netx"]["output_layer"] == "layer9.neuron"
    # stream step 0 is Lava step 8 of lava-dl's test: its last ground-truth value
    assert report["netx"]["output"][0][0] == [int(np.load(SDNN / "output.npy")[0, 8])]
    assert spikes["layer9.neuron"].dtype == np.int32 and np.abs(spikes["layer9.neuron"]).max() > 127  # not int8


def test_sdnn_input_needs_the_graded_drive_and_integers_in_range(tmp_path):
    from runs import netx_spikes as run_netx

    with pytest.raises(ArtifactError, match=r"layer/0.*Delta encoder.*input_drive='graded'"):
        graph_from_netx(SDNN / "network.net", (33, 100, 3), input_drive="spikes")
    with pytest.raises(ArtifactError, match=r"layer/0.*only of, a netx SDNN 'input' layer"):
        graph_from_netx(GTS.parent / "tiny.net", input_drive="graded")
    x = np.repeat(frame(), 2, axis=1)
    x[0, 1, 0, 0, 0] = 2048
    with pytest.raises(DataError, match=r"-2048\.\.2047"):
        run_netx(SDNN / "network.net", x, input_drive="graded")


def write_delta_sigma_netx(path: Path, vth: int, seed: int = 0) -> Path:
    """An SDNN netx file as slayer writes it: Delta input (vth) -> dense SigmaDelta -> dense Sigma."""
    import h5py

    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        g = f.create_group("layer/0")
        g["type"], g["shape"] = np.array([b"input"]), np.array([6])
        g["neuron/type"], g["neuron/vThMant"] = np.array([b"SDNN"]), np.array([vth])
        for i, (n_in, n_out) in enumerate(((6, 5), (5, 2)), start=1):
            g = f.create_group(f"layer/{i}")
            g["type"], g["shape"] = np.array([b"dense"]), np.array([n_out])
            g["weight"] = (rng.integers(-60, 60, (n_out, n_in)) * 2).astype(np.float32)
            g["neuron/type"], g["neuron/vThMant"] = np.array([b"SDNN"]), np.array([1])
            if i == 1:
                g["bias"] = rng.integers(-40, 80, n_out).astype(np.float32)
            else:
                g["neuron/sigma_output"] = np.array([True])
    return path


@pytest.mark.lava
@pytest.mark.parametrize("vth", [0, 3])
def test_delta_and_sigma_on_varying_input_match_lava_dl_netx(tmp_path, vth):
    """A varying input exercises the Delta's threshold and residue (the PilotNet frame is constant)."""
    from runs import lava_spikes as run_lava, reference_spikes
    from spikeport.runtime.lava.lavadl import run_lavadl_netx

    path = write_delta_sigma_netx(tmp_path / "sdnn.net", vth)
    x = np.random.default_rng(vth).integers(-20, 21, (1, 12, 6))
    graph = graph_from_netx(path, T=12, input_drive="graded")
    assert [graph.nodes[n].op for n in graph.order] == ["input", "delta", "dense", "sigma_delta", "dense", "sigma"]
    _, ref = reference_spikes(graph, x)
    theirs = run_lavadl_netx(path, x)
    _, ours = run_lava(graph, x)
    if vth:  # changes below the threshold are held back as residue
        assert 0 < np.count_nonzero(ref["layer0.neuron"]) < np.count_nonzero(np.diff(x, axis=1, prepend=0))
    for k, name in enumerate(["layer0.neuron", "layer1.neuron", "layer2.neuron"]):
        assert np.count_nonzero(ref[name]) > 0, name
        assert np.array_equal(ref[name], theirs[k]), f"{name}: reference vs lava-dl netx"
        assert np.array_equal(ref[name], ours[name]), f"{name}: reference vs spikeport's Lava graph"


@pytest.mark.lava
def test_pilotnet_sdnn_on_spikeport_lava_equals_reference():
    from runs import netx_spikes as run_netx

    x = np.repeat(frame(), 9, axis=1)  # lava-dl's test runs len(net.layers) = 9 steps
    start = time.perf_counter()
    ref_report, ref = run_netx(SDNN / "network.net", x, input_drive="graded")
    mid = time.perf_counter()
    report, ours = run_netx(SDNN / "network.net", x, backend="lava", input_drive="graded")
    end = time.perf_counter()
    assert list(ours) == list(ref) and len(ref) == 9
    for name in ref:
        assert np.count_nonzero(ref[name]) > 0, name
        assert np.count_nonzero(ours[name] != ref[name]) == 0, f"{name}: Lava vs reference"
    assert report["netx"]["output"] == ref_report["netx"]["output"]
    print(f"reference {mid - start:.2f} s, spikeport Lava {end - mid:.2f} s: 9 layers x 9 steps, 0 mismatches")


@pytest.mark.lava
@pytest.mark.parametrize("net,steps", [("square_network.net", LAVA_STEPS), ("network.net", 9)])
def test_lava_dl_netx_on_lava_equals_spikeport(net, steps):
    """lava-dl's own netx Network on Lava, fed like test_pilotnet_sdnn (the Delta's a_in), every layer."""
    from runs import reference_spikes
    from spikeport.runtime.lava.lavadl import run_lavadl_netx
    from spikeport.runtime.recording import recorded

    x = np.repeat(frame(square=net.startswith("square")), steps, axis=1)
    graph = graph_from_netx(SDNN / net, x.shape[2:], T=steps, input_drive="graded")
    _, ref = reference_spikes(graph, x)
    start = time.perf_counter()
    theirs = run_lavadl_netx(SDNN / net, x)
    wall = time.perf_counter() - start
    assert len(theirs) == len(recorded(graph))
    for name, layer in zip(recorded(graph), theirs, strict=True):
        assert np.count_nonzero(layer) > 0, name
        assert np.count_nonzero(ref[name].reshape(layer.shape) != layer) == 0, f"{name}: lava-dl netx vs reference"
    print(f"lava-dl netx {net}: {len(theirs)} layers x {steps} steps, 0 mismatches, {wall:.2f} s")


def test_check_hw_counts_the_sdnn_neurons_and_their_state():
    """check-hw on pilotnet_sdnn: SigmaDelta and Sigma are neuron groups of their layer sizes with state; the Delta
    input encoder is a host process, as Intel's hardware runs keep it (skip_layers=1), and its frame reaches the
    first Conv through PyToN3ConvAdapter."""
    from spikeport.runtime.loihi2.check_hw import check_hw

    result = check_hw(graph_from_netx(SDNN / "network.net", T=9))
    procs = {p.name: p for p in result.processes}
    assert (procs["layer0.neuron"].type, procs["layer0.neuron"].placement) == ("Delta", "host")
    assert result.to_dict()["totals"]["host_computing"] == ["layer0.neuron"]
    assert (procs["layer1.neuron"].type, procs["layer1.neuron"].neurons) == ("SigmaDelta", 24 * 16 * 49)
    assert (procs["layer9.neuron"].type, procs["layer9.neuron"].neurons) == ("Sigma", 1)
    for name, vars_ in (("layer0.neuron", 3), ("layer1.neuron", 4), ("layer9.neuron", 1)):
        assert len(procs[name].state) == vars_
    for name, vars_ in (("layer1.neuron", 4), ("layer9.neuron", 1)):
        assert procs[name].state_bytes == vars_ * 3 * procs[name].neurons
    (into_chip,) = [b for b in result.plan.boundaries if b.host == "layer0.neuron"]
    assert (into_chip.adapter, into_chip.chip) == ("eio.spike.PyToN3ConvAdapter", "layer1.conv.s_in.PyToN3ConvAdapter")
    assert not [b for b in result.plan.boundaries if b.host == "host RingBuffer (input)"]  # the frame: host to host
