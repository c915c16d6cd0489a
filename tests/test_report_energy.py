"""Energy from op counts: hand-computed figures on a tiny synthetic run report, every method and rule."""

from __future__ import annotations

import json

import pytest

from spikeport.chip_traffic import ChipTraffic
from spikeport.errors import ConfigError, ProfileError
from spikeport.hw_profiles import parse_profile
from spikeport.metrics.energy import (
    CountingRule,
    energy_report,
    estimate,
    measured_energy,
    op_counts,
)

PJ = 1e-12


def tiny_run_report() -> dict:
    """T = 2 steps, 2 samples; counts are sums over samples (the run-report contract)."""

    def layer(name, op, kind, **per_t):
        d = {"name": name, "op": op, "input_kind": kind, "fan_out": 4, "state_bytes": 0, "weight_bytes": 0}
        for key in ("spikes", "synops", "macs", "neuron_updates", "dendritic_updates"):
            d[key] = per_t.get(key, [0, 0])
        if "synops_valued" in per_t:
            d["synops_valued"] = per_t["synops_valued"]
        return d

    return {
        "schema": "spikeport.run",
        "schema_version": 1,
        "executor": "reference",
        "samples": 2,
        "layers": [
            layer("conv0", "conv", "analog", macs=[100, 100]),
            layer("lif0", "lif", "activation", spikes=[10, 6], neuron_updates=[40, 40]),
            layer("dense1", "dense", "spikes", synops=[30, 20]),
            layer("res", "add", "integer"),
            layer("dense2", "dense", "integer", synops=[8, 4], synops_valued=[12, 6]),
            layer("attn", "attention", "spikes", synops=[5, 5], macs=[4, 4]),
            layer("dend", "dendritic", "spikes", synops=[2, 2], dendritic_updates=[16, 16], macs=[20, 20]),
            layer("head", "readout", "integer", macs=[6, 6], synops_valued=[3, 3]),
        ],
    }


# Per inference: first-layer MACs 100 (50 if charged once); spike ACs 25 + 5 + 2 = 32; integer inputs
# by value 9 + 3 = 12, as events 6; other MACs 4 + 20 + 6 = 30; neuron updates 40; dendritic 16; spikes 8.


def test_op_counts_per_inference():
    c = {x.name: x for x in op_counts(tiny_run_report())}
    assert c["conv0"].first_layer_macs == 100 and c["conv0"].other_macs == 0
    assert c["dense1"].spike_acs == 25 and c["attn"].spike_acs == 5 and c["dend"].spike_acs == 2
    assert (c["dense2"].integer_values, c["dense2"].integer_events) == (9, 6)
    assert c["head"].integer_values == 3 and c["head"].other_macs == 6
    assert c["lif0"].neuron_updates == 40 and c["lif0"].spikes == 8 and c["dend"].dendritic_updates == 16
    once = {x.name: x for x in op_counts(tiny_run_report(), CountingRule(first_layer_per_timestep=False))}
    assert once["conv0"].first_layer_macs == 50


def test_cmos_native_fp32():
    e = estimate(tiny_run_report(), "cmos45nm", "native")
    # 100 x 4.6 + (32 + 12) x 0.9 + 30 x 4.6
    assert e.energy_J == pytest.approx((460 + 39.6 + 138) * PJ)
    assert e.label == "estimated (op counts x cost table cmos45nm)" and e.kind == "estimated"
    assert any("neuron updates" in s for s in e.left_out)
    layers = {layer.name: layer.energy_J for layer in e.layers}
    assert layers["conv0"] == pytest.approx(460 * PJ) and layers["dense2"] == pytest.approx(9 * 0.9 * PJ)
    assert sum(e.by_counter.values()) == pytest.approx(e.energy_J)


def test_cmos_integer_rule_and_precision():
    e = estimate(tiny_run_report(), "cmos45nm", "native", CountingRule(integer_inputs="event_macs"))
    assert e.energy_J == pytest.approx((460 + 32 * 0.9 + 6 * 4.6 + 138) * PJ)
    e8 = estimate(tiny_run_report(), "cmos45nm", "native", CountingRule(precision="int8"))
    assert e8.energy_J == pytest.approx((100 * 0.23 + 44 * 0.03 + 30 * 0.23) * PJ)


def test_literature_convention():
    e = estimate(tiny_run_report(), "cmos45nm", "literature")
    assert e.energy_J == pytest.approx((100 * 4.6 + 44 * 0.9) * PJ)
    assert "literature convention" in e.label
    assert any(s.startswith("30 other MACs") for s in e.left_out)
    once = estimate(tiny_run_report(), "cmos45nm", "literature", CountingRule(first_layer_per_timestep=False))
    assert once.energy_J == pytest.approx((50 * 4.6 + 44 * 0.9) * PJ)


