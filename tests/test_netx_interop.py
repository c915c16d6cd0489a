"""netx interop: export of the netx-expressible chain, import of netx files, parity with lava-dl's netx."""

import h5py
import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from runs import netx_spikes, reference_spikes
from spikeport.errors import ArtifactError, DataError
from spikeport.netx import inputs as netx_inputs, read as netx, weights as netx_weights, write as netx_export
from spikeport.runtime.compare import first_divergence
from spikeport.runtime.lava.lavadl import compare_layers, run_lavadl_netx


@pytest.fixture(scope="module")
def ssa_graph():
    return quantized_graph(spiky_model("ssa"), random_images(16, seed=1))


def spikes(shape, rate=0.3, seed=0):
    return (np.random.default_rng(seed).random(shape) < rate).astype(np.int8)


# ----------------------------------------------------------------------------------- no Lava runtime
def test_netx_dense_weight_mirrors_lava_dl_and_lava():
    """netx_dense_weight == netx optimize_weight_bits followed by Lava Dense's clip/truncate (real code)."""
    from spikeport.runtime.lava import compat as lava_compat

    lava_compat.import_lava()
    from lava.lib.dl.netx.utils import optimize_weight_bits
    from lava.utils.weightutils import clip_weights, determine_sign_mode, truncate_weights

    rng = np.random.default_rng(0)
    cases = [
        rng.integers(-128, 128, (6, 9)) * 2,
        rng.integers(-50, 51, (6, 9)),
        rng.integers(0, 255, (4, 5)),
        -rng.integers(0, 128, (4, 5)) * 2,
        rng.integers(-3, 4, (3, 3)) * 64,
        rng.integers(-256, 255, (5, 5)),
    ]
    for w in cases:
        w_opt, bits, exp, _ = optimize_weight_bits(w.copy())
        mode = determine_sign_mode(w_opt)
        lava = truncate_weights(clip_weights(w_opt, mode, num_bits=8), mode, bits).astype(np.int64)
        expected = lava >> -exp if exp < 0 else lava << exp
        assert np.array_equal(netx_weights.netx_dense_weight(w), expected), w
    with pytest.raises(ValueError, match="exceed"):  # one-signed weights beyond 8 bits: netx shifts by -1
        netx_weights.netx_dense_weight(-rng.integers(1, 200, (4, 5)) * 2)


def test_export_chain_and_everything_left_out_is_named(ssa_graph, tmp_path):
    exp = netx_export.export_netx(ssa_graph, tmp_path / "stem.net")
    assert exp.source == "patch_embed.proj_lif"  # the graded-pixel conv stays on the host
    assert [layer.neuron for layer in exp.layers] == [
        "patch_embed.proj_lif1",
        "patch_embed.proj_lif2",
        "patch_embed.proj_lif3",
        "patch_embed.rpe_lif",
    ]
    assert exp.layers[2].also_feeds == ["patch_embed.rpe_add"]
    left = {d["name"]: d["reason"] for d in exp.left_out}
    exported = {n for layer in exp.layers for n in (layer.synapse, layer.neuron)}
    assert set(left) | exported == set(ssa_graph.nodes) and not set(left) & exported
    assert "weight_exp" in left["patch_embed.proj_conv"] and "residual" in left["block.0.attn_add"]
    assert "attention" in left["block.0.attn.core"] and "readout" in left["head"]
    # netx's fixed bias_exp=6: the reported error is what the file really holds
    with h5py.File(exp.path) as f:
        g = f["layer/1"]
        assert g["type"][0] == b"conv" and list(g["shape"][()]) == [16, 8, 8]
        node = ssa_graph.nodes["patch_embed.proj_lif1"]
        bias = node.params["bias_mant"].astype(np.int64) << node.attrs["bias_exp"]
        error = np.abs(g["bias"][()].astype(np.int64) * 64 - bias)
        assert error.max() == exp.layers[0].bias_max_error <= 32
        assert np.count_nonzero(error) == exp.layers[0].bias_inexact
        assert g["neuron/iDecay"][()] == node.attrs["du"] + 1 and g["neuron/vThMant"][()] == node.attrs["vth"]


