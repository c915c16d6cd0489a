"""The kernel records: one per op, documented, and the sigma-delta op added through the registry alone."""

import re
from pathlib import Path

import numpy as np
import pytest

from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS, kernel
from spikeport.ir.ops import infer_shapes, validate
from spikeport.ir.registry import Registry
from spikeport.runtime.counter import RunCounter
from spikeport.runtime.sim.reference import ReferenceSimulator

DOCS = Path(__file__).resolve().parents[1] / "docs" / "ops.md"


def test_every_op_has_a_record_named_after_it_and_a_row_in_docs():
    table = set(re.findall(r"^\| `([a-z_]+)` \|", DOCS.read_text(), re.M))
    assert set(KERNELS) == table, f"docs/ops.md rows {sorted(table)} != records {sorted(KERNELS)}"
    for op, record in KERNELS.items():
        assert record.op == op
        assert record.spec.doc, f"{op}: the record's doc (its equation) is empty"


def test_registry_refuses_unknown_op_by_node_and_lists_known():
    with pytest.raises(ConversionError, match=r"node 'x\.y': op 'gru' has no kernel record; ops with one: add"):
        kernel("gru", "x.y")
    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("a", 2)


def sigma_delta_graph(seed: int = 0, T: int = 12) -> Graph:
    """spikes -> dense -> sigma_delta -> dense (graded input) -> sigma_delta (cumulative error)."""
    rng = np.random.default_rng(seed)
    g = Graph(nodes={}, T=T, quantized=True, meta={"layout": "channels_last"})
    g.add(Node("input", "input", [], {"kind": "spikes", "bits": 2, "frac_bits": 0}, {}, (6,)))
    g.add(
        Node(
            "fc1",
            "dense",
            ["input"],
            {"in_features": 6, "out_features": 5, "weight_exp": 3},
            {"weight_mant": rng.integers(-100, 100, (5, 6)).astype(np.int32)},
        )
    )
    g.add(
        Node(
            "sd1",
            "sigma_delta",
            ["fc1"],
            {"vth": 2, "spike_exp": 2, "state_exp": 3, "cum_error": 0, "warmup": 1},
            {"bias": rng.integers(-5, 5, 5).astype(np.int32)},
        )
    )
    g.add(
        Node(
            "fc2",
            "dense",
            ["sd1"],
            {"in_features": 5, "out_features": 3, "weight_exp": 0},
            {"weight_mant": rng.integers(-100, 100, (3, 5)).astype(np.int32)},
        )
    )
    g.add(
        Node(
            "sd2",
            "sigma_delta",
            ["fc2"],
            {"vth": 40, "spike_exp": 0, "state_exp": 0, "cum_error": 1, "warmup": 2},
            {"bias": np.array([3, -2, 0], np.int32)},
        )
    )
    validate(infer_shapes(g))
    return g


def record(graph: Graph, x, executor=None) -> dict:
    out: dict = {}
    run = executor or ReferenceSimulator(graph).run_batch
    run(
        x,
        observer=lambda t, name, value, extra: out.setdefault(name, []).append(
            np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        ),
    )
    return {k: np.stack(v, axis=1).astype(np.int64) for k, v in out.items()}


def test_validate_changes_nothing_and_infer_shapes_fills_in_the_shapes():
    g = sigma_delta_graph()
    inferred = {name: node.shape for name, node in g.nodes.items()}
    for node in g.nodes.values():
        if node.inputs:
            node.shape = ()
    with pytest.raises(ConversionError, match=r"node 'fc1': shape \(\) does not match the shape \(5,\)"):
        validate(g)
    assert all(node.shape == () for node in g.nodes.values() if node.inputs)  # validate wrote nothing
    assert infer_shapes(g) is g and {name: node.shape for name, node in g.nodes.items()} == inferred
    validate(g)
    g.nodes["sd2"].shape = (4,)  # a shape already set must agree with the rule
    with pytest.raises(ConversionError, match=r"node 'sd2': shape \(4,\) does not match the shape \(3,\)"):
        infer_shapes(g)


