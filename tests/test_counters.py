"""The counter records (spikeport/counters.py): one place that the run report, the counting, the energy estimate and
the report's tables read."""

from __future__ import annotations

import json

import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import counters
from spikeport.hw_profiles import load_profile
from spikeport.metrics import energy as E
from spikeport.run_report import COUNTERS, LAYER_COUNTERS, LayerReport, RunReport
from spikeport.runtime.counter import Counter, build_report
from spikeport.runtime.sim.executor import to_channels_last
from spikeport.runtime.sim.reference import ReferenceSimulator


def test_records_are_the_run_reports_keys_in_its_order():
    assert [c.name for c in counters.COUNTERS] == list(counters.BY_NAME)  # names unique
    assert COUNTERS == tuple(c.name for c in counters.LAYER)
    # version 1 of the run report: these five in every file, the others optional
    assert LAYER_COUNTERS == ("spikes", "synops", "macs", "neuron_updates", "dendritic_updates")
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
    row = LayerReport("fc", "dense", counts={key: [1, 2] for key in COUNTERS})
    assert row.synops == [1, 2] and row.total("macs") == 3
    assert list(row.to_dict()) == ["name", "op", "input_kind", "neurons", "fan_out", "state_bytes", "weight_bytes"] + [
        *COUNTERS
    ]
    with pytest.raises(AttributeError, match="no attribute 'spiks'"):
        _ = row.spiks
    with pytest.raises(KeyError, match="unknown counter"):
        row.counter("spiks")


def test_a_run_report_of_version_1_without_the_optional_counters_reads_them_as_zeros():
    layer = {"name": "lif", "op": "lif", "neurons": 4, "newer_key": 1}
    layer |= {key: [1, 0] for key in LAYER_COUNTERS}
    data = {"schema": "spikeport.run", "schema_version": 1, "executor": "reference", "samples": 1, "layers": [layer]}
    report = RunReport.from_dict(json.loads(json.dumps(data)))
    row = report.layers[0]
    optional = [key for key in COUNTERS if key not in LAYER_COUNTERS]
    assert optional and all(row.counter(key) == [0, 0] for key in optional)
    assert row.extra == {"newer_key": 1} and row.spikes == [1, 0]
    again = RunReport.from_dict(report.to_dict())
    assert again == report and again.to_dict() == report.to_dict()


def test_counts_are_the_records_keys_and_totals_sum_them():
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    report = ReferenceSimulator(graph).run(to_channels_last(random_images(4, seed=2).numpy()))
    assert list(report.totals or {}) == list(COUNTERS)
    for key in COUNTERS:
        assert report.totals[key] == sum(row.total(key) for row in report.layers)
    for row in report.layers:
        assert list(row.counts) == list(COUNTERS)


def test_a_per_run_counter_goes_to_totals_alone(monkeypatch):
    """Scope.RUN: one number for the whole run, in totals (a per-layer counter is refused there)."""
    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    counter = Counter(graph)
    with pytest.raises(KeyError, match="'spikes' is counted per layer"):
        build_report(graph, counter, [], None, 0.0, "reference", samples=1, run_counts={"spikes": 1})
    restarts = counters.Counter("restarts", "restarts", "restarts", "networks restarted", scope=counters.Scope.RUN)
    monkeypatch.setattr(counters, "COUNTERS", (*counters.COUNTERS, restarts))
    monkeypatch.setitem(counters.BY_NAME, "restarts", restarts)
    report = build_report(graph, counter, [], None, 0.0, "reference", samples=1, run_counts={"restarts": 2})
    assert (report.totals or {})["restarts"] == 2
    assert all("restarts" not in row.counts for row in report.layers)


def test_the_tables_show_a_diagnostic_where_a_run_counted_it():
    diagnostic = next(c for c in counters.LAYER if c.column is counters.Column.NONZERO)
    quiet = counters.columns({diagnostic.name: 0})
    assert diagnostic not in quiet and all(c.column is counters.Column.ALWAYS for c in quiet)
    assert diagnostic in counters.columns({diagnostic.name: 0}, {diagnostic.name: 3})
    assert not any(c.column is counters.Column.NEVER for c in counters.columns({c.name: 1 for c in counters.LAYER}))