def test_imported_export_equals_spikeport_when_biases_are_multiples_of_64(ssa_graph, tmp_path):
    """With netx-representable biases the round trip is the identity on every integer and every spike."""
    import copy

    g = copy.deepcopy(ssa_graph)
    for node in g.by_op("lif"):  # snap the biases to multiples of 2**6
        if node.attrs["bias_exp"] >= 6:
            continue
        b = node.params["bias_mant"].astype(np.int64) << node.attrs["bias_exp"]
        node.params["bias_mant"] = ((b >> 6) << (6 - node.attrs["bias_exp"])).astype(np.int32)
    exp = netx_export.export_netx(g, tmp_path / "exact.net")
    assert exp.exact
    x = spikes((3, g.T, *g.nodes[exp.source].shape))
    _, ours = reference_spikes(netx_export.chain_graph(g, exp), x)
    imported = netx.graph_from_netx(exp.path, T=g.T)
    _, theirs = reference_spikes(imported, x)
    lifs = [n for n in imported.order if imported.nodes[n].op == "lif"]
    for layer, name in zip(exp.layers, lifs, strict=True):
        assert np.array_equal(ours[layer.neuron], theirs[name]), layer.neuron
    assert sum(int(v.sum()) for v in theirs.values()) > 0


def test_import_refuses_what_it_cannot_express(tmp_path):
    path = tmp_path / "pool.net"
    with h5py.File(path, "w") as f:
        f.create_dataset("layer/0/type", (1,), "S10", [b"pool"])
        f.create_dataset("layer/0/shape", data=np.array([4, 4, 2]))
    with pytest.raises(ArtifactError, match=r"layer/0.*'pool' is not supported"):
        netx.graph_from_netx(path, (8, 8, 2))
    with h5py.File(path, "w") as f:
        f.create_dataset("layer/0/type", (1,), "S10", [b"dense"])
        f.create_dataset("layer/0/shape", data=np.array([3]))
        f.create_dataset("layer/0/weight", data=np.ones((3, 4)))
        f.create_dataset("layer/0/neuron/type", data="ALIF")  # adaptive LIF: netx itself has no process for it
    with pytest.raises(ArtifactError, match=r"layer/0.*neuron type 'ALIF' is not supported.*CUBA, LOIHI, RF, RF_"):
        netx.graph_from_netx(path)
    with pytest.raises(ArtifactError, match="does not exist"):
        netx.graph_from_netx(tmp_path / "missing.net")


def test_spike_input_file_is_checked(tmp_path):
    np.save(tmp_path / "x.npy", np.full((2, 3, 5), 2))
    with pytest.raises(DataError, match="values other than 0 and 1"):
        netx_inputs.load_spike_inputs(tmp_path / "x.npy", (5,))
    with pytest.raises(DataError, match=r"expected \[S, T, 4\]"):
        netx_inputs.load_spike_inputs(tmp_path / "x.npy", (4,))
    slayer = spikes((2, 3, 6, 5, 7))  # [S, C, H, W, T]
    assert netx_inputs.from_slayer_layout(slayer)[1, 4, 5, 2, 0] == slayer[1, 0, 5, 2, 4]


# ----------------------------------------------------------------------------------- Lava runs
@pytest.mark.lava
def test_exported_file_loads_in_netx_and_computes_what_it_declares(ssa_graph, tmp_path):
    """lava-dl's netx.hdf5.Network on Lava runs the exported file; its spikes equal spikeport's reference
    on the file's own integers in every layer; against spikeport's integers they differ only through the
    reported bias rounding."""
    exp = netx_export.export_netx(ssa_graph, tmp_path / "stem.net")
    x = spikes((3, ssa_graph.T, *ssa_graph.nodes[exp.source].shape), rate=0.4, seed=1)
    theirs = run_lavadl_netx(exp.path, x, fast=True)
    imported = netx.graph_from_netx(exp.path, T=ssa_graph.T)
    _, ref = reference_spikes(imported, x)
    rows = compare_layers(imported, theirs, ref)
    assert all(r["mismatches"] == 0 for r in rows) and all(r["spikes"] > 0 for r in rows), rows
    _, ours = reference_spikes(netx_export.chain_graph(ssa_graph, exp), x)
    for layer, got in zip(exp.layers, theirs, strict=True):
        mism = int(np.count_nonzero(ours[layer.neuron] != got))
        assert mism == 0 or layer.bias_inexact > 0
        print(f"{layer.neuron}: netx vs spikeport {mism} of {got.size} (bias inexact on {layer.bias_inexact})")


