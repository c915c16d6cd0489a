"""Value kinds are records (spikeport.value_kinds): one registry, read by the op records, the counter and the
energy estimate; JSON and node attributes still hold their names."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import ConfigError, ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS, input_kind, kernel, value_kind
from spikeport.ir.kernels.base import OpSpec
from spikeport.metrics.energy import op_counts
from spikeport.runtime.counter import RunCounter
from spikeport.value_kinds import (
    ACTIVATION,
    ANALOG,
    GRADED,
    INTEGER,
    LOGITS,
    NONE,
    SPIKES,
    VALUE_KINDS,
    Pricing,
    ValueKind,
    densest,
)


def test_the_registry_knows_each_kind_once_and_refuses_others_by_name():
    assert list(VALUE_KINDS) == ["analog", "integer", "graded", "spikes", "activation", "logits", "none"]
    assert VALUE_KINDS.get("graded") is GRADED and "spikes" in VALUE_KINDS and "pixels" not in VALUE_KINDS
    with pytest.raises(ConfigError, match=r"^layer 'x': unknown value kind 'pixels'; known kinds: analog, integer, "):
        VALUE_KINDS.get("pixels", "layer 'x'")
    assert VALUE_KINDS.find(3) is None


def test_the_facts_the_consumers_used_to_tabulate():
    # a node reading several kinds reports the densest (the reference's former precedence chain)
    assert ANALOG.precedence > INTEGER.precedence > GRADED.precedence > SPIKES.precedence > ACTIVATION.precedence
    assert ACTIVATION.precedence > NONE.precedence
    assert densest([SPIKES, INTEGER]) is INTEGER and densest([ACTIVATION]) is ACTIVATION and densest([]) is NONE
    # what a Lava run records, and in which dtype (graded payloads need 24 bits), by name: no numpy import here
    assert {k.name: np.dtype(k.recorded) for k in VALUE_KINDS if k.recorded is not None} == {
        "spikes": np.int8,
        "graded": np.int32,
    }
    assert [k.name for k in VALUE_KINDS if k.host_replayed] == ["integer", "logits"]
    assert (ANALOG.pricing, INTEGER.pricing, GRADED.pricing, SPIKES.pricing) == (
        Pricing.DENSE,
        Pricing.VALUED,
        Pricing.MULTIPLY,
        Pricing.ACCUMULATE,
    )


def test_a_kind_is_its_name_in_json_comparisons_and_copies():
    assert SPIKES == "spikes" and hash(SPIKES) == hash("spikes") and {"spikes": 1}[SPIKES] == 1
    assert json.dumps({"input_kind": GRADED}) == '{"input_kind": "graded"}' and type(GRADED.name) is str
    assert f"{INTEGER}" == "integer" and repr(INTEGER) == "ValueKind('integer')"
    assert pickle.loads(pickle.dumps(LOGITS)) is LOGITS and copy.deepcopy(ANALOG) is ANALOG
    with pytest.raises(AttributeError, match="read-only"):
        SPIKES.recorded = np.int16  # type: ignore[misc]


def test_op_records_hold_registered_kinds():
    for op in KERNELS:
        spec = kernel(op).spec
        assert all(type(k) is ValueKind for k in (*spec.input_kinds, spec.out_kind)), op
    # a name is taken up as its record; an unknown one fails where the op is declared
    assert OpSpec("x", ("spikes",), (1, 1), "activation").input_kinds[0] is SPIKES
    with pytest.raises(ConfigError, match="op 'x': unknown value kind 'current'; known kinds: analog"):
        OpSpec("x", ("current",), (1, 1), "activation")


def test_a_node_naming_an_unknown_kind_is_refused_by_name():
    g = Graph({"input": Node("input", "input", [], {"kind": "rates"}, {}, (4,))}, T=1)
    with pytest.raises(
        ConversionError, match=r"node 'input' \(input\): attribute 'kind' = 'rates' is not a value kind"
    ):
        value_kind(g, "input")


def test_input_kinds_of_a_network_are_the_counters():
    """input_kind (the records' precedence) gives every node the kind the reference counter reports."""
    graph = quantized_graph(spiky_model("ssa"), random_images(8, seed=2))
    counter = RunCounter(graph)
    kinds = {name: input_kind(graph, node) for name, node in graph.nodes.items()}
    assert {name: lc.input_kind for name, lc in counter.layers.items()} == kinds
    assert kinds["input"] is NONE and {ANALOG, INTEGER, SPIKES, ACTIVATION} <= set(kinds.values())


def _report(kind: object) -> dict:
    layer = {"name": "fc", "op": "dense", "synops": [6], "macs": [0], "spikes": [0]}
    layer.update({"neuron_updates": [0], "dendritic_updates": [0]})
    if kind is not None:
        layer["input_kind"] = kind
    return {"schema": "spikeport.run", "schema_version": 1, "executor": "reference", "samples": 2, "layers": [layer]}


def test_energy_prices_by_the_kind_and_refuses_an_unknown_one():
    assert op_counts(_report("graded"))[0].other_macs == 3  # a MAC per graded message and synapse
    assert op_counts(_report("spikes"))[0].spike_acs == 3
    assert op_counts(_report(None))[0].spike_acs == 3  # no input kind: an accumulate per event, as before
    assert op_counts(_report("none"))[0].spike_acs == 3
    with pytest.raises(ConfigError, match=r"layer 'fc': field 'input_kind': unknown value kind 'currents'"):
        op_counts(_report("currents"))