def test_sigma_delta_reference_sends_signed_graded_deltas_and_counts_them():
    g = sigma_delta_graph()
    x = np.random.default_rng(1).integers(0, 2, (4, g.T, 6))
    out = record(g, x)
    sd1 = out["sd1"]
    assert sd1.min() < 0 < sd1.max(), "deltas of a ReLU activation go both ways"
    counter = RunCounter(g)
    ReferenceSimulator(g).run_batch(x, counter)
    assert sum(counter.layers["sd1"].spikes) == np.count_nonzero(sd1)
    assert sum(counter.layers["sd1"].neuron_updates) == sd1.size
    assert counter.layers["sd2"].state_bytes == 3 * 3 * 4  # cum_error keeps a fourth variable
    assert sum(counter.layers["fc2"].synops) == np.count_nonzero(sd1) * 3


def test_sigma_delta_torch_step_equals_numpy_step():
    torch = pytest.importorskip("torch")
    from spikeport.convert.fakequant import FakeQuantExecutor

    g = sigma_delta_graph(seed=3)
    x = np.random.default_rng(4).integers(0, 2, (3, g.T, 6))
    ref = record(g, x)
    fq = FakeQuantExecutor(g)
    got = record(g, x, lambda images, observer: fq.run(torch.as_tensor(images), observer=observer))
    for name in ref:
        assert np.array_equal(ref[name], got[name]), name


def test_sigma_delta_has_no_float_plan():
    from spikeport.convert.quantize import plan

    g = sigma_delta_graph()
    g.quantized = False
    with pytest.raises(ConversionError, match="sd1.*sigma_delta.*netx SDNN"):
        plan(g)


def write_sdnn_netx(path, seed: int = 0):
    """A two-layer SDNN netx file (dense 6 -> 5 -> 3, SigmaDelta neurons with biases), as slayer writes it."""
    import h5py

    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        for i, (n_in, n_out, vth) in enumerate(((6, 5, 0), (5, 3, 0))):
            g = f.create_group(f"layer/{i}")
            g["type"] = np.array([b"dense"])
            g["shape"] = np.array([n_out])
            g["weight"] = (rng.integers(-60, 60, (n_out, n_in)) * 2).astype(np.float32)
            g["bias"] = rng.integers(-40, 80, n_out).astype(np.float32)
            g["neuron/type"] = np.array([b"SDNN"])
            g["neuron/vThMant"] = np.array([vth])
    return path


@pytest.mark.lava
def test_sigma_delta_on_lava_is_bit_exact_with_the_reference():
    from runs import lava_spikes as run_lava

    g = sigma_delta_graph(T=12)
    x = np.random.default_rng(1).integers(0, 2, (1, g.T, 6))
    ref = record(g, x)
    _, spikes = run_lava(g, x)
    assert set(spikes) == {"sd1", "sd2"}
    for name in spikes:
        assert np.array_equal(spikes[name], ref[name]), name
    assert np.count_nonzero(ref["sd2"]) > 2
    with pytest.raises(ConversionError, match="sd1.*no reset between samples"):
        run_lava(g, np.zeros((2, g.T, 6), np.int64))


@pytest.mark.lava
def test_netx_sdnn_file_imports_as_sigma_delta_and_matches_lava_dl(tmp_path):
    from runs import lava_spikes as run_lava
    from spikeport.netx.read import graph_from_netx
    from spikeport.runtime.lava.lavadl import run_lavadl_netx

    path = write_sdnn_netx(tmp_path / "sdnn.net")
    x = np.random.default_rng(2).integers(0, 2, (1, 10, 6))
    graph = graph_from_netx(path, (6,), T=10)
    assert [graph.nodes[n].op for n in graph.order] == ["input", "dense", "sigma_delta", "dense", "sigma_delta"]
    ref = record(graph, x)
    theirs = run_lavadl_netx(path, x)  # lava-dl's own netx Network on Lava's own models
    _, ours = run_lava(graph, x)
    for k, name in enumerate(["layer0.neuron", "layer1.neuron"]):
        assert np.count_nonzero(ref[name]) > 0, name
        assert np.array_equal(ref[name], theirs[k]), f"{name}: reference vs lava-dl netx"
        assert np.array_equal(ref[name], ours[name]), f"{name}: reference vs spikeport's Lava graph"