def slayer_dense_net(path):
    import torch

    from spikeport.runtime.lava import compat as lava_compat

    lava_compat.import_lava()
    import lava.lib.dl.slayer as slayer

    torch.manual_seed(0)
    params = {"threshold": 1.25, "current_decay": 0.25, "voltage_decay": 0.03, "requires_grad": False}
    blocks = [
        slayer.block.cuba.Dense(params, 40, 32, weight_scale=3),
        slayer.block.cuba.Dense(params, 32, 24, weight_scale=3),
        slayer.block.cuba.Dense(params, 24, 10, weight_scale=3),
    ]
    x = torch.zeros(1, 40, 4)
    with torch.no_grad():
        for b in blocks:
            x = b(x)  # shapes are set by the first forward pass, as after training
    with h5py.File(path, "w") as f:  # lava-dl tutorials' Network.export_hdf5
        layer = f.create_group("layer")
        for i, b in enumerate(blocks):
            b.export_hdf5(layer.create_group(f"{i}"))
    return path


@pytest.mark.lava
def test_slayer_network_identical_spikes_in_netx_and_spikeport(tmp_path):
    """slayer-built 3-layer Dense CUBA net -> lava-dl export -> lava-dl netx on Lava fixed_pt == the same
    file through spikeport's importer on the reference simulator and on spikeport's Lava backend."""
    path = slayer_dense_net(tmp_path / "slayer.net")
    x = spikes((5, 16, 40))
    theirs = run_lavadl_netx(path, x)  # Lava's own Dense / LIFReset models
    graph = netx.graph_from_netx(path, T=16)
    ref_report, ref = netx_spikes(path, x, "reference")
    lava_report, lava = netx_spikes(path, x, "lava")
    for rows in (compare_layers(graph, theirs, ref), compare_layers(graph, theirs, lava)):
        assert [r["mismatches"] for r in rows] == [0, 0, 0] and all(r["spikes"] > 0 for r in rows), rows
    assert first_divergence(graph, ref, lava) is None
    assert ref_report["predictions"] == lava_report["predictions"]
    first = ref_report["layers"][1]  # synops of layer 0 = input spikes x 32 outputs
    assert sum(first["synops"]) == int(x.sum()) * 32 == sum(lava_report["layers"][1]["synops"])


@pytest.mark.lava
def test_conv_flatten_dense_netx_file_on_a_non_square_input(tmp_path):
    """conv -> conv (stride 2) -> flatten -> dense on a 6x8 map: H/W order, flips and flatten order."""
    import torch

    from spikeport.runtime.lava import compat as lava_compat

    lava_compat.import_lava()
    import lava.lib.dl.slayer as slayer

    torch.manual_seed(0)
    params = {"threshold": 1.0, "current_decay": 1.0, "voltage_decay": 0.1, "requires_grad": False}
    blocks = [
        slayer.block.cuba.Conv(params, 2, 4, 3, padding=1, weight_scale=4),
        slayer.block.cuba.Conv(params, 4, 6, 3, padding=1, stride=2, weight_scale=4),
        slayer.block.cuba.Flatten(),
        slayer.block.cuba.Dense(params, 6 * 3 * 4, 10, weight_scale=3),
    ]
    y = torch.zeros(1, 2, 6, 8, 4)
    with torch.no_grad():
        for b in blocks:
            y = b(y)
    path = tmp_path / "conv.net"
    with h5py.File(path, "w") as f:
        for i, b in enumerate(blocks):
            b.export_hdf5(f.create_group(f"layer/{i}"))
    x = spikes((3, 8, 6, 8, 2), rate=0.4, seed=1)
    theirs = run_lavadl_netx(path, x)
    graph = netx.graph_from_netx(path, (6, 8, 2), T=8)
    _, ref = netx_spikes(path, x, "reference", input_shape=(6, 8, 2))
    rows = compare_layers(graph, theirs, ref)
    assert [r["mismatches"] for r in rows] == [0, 0, 0] and all(r["spikes"] > 0 for r in rows), rows