def test_memory_inclusive():
    e = estimate(tiny_run_report(), "cmos45nm", "memory")
    ac, mac = 0.9 + 3 * 5, 4.6 + 2 * 5
    neuron, dend = 2 * 3.7 + 3 * 0.9 + 4 * 5, 2 * 5
    assert e.energy_J == pytest.approx((130 * mac + 44 * ac + 40 * neuron + 16 * dend) * PJ)
    assert e.energy_J > estimate(tiny_run_report(), "cmos45nm", "native").energy_J


def test_loihi2_native():
    e = estimate(tiny_run_report(), "loihi2", "native")
    # graded + binary synops 23.6 pJ: first layer 100, spike ACs 32, integer by value 12, attention and
    # readout MACs 4 + 6 (the dendritic node's 20 MACs are its compartment dynamics); neuron updates 40 and
    # dendritic updates 16 at 81 pJ; 8 spikes at 1.7 pJ
    assert e.energy_J == pytest.approx((23.6 * 154 + 81 * 56 + 1.7 * 8) * PJ)
    assert any("I/O" in s for s in e.left_out) and any("static" in s for s in e.left_out)
    assert any("derived" in n for n in e.notes)


def test_chip_crossings_are_a_separate_labelled_line():
    """A placement on 6 chips sending 500 messages a step for T = 4: 2,000 messages per inference at loihi2's
    120 pJ estimate, a line of its own; the op-count total stays what it was, single-chip traffic adds nothing,
    and a profile without the cost lists the messages as left out."""
    traffic = ChipTraffic(chips=6, messages_per_step=500.0, steps=4, source="estimate: rate 0.1", rate=0.1)
    plain = estimate(tiny_run_report(), "loihi2")
    e = estimate(tiny_run_report(), "loihi2", chip_traffic=traffic)
    assert e.energy_J == plain.energy_J and e.chip_crossings is not None
    line = e.chip_crossings
    assert (line.chips, line.messages) == (6, 2000) and line.energy_J == pytest.approx(2000 * 120 * PJ)
    assert line.label.startswith("estimated (chip-to-chip") and "120 pJ (estimate" in line.cost
    assert estimate(tiny_run_report(), "loihi2", chip_traffic=ChipTraffic(1, 0.0, 4, "one chip")).chip_crossings is None
    bare = estimate(tiny_run_report(), "loihi1", chip_traffic=traffic)  # Loihi 1 has no chip-hop figure
    assert bare.chip_crossings.energy_J is None and any("2000 chip-to-chip" in s for s in bare.left_out)
    report = energy_report(tiny_run_report(), ["loihi2", "cmos45nm"], chip_traffic=traffic).to_dict()
    lines = [est.get("chip_crossings") for est in report["estimates"]]
    assert lines[0]["energy_J"] == pytest.approx(2000 * 120 * PJ) and lines[1:] == [None, None, None]


def test_unpriced_counters_are_listed_not_zeroed():
    prof = parse_profile(
        {
            "schema_version": 1,
            "name": "bare",
            "kind": "neuromorphic",
            "description": "x",
            "energy": {"synop": {"value": 1, "unit": "pJ", "source": "s", "confidence": "estimate"}},
        }
    )
    e = estimate(tiny_run_report(), prof, "native")
    assert e.energy_J == pytest.approx((32 + 12) * PJ)
    text = " ".join(e.left_out)
    for counter in ("first_layer_macs", "neuron_updates", "dendritic_updates", "spikes"):
        assert counter in text


def test_refusals():
    with pytest.raises(ProfileError, match="GPU"):
        estimate(tiny_run_report(), "h100")
    with pytest.raises(ProfileError, match="loihi2.*mac_fp32"):
        estimate(tiny_run_report(), "loihi2", "literature")
    bad = tiny_run_report()
    bad["samples"] = 0
    with pytest.raises(ConfigError, match="samples"):
        estimate(bad, "cmos45nm")
    bad = tiny_run_report()
    bad["layers"][2]["synops"] = "many"
    with pytest.raises(ConfigError, match=r"layers\[2\]\.synops.*dense1"):  # the run report's validator
        estimate(bad, "cmos45nm")
    with pytest.raises(ConfigError, match="schema"):
        estimate({"layers": []}, "cmos45nm")
    with pytest.raises(ConfigError, match="integer-input rule"):
        CountingRule(integer_inputs="guess")


def test_measured_and_report_json():
    run = tiny_run_report()
    assert measured_energy(run) is None
    run["energy_measured"] = {
        "method": "Lava Loihi2HWProfiler",
        "total_J": 1.5e-3,
        "dynamic_J": 1.0e-3,
        "per_inference": True,
    }
    rep = energy_report(run, ["loihi2", "cmos45nm"])
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["schema"] == "spikeport.energy" and d["schema_version"] == 1
    labels = [e["label"] for e in d["estimates"]]
    assert labels[0] == "measured (Lava Loihi2HWProfiler)" and d["estimates"][0]["energy_J"] == 1.5e-3
    assert "estimated (op counts x cost table loihi2)" in labels
    assert sum("cmos45nm" in label for label in labels) == 3  # native, memory, literature
    assert all(e["left_out"] for e in d["estimates"][1:])
