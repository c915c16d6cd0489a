"""The counter records (spikeport/counters.py): one place that the run report, the counting, the energy estimate and
the report's tables read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import counters
from spikeport.gather.stage import summarize as build_summary
from spikeport.hw_profiles import load_profile
from spikeport.ir.graph import Graph, Node
from spikeport.ir.ops import infer_shapes, validate
from spikeport.metrics import energy_records as E
from spikeport.report.inputs import ReportOptions
from spikeport.run_report import LAYER_COUNTER_NAMES, REQUIRED_COUNTER_NAMES, LayerReport, RunReport
from spikeport.runtime.counter import RunCounter, build_report
from spikeport.runtime.executor import to_channels_last
from spikeport.runtime.sim.reference import ReferenceSimulator


def test_records_are_the_run_reports_keys_in_its_order():
    assert [c.name for c in counters.COUNTERS] == list(counters.BY_NAME)  # names unique
    assert LAYER_COUNTER_NAMES == tuple(c.name for c in counters.LAYER)
    # version 1 of the run report: these five in every file, the others optional
    assert REQUIRED_COUNTER_NAMES == ("spikes", "synops", "macs", "neuron_updates", "dendritic_updates")
    with pytest.raises(KeyError, match="unknown counter 'spiks'; counters: spikes, synops"):
        counters.counter("spiks")
    for c in counters.COUNTERS:
        assert c.unit and c.label and c.doc, f"{c.name}: unit, label and doc are the tables' and docs' words"


def test_every_price_is_an_entry_of_the_neuromorphic_profiles_and_the_rest_is_sorted_by_value_kind():
    for name in ("loihi2", "loihi1"):
        profile = load_profile(name)
        for c in counters.PRICED:
            assert profile.has("energy", c.price.entry), f"{name} has no '{c.price.entry}' to price {c.name}"
    assert {c.name for c in counters.COUNTERS if c.price.by_kind} == set(E.BY_KIND)
    assert E.CLASSES == (*E.KIND_CLASSES, *(c.name for c in counters.PRICED))


def test_a_layer_row_holds_every_counter_and_writes_them_key_for_key():
    row = LayerReport("fc", "dense", counts={key: [1, 2] for key in LAYER_COUNTER_NAMES})
    assert row.synops == [1, 2] and row.total("macs") == 3
    assert list(row.to_dict()) == ["name", "op", "input_kind", "neurons", "fan_out", "state_bytes", "weight_bytes"] + [
        *LAYER_COUNTER_NAMES
    ]
    with pytest.raises(AttributeError, match="no attribute 'spiks'"):
        _ = row.spiks
    with pytest.raises(KeyError, match="unknown counter"):
        row.counter("spiks")


def test_a_run_report_of_version_1_without_the_optional_counters_reads_them_as_zeros():
    layer = {"name": "lif", "op": "lif", "neurons": 4, "newer_key": 1}
    layer |= {key: [1, 0] for key in REQUIRED_COUNTER_NAMES}
    data = {"schema": "spikeport.run", "schema_version": 1, "executor": "reference", "samples": 1, "layers": [layer]}
    report = RunReport.from_dict(json.loads(json.dumps(data)))
    row = report.layers[0]
    optional = [key for key in LAYER_COUNTER_NAMES if key not in REQUIRED_COUNTER_NAMES]
    assert optional and all(row.counter(key) == [0, 0] for key in optional)
    assert row.extra == {"newer_key": 1} and row.spikes == [1, 0]
    again = RunReport.from_dict(report.to_dict())
    assert again == report and again.to_dict() == report.to_dict()


def test_counts_are_the_records_keys_and_totals_sum_them():
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    report = ReferenceSimulator(graph).run(to_channels_last(random_images(4, seed=2).numpy()))
    assert list(report.totals or {}) == list(LAYER_COUNTER_NAMES)
    for key in LAYER_COUNTER_NAMES:
        assert report.totals[key] == sum(row.total(key) for row in report.layers)
    for row in report.layers:
        assert list(row.counts) == list(LAYER_COUNTER_NAMES)


def test_a_per_run_counter_goes_to_totals_alone(monkeypatch):
    """Scope.RUN: one number for the whole run, in totals (a per-layer counter is refused there)."""
    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    counter = RunCounter(graph)
    with pytest.raises(KeyError, match="'spikes' is counted per layer"):
        build_report(graph, counter, [], None, 0.0, "reference", samples=1, run_counts={"spikes": 1})
    restarts = counters.Counter("restarts", "restarts", "restarts", "networks restarted", scope=counters.Scope.RUN)
    monkeypatch.setattr(counters, "COUNTERS", (*counters.COUNTERS, restarts))
    monkeypatch.setitem(counters.BY_NAME, "restarts", restarts)
    report = build_report(graph, counter, [], None, 0.0, "reference", samples=2, run_counts={"restarts": 2})
    assert (report.totals or {})["restarts"] == 2
    assert all("restarts" not in row.counts for row in report.layers)
    summary = build_summary([report], options=ReportOptions(profiles=("loihi2",), gpu_baseline=False))
    assert summary.runs[0].totals["restarts"] == 1  # per inference


def test_the_tables_show_a_diagnostic_where_a_run_counted_it():
    diagnostic = next(c for c in counters.LAYER if c.column is counters.Column.NONZERO)
    quiet = counters.columns({diagnostic.name: 0})
    assert diagnostic not in quiet and all(c.column is counters.Column.ALWAYS for c in quiet)
    assert diagnostic in counters.columns({diagnostic.name: 0}, {diagnostic.name: 3})
    assert not any(c.column is counters.Column.NEVER for c in counters.columns({c.name: 1 for c in counters.LAYER}))


def overflowing_sdnn(T: int = 6):
    """spikes -> dense -> sigma_delta -> dense -> sigma decoder, with weights that drive both neurons' 24-bit input
    accumulators (sigma) past +-2^23 within a few steps."""
    rng = np.random.default_rng(0)
    g = Graph(nodes={}, T=T, quantized=True, meta={"layout": "channels_last"})
    g.add(Node("input", "input", [], {"kind": "spikes", "bits": 2, "frac_bits": 0}, {}, (6,)))
    weights = rng.integers(60, 127, (5, 6)) * rng.choice([-1, 1], (5, 6))
    g.add(
        Node(
            "fc1", "dense", ["input"], {"in_features": 6, "out_features": 5, "weight_exp": 14}, {"weight_mant": weights}
        )
    )
    sd = {"vth": 2, "spike_exp": 0, "state_exp": 0, "cum_error": 0, "warmup": 0}
    g.add(Node("sd1", "sigma_delta", ["fc1"], sd, {"bias": np.zeros(5, np.int32)}))
    g.add(
        Node(
            "fc2",
            "dense",
            ["sd1"],
            {"in_features": 5, "out_features": 3, "weight_exp": 0},
            {"weight_mant": np.full((3, 5), 40)},
        )
    )
    g.add(Node("out", "sigma", ["fc2"], {"warmup": 0}, {}))
    validate(infer_shapes(g))
    return g


def test_accumulator_overflows_counted_by_every_executor_and_shown_by_the_report(tmp_path):
    """The counter issue 32 added through its record alone: the sigma-delta neurons' and the sigma decoder's 24-bit
    input accumulators past +-2^23, counted by their kernels on numpy and on the torch device counter alike, written
    in the run report, read back from a file without it as zeros, and shown by the report's table and plot."""
    import torch

    from spikeport.fixedpoint import STATE_MAX
    from spikeport.report import plots, tables
    from spikeport.runtime.executor import GraphExecutor
    from spikeport.runtime.sim.torch_counts import DeviceCounter
    from spikeport.runtime.sim.torch_ops import TorchIntOps

    graph = overflowing_sdnn()
    spikes = np.random.default_rng(1).integers(0, 2, (5, graph.T, 6))
    seen: dict = {}

    def keep(t, name, out, extra):  # sigma after each step: the decoder's output, the sigma-delta's state
        if name in ("sd1", "out"):
            seen.setdefault(name, []).append(np.array(extra["sigma"] if name == "sd1" else out, np.float64))

    report = ReferenceSimulator(graph).run(spikes)
    GraphExecutor(graph).run(spikes, keep)
    for name in ("sd1", "out"):
        want = [int((np.abs(sigma) >= STATE_MAX).sum()) for sigma in seen[name]]
        assert report.layer(name).accumulator_overflows == want and sum(want) > 0, name
    assert report.layer("fc1").total("accumulator_overflows") == 0
    assert report.totals["accumulator_overflows"] == sum(report.layer(n).total("accumulator_overflows") for n in seen)

    device = DeviceCounter(graph, torch.device("cpu"))  # the same kernel counts, on tensors
    device.begin(None)
    with torch.no_grad():
        GraphExecutor(graph, TorchIntOps("cpu")).run(torch.as_tensor(spikes), device)
    device.flush()
    assert {n: row.counts for n, row in device.counter().layers.items()} == {r.name: r.counts for r in report.layers}

    path = tmp_path / "run.json"
    report.to_json(path)
    data = json.loads(path.read_text())
    assert all("accumulator_overflows" in layer for layer in data["layers"])
    for layer in data["layers"]:  # a run report written before the counter existed
        del layer["accumulator_overflows"]
    del data["totals"]["accumulator_overflows"]
    older = RunReport.from_dict(data)
    assert all(row.accumulator_overflows == [0] * graph.T for row in older.layers)

    options = ReportOptions(profiles=("loihi2",), gpu_baseline=False)
    run = build_summary([report], options=options).runs[0]
    table = tables.layers(run, 0)
    assert "accumulator overflows" in table.columns
    assert table.rows[-1][table.columns.index("accumulator overflows")] == f"{run.totals['accumulator_overflows']:,.0f}"
    assert "accumulator overflows" in plots.layers_svg(run, "x")
    quiet = build_summary([older], options=options).runs[0]
    assert "accumulator overflows" not in tables.layers(quiet, 0).columns
    assert "accumulator overflows" not in plots.layers_svg(quiet, "x")