@pytest.mark.lava
def test_cli_export_and_run_netx(ssa_graph, tmp_path, capsys):
    import json

    from spikeport.cli import main
    from spikeport.ir import artifact

    art = artifact.write(ssa_graph, tmp_path / "m.spk.h5")
    assert main(["export", str(art), "--netx", str(tmp_path / "stem.net"), "--json", str(tmp_path / "e.json")]) == 0
    info = json.loads((tmp_path / "e.json").read_text())
    assert info["source"] == "patch_embed.proj_lif" and len(info["layers"]) == 4
    path = slayer_dense_net(tmp_path / "slayer.net")
    np.save(tmp_path / "x.npy", spikes((3, 8, 40)))
    rc = main(
        [
            "run",
            str(path),
            "--inputs",
            str(tmp_path / "x.npy"),
            "--backend",
            "lava",
            "--compare",
            "reference",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert rc == 0 and report["compare"]["identical"] and report["samples"] == 3
    assert report["executor"] == "lava-fixed_pt" and report["netx"]["input_shape"] == [40]


# ------------------------------------------------------------ lava-dl's own netx files (issue 13)
def lava_dl_netx_tests():
    """lava-dl's wheel ships its netx test networks and their Loihi ground truth beside the package."""
    import sysconfig
    from pathlib import Path

    root = Path(sysconfig.get_paths()["purelib"]) / "tests" / "lava" / "lib" / "dl" / "netx"
    if not (root / "gts").is_dir():
        pytest.skip(f"lava-dl's netx test data is not installed ({root})")
    return root


def test_pilotnet_lif_imports_unmodified_with_netx_flatten_order():
    """pilotnet_lif: conv x5 -> flatten -> dense [100, 1, 1] -> dense -> dense -> dense, no flatten before
    the later dense layers (netx's Dense output is flat); the flattened dense keeps netx's (C, H, W) order."""
    path = lava_dl_netx_tests() / "gts" / "pilotnet_lif" / "network.net"
    graph = netx.graph_from_netx(path, T=4)
    lifs = [n for n in graph.order if graph.nodes[n].op == "lif"]
    assert [graph.nodes[n].shape for n in lifs] == [
        (66, 200, 3),
        (32, 99, 24),
        (15, 49, 36),
        (7, 24, 48),
        (4, 22, 64),
        (2, 20, 64),
        (1, 1, 100),
        (1, 1, 50),
        (1, 1, 10),
        (1, 1, 1),
    ]
    fc0 = graph.nodes["layer7.dense"]
    with h5py.File(path) as f:
        w = netx_weights.netx_dense_weight(f["layer/7/weight"][()])  # [100, 2560], inputs in (C, H, W) order
    kernel = fc0.params["weight_mant"].astype(np.int64) << fc0.attrs["weight_exp"]  # [out, H, W, C]
    o, c, h, x = 7, 33, 1, 13
    assert kernel[o, h, x, c] == w[o, c * 2 * 20 + h * 20 + x] and kernel.shape == (100, 2, 20, 64)


def test_dense_after_a_multi_pixel_map_without_flatten_is_refused(tmp_path):
    path = tmp_path / "noflat.net"
    with h5py.File(path, "w") as f:
        f.create_dataset("layer/0/type", (1,), "S10", [b"conv"])
        f["layer/0/shape"] = [3, 2, 2]
        f["layer/0/weight"] = np.ones((3, 2, 3, 3))
        f.create_dataset("layer/1/type", (1,), "S10", [b"dense"])
        f["layer/1/shape"] = [5]
        f["layer/1/weight"] = np.ones((5, 12))
        for i in (0, 1):
            f[f"layer/{i}/neuron/type"] = b"CUBA"
            f[f"layer/{i}/neuron/iDecay"], f[f"layer/{i}/neuron/vDecay"], f[f"layer/{i}/neuron/vThMant"] = 4096, 0, 9
    with pytest.raises(ArtifactError, match=r"layer/1.*\(2, 2, 3\) \(H, W, C\) map needs a flatten layer"):
        netx.graph_from_netx(path, (4, 4, 2))


def _lif_trace(graph, x):
    """Spikes, currents u and voltages v of every LIF, [T, *shape] each, of sample 0 on the reference simulator.
    With netx's iDecay 4096 (Lava du 4095) u forgets every step, so u = a_in << 6 (Lava's act_shift)."""
    from spikeport.runtime.executor import GraphExecutor

    trace = {}

    def observe(t, name, value, extra):
        if graph.nodes[name].op == "lif":
            row = (np.asarray(value)[0].copy(), np.asarray(extra["a_in"])[0] << 6, np.asarray(extra["v"])[0].copy())
            trace.setdefault(name, []).append(row)

    GraphExecutor(graph).run(x, observer=observe)
    return {n: tuple(np.stack([r[i] for r in rows]) for i in range(3)) for n, rows in trace.items()}


def test_pilotnet_lif_bias_driven_equals_loihi_ground_truth_in_every_layer_and_step():
    """gts/pilotnet_lif fed as lava-dl's test_hdf5_nx feeds it (the image as the input neuron's bias_mant, one
    sample of 17 steps: the ground truth resets the input layer at its step 18): spikes of all 10 layers and
    currents u and voltages v of the 9 synapse layers equal the Loihi recording at every step the recording
    covers. Layer k of the recording lags the input by k steps (one per synapse); spikeport's reference records
    each layer from the step the stream reaches it. The rule for v: where a neuron spikes, Lava's model (and
    spikeport) hold v = 0 after the reset, the Loihi recording holds 128 at every such neuron-step; everywhere
    else v is identical."""
    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    T = 17
    graph = netx.graph_from_netx(root / "network.net", T=T, input_drive="bias")
    image = np.load(root / "image.npy")  # (x, y, f) = (W, H, C)
    trace = _lif_trace(graph, image.transpose(1, 0, 2)[None])
    names = ["input", "conv-0", "conv-1", "conv-2", "conv-3", "conv-4", "fc-0", "fc-1", "fc-2", "fc-3"]
    lifs = [n for n in graph.order if graph.nodes[n].op == "lif"]
    compared = 0
    for k, (name, gt) in enumerate(zip(lifs, names, strict=True)):
        s, u, v = trace[name]
        if s.ndim == 4 and graph.nodes[name].shape[:2] != (1, 1):
            s, u, v = (a.transpose(2, 1, 3, 0) for a in (s, u, v))  # -> (x, y, f, t) as recorded
        else:
            s, u, v = (a.reshape(T, -1).T for a in (s, u, v))
        steps = min(T, 24 - k)
        if gt == "fc-3":
            # the recording of the output layer (25 steps, float) has currents before any input can reach
            # it (u = 640 at step 3, 9 synapses deep): it is not from this run. lava-dl's test compares
            # this layer at its step 15 only (index 14), where it is 0.
            assert u[..., 14 - k] == np.load(root / "fc-3-u.npy")[..., 14] == 0
            continue
        gt_s = np.load(root / f"{gt}.npy")[..., k : k + steps]
        assert np.array_equal(s[..., :steps], gt_s), gt
        if k:
            gt_u = np.load(root / f"{gt}-u.npy")[..., k : k + steps]
            assert np.array_equal(u[..., :steps], gt_u), gt
            gt_v, spiked = np.load(root / f"{gt}-v.npy")[..., k : k + steps], s[..., :steps].astype(bool)
            assert np.array_equal(v[..., :steps][~spiked], gt_v[~spiked]), gt
            assert (v[..., :steps][spiked] == 0).all() and (gt_v[spiked] == 128).all(), gt
        compared += steps
        assert gt_s.sum() > 0
    assert compared == 17 * 8 + 16


def test_tinynet_bias_driven_equals_ground_truth_in_every_layer():
    """tiny.net + gts/tinynet as lava-dl's test_tinynet feeds it (input_bias as the input neuron's bias):
    input, conv and output spikes equal the recording (each layer's recording starts one step before the
    stream reaches it, as in lava-dl's test: gt[..., 1:])."""
    root = lava_dl_netx_tests()
    graph = netx.graph_from_netx(root / "tiny.net", T=16, input_drive="bias")
    bias = np.load(root / "gts" / "tinynet" / "input_bias.npy")  # (x, y, f)
    _, out = reference_spikes(graph, bias.transpose(1, 0, 2)[None])
    lifs = [n for n in graph.order if graph.nodes[n].op == "lif"]
    for name, gt in zip(lifs, ["input", "layer1", "output"], strict=True):
        expected = np.load(root / "gts" / "tinynet" / f"{gt}.npy")[0, ..., 1:]  # (C, H, W, t)
        ours = out[name][0].transpose(3, 1, 2, 0)[..., :15]
        assert np.array_equal(ours, expected) and expected.sum() > 0, gt


def test_bias_drive_is_refused_where_it_is_not_the_input_neurons_bias(tmp_path):
    root = lava_dl_netx_tests()
    with pytest.raises(ArtifactError, match=r"layer/0.*input_drive='bias' needs an 'input' layer with a neuron"):
        netx.graph_from_netx(root / "gts" / "ntidigits" / "ntidigits.net", input_drive="bias")
    path = tmp_path / "leaky.net"
    with h5py.File(root / "tiny.net") as src, h5py.File(path, "w") as f:
        src.copy("layer", f)
        del f["layer/0/neuron/iDecay"]
        f["layer/0/neuron/iDecay"] = 2048
    with pytest.raises(ArtifactError, match=r"layer/0.*iDecay 4096.*found LOIHI with iDecay 2048"):
        netx.graph_from_netx(path, input_drive="bias")


@pytest.mark.lava
def test_tinynet_bias_driven_on_lava_equals_reference():
    """The bias drive on spikeport's Lava backend (the image streamed as graded input, reset per sample):
    identical spikes to the reference in every layer and step, two different samples."""
    root = lava_dl_netx_tests()
    bias = np.load(root / "gts" / "tinynet" / "input_bias.npy").transpose(1, 0, 2)
    x = np.stack([bias, np.roll(bias, 3, axis=0)])
    ref_report, ref = netx_spikes(root / "tiny.net", x, "reference", input_drive="bias", steps=16)
    lava_report, lava = netx_spikes(root / "tiny.net", x, "lava", input_drive="bias", steps=16)
    graph = netx.graph_from_netx(root / "tiny.net", T=16, input_drive="bias")
    assert first_divergence(graph, ref, lava) is None
    assert all(int(lava[n].sum()) > 0 for n in recorded_lifs(graph))
    assert not np.array_equal(lava["layer1.neuron"][0], lava["layer1.neuron"][1])  # the samples differ
    assert lava_report["netx"]["input_drive"] == "bias" and ref_report["predictions"] == lava_report["predictions"]
    with pytest.raises(DataError, match="integers in -4096..4095"):
        netx_spikes(root / "tiny.net", x * 100, "reference", input_drive="bias", steps=4)


def recorded_lifs(graph):
    return [n for n in graph.order if graph.nodes[n].op == "lif"]


PILOTNET_GT = ["input", "conv-0", "conv-1", "conv-2", "conv-3", "conv-4", "fc-0", "fc-1", "fc-2"]


def pilotnet_gt_counts(root, k, T):
    """Spikes per step of recorded layer k (x, y, f, t), aligned with spikeport's record of that layer: the
    recording lags the input by k steps; the last steps of deep layers are past its 24 steps."""
    gt = np.load(root / f"{PILOTNET_GT[k]}.npy")
    return gt.reshape(-1, gt.shape[-1]).sum(axis=0)[k : k + T].tolist()


def test_cli_runs_pilotnet_lif_on_lava_dl_image_file_as_bias_input(tmp_path, capsys):
    """`spikeport run network.net --inputs image.npy --input-layout netx --input-drive bias --steps 17`: lava-dl's
    own files, unmodified; the per-step spike counts of the report equal the Loihi recording in every layer
    it covers. The same images in spikeport's layout, two samples, give exactly twice the counts."""
    import json

    from spikeport.cli import main

    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    net, image = str(root / "network.net"), root / "image.npy"
    argv = ["run", net, "--input-drive", "bias", "--steps", "17"]
    assert main([*argv, "--inputs", str(image), "--input-layout", "netx", "--json", str(tmp_path / "a.json")]) == 0
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["netx"]["input_drive"] == "bias" and report["netx"]["input_shape"] == [66, 200, 3]
    layers = {layer["name"]: layer for layer in report["layers"]}
    lifs = [n for n in layers if n.endswith(".neuron")]
    for k, name in enumerate(lifs[: len(PILOTNET_GT)]):
        expected = pilotnet_gt_counts(root, k, 17)
        assert layers[name]["spikes"][: len(expected)] == expected and sum(expected) > 0, name
    hwc = np.load(image).transpose(1, 0, 2)
    np.save(tmp_path / "two.npy", np.stack([hwc, hwc]).astype(np.float64))  # integral floats are accepted
    assert main([*argv, "--inputs", str(tmp_path / "two.npy"), "--json", str(tmp_path / "b.json")]) == 0
    twice = json.loads((tmp_path / "b.json").read_text())
    assert twice["samples"] == 2
    assert [[2 * c for c in layer["spikes"]] for layer in report["layers"]] == [
        layer["spikes"] for layer in twice["layers"]
    ]


def test_cli_says_which_input_drive_and_shape_a_netx_file_expects(tmp_path, capsys):
    from spikeport.cli import main

    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    net, image = str(root / "network.net"), str(root / "image.npy")

    def error(*args):
        capsys.readouterr()
        assert main(["run", net, *args]) == 2
        return capsys.readouterr().err

    assert "values other than 0 and 1" in error("--inputs", image, "--input-layout", "netx")  # image as spikes
    assert "--input-drive bias --steps T" in error()
    assert "give it with --steps T" in error("--inputs", image, "--input-drive", "bias")
    bias = ["--input-drive", "bias", "--steps", "4"]
    msg = error("--inputs", image, *bias)  # lava-dl's (x, y, f) read as (H, W, C)
    assert "inputs have shape (200, 66, 3) per sample" in msg and "reads (66, 200, 3)" in msg
    np.save(tmp_path / "spikes.npy", spikes((1, 4, 66, 200, 3)))
    assert "looks like spikes with a time axis" in error("--inputs", str(tmp_path / "spikes.npy"), *bias)
    np.save(tmp_path / "frac.npy", np.full((1, 66, 200, 3), 0.5))
    assert "frac.npy: bias inputs must be integers" in error("--inputs", str(tmp_path / "frac.npy"), *bias)
    assert "applies to input_drive='bias' only" in error("--inputs", str(tmp_path / "spikes.npy"), "--steps", "4")
    capsys.readouterr()  # an artifact runs on its data set: the netx input flags are refused, not ignored
    assert main(["run", str(tmp_path / "m.spk.h5"), "--input-drive", "bias", "--steps", "4"]) == 2
    said = capsys.readouterr().err
    assert "steps = 4 (--steps) applies to lava-dl netx files and artifacts of a netx file only" in said


def test_netx_and_slayer_layouts_read_lava_dl_files():
    """tinynet's input.npy (slayer [S, C, H, W, T]) and pilotnet_lif's input.npy (netx (x, y, f, t), one
    sample) land in spikeport's [S, T, H, W, C] at the same (sample, step, row, column, channel)."""
    root = lava_dl_netx_tests() / "gts"
    tiny = netx_inputs.load_inputs(root / "tinynet" / "input.npy", "spikes", (16, 16, 3), layout="slayer")
    raw = np.load(root / "tinynet" / "input.npy")
    assert tiny.shape == (1, 16, 16, 16, 3) and tiny[0, 5, 2, 9, 1] == raw[0, 1, 2, 9, 5]
    pil = netx_inputs.load_inputs(root / "pilotnet_lif" / "input.npy", "spikes", (66, 200, 3), layout="netx")
    raw = np.load(root / "pilotnet_lif" / "input.npy")
    assert pil.shape == (1, 24, 66, 200, 3) and pil[0, 7, 40, 150, 2] == raw[150, 40, 2, 7] and pil.sum() > 0
    bias = netx_inputs.load_inputs(root / "tinynet" / "input_bias.npy", "bias", (16, 16, 3), layout="netx")
    assert bias.dtype == np.int32 and bias[0, 3, 11, 2] == np.load(root / "tinynet" / "input_bias.npy")[11, 3, 2]
    img = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)  # slayer images [S, C, H, W]
    assert netx_inputs.to_spikeport_layout(img, "bias", "slayer")[1, 2, 3, 0] == img[1, 0, 2, 3]


@pytest.mark.lava
def test_pilotnet_lif_bias_driven_on_lava_equals_reference():
    """pilotnet_lif (10 layers, 66 x 200 x 3 image) with the bias drive on spikeport's Lava backend, two
    different samples through `api.run(..., compare="reference")`: identical spikes in every layer at every
    step (so, through the reference test above, Loihi's recording too) and the same predictions."""
    from spikeport import api

    root = lava_dl_netx_tests() / "gts" / "pilotnet_lif"
    image = np.load(root / "image.npy")  # (x, y, f)
    x = np.stack([image, image[::-1]])  # netx layout [S, W, H, C]; the second sample mirrored left-right
    report = api.run(
        root / "network.net", "lava", "reference", inputs=x, input_drive="bias", steps=17, input_layout="netx"
    )
    assert report.compare.identical and report.compare.first_divergence is None
    assert report.executor == "lava-fixed_pt" and report.samples == 2
    rows = {r.layer: r for r in report.compare.layers}
    assert len(rows) == 10 and all(rows[f"layer{i}.neuron"].spikes > 0 for i in (0, 1, 5, 7, 8, 9))
    first = report.layer("layer1.neuron").spikes
    assert first[:17] != [2 * c for c in pilotnet_gt_counts(root, 1, 17)]  # the mirrored sample differs
