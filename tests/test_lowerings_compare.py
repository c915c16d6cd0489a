"""scripts/compare_lowerings.py's model (spikeport.metrics.lowering_costs) against the implemented lowering: the
same neuron count and step delay as the kernel record and the Lava lowering, event counts that the counting
rules reproduce on random spikes, and the processes the Lava backend really builds for digits-tiny."""

from __future__ import annotations

import numpy as np
import pytest

from spikeport import counting, fixedpoint as fx
from spikeport.hw_profiles import load_profile
from spikeport.metrics.lowering_costs import MAX_TAPS, LayerShape, active_tokens, compare, layer_shape

# the presets' attention layers (test_preset_shapes checks them)
DIGITS = LayerShape("digits-tiny", tokens=64, channels=64, heads=4, dendrites=8, depth=2, T=4)
IMAGENET = LayerShape("spikformer-8-512", tokens=196, channels=512, heads=8, dendrites=8, depth=8, T=4)


@pytest.fixture(scope="module")
def prof():
    return load_profile("loihi2")


def test_preset_shapes():
    from spikeport.train.presets import preset_config

    for shape in (DIGITS, IMAGENET):
        assert layer_shape(shape.name, preset_config(shape.name, attention="lrf_dyn")) == shape


def test_taps_cap_is_the_kernel_records():
    from spikeport.ir.kernels.dendritic import MAX_TAPS as KERNEL_MAX_TAPS

    assert MAX_TAPS == KERNEL_MAX_TAPS
    assert (DIGITS.taps, IMAGENET.taps) == (64, 64)


@pytest.mark.parametrize("shape", [DIGITS, IMAGENET], ids=lambda s: s.name)
def test_conv_kernel_is_what_the_kernel_record_and_lava_lowering_count(shape, prof):
    from spikeport.runtime.lava.lowerings import LOWERINGS

    result = compare(shape, prof)
    conv, toeplitz, serial = result["conv-kernel"], result["toeplitz-sparse"], result["token-serial"]
    assert conv.neurons == counting.token_mix_neurons(shape.tokens, shape.channels) == toeplitz.neurons
    assert conv.latency_steps == LOWERINGS.get("dendritic").delay(None, frozenset()) == 3
    assert serial.latency_steps == conv.latency_steps + shape.tokens  # the chain through the tokens
    assert serial.neurons == conv.neurons + shape.dendrites * shape.tokens * shape.channels
    assert not serial.delays_fit and conv.delays_fit  # N + 1 > 63 steps for both presets


def test_conv_kernel_stores_fewer_weights_than_the_toeplitz_band(prof):
    result = compare(IMAGENET, prof)
    conv, toeplitz = result["conv-kernel"], result["toeplitz-sparse"]
    assert conv.stored_weights < toeplitz.stored_weights
    assert conv.mixing_weights < toeplitz.mixing_weights
    # the band: C sum_n min(n + 1, taps) = 512 (64 * 65 / 2 + (196 - 64) * 64)
    assert toeplitz.mixing_weights == 512 * (64 * 65 // 2 + (196 - 64) * 64)
    # same events: storing the kernel once per core changes memory, not work
    for events in ("synops", "graded_synops", "energy_J"):
        assert getattr(conv, events) == getattr(toeplitz, events)
    assert result["token-serial"].energy_J > conv.energy_J


def test_conv_per_head_holds_one_kernel_per_head_and_fits_lavas_groups(prof):
    result = compare(IMAGENET, prof)
    conv, per_head = result["conv-kernel"], result["conv-per-head"]
    # one 27 x 27 kernel (the 14 x 14 token grid) per head against a 127-lag one per channel, each stored once per
    # core that holds its channel
    per_kernel = per_head.mixing_weights / (27 * 27 * IMAGENET.heads)
    assert per_kernel == int(per_kernel) and per_head.mixing_weights < conv.mixing_weights / 10
    assert (per_head.neurons, per_head.latency_steps, per_head.energy_J) == (conv.neurons, 3, conv.energy_J)
    # Lava's Conv keeps groups in an int8 Var: C = 512 depthwise channels do not fit, H = 8 heads do
    assert any("int8" in note for note in conv.notes)
    assert not any("int8" in note for note in compare(DIGITS, prof)["conv-kernel"].notes)


def test_event_counts_match_the_counting_rules_on_random_spikes(prof):
    """The analytic synops and graded messages are the expected values of what the reference simulator counts
    (counting.token_mix_events, token_mix_core's messages) on independent spikes at the stated rate."""
    rate, batch = 0.1, 64
    shape = DIGITS
    rng = np.random.default_rng(0)
    q, k, v = (rng.random((3, batch, shape.tokens, shape.channels)) < rate).astype(np.int64)
    conv = compare(shape, prof, rate)["conv-kernel"]
    synops = counting.token_mix_events(q, k, v, shape.taps) / batch
    assert synops == pytest.approx(conv.synops, rel=0.03)
    # a kernel without zero mantissas: the product neuron sends iff q = 1 and a coincidence is in the window
    kernel = np.ones((shape.heads, shape.taps), np.int64)
    params = fx.TokenMixParams(kernel, (1,) * shape.heads, (0,) * shape.heads)
    _, gated = fx.token_mix_core(fx.INT, q, k, v, shape.heads, params, fx.token_mix_matrix(kernel, shape.tokens))
    assert (gated != 0).sum() / batch == pytest.approx(conv.graded_synops, rel=0.08)
    assert conv.graded_synops == pytest.approx(rate * shape.channels * active_tokens(shape, rate))


@pytest.mark.lava
def test_digits_tiny_lava_network_has_the_counted_processes(prof):
    """The Lava backend's processes for one lrf_dyn layer hold what the conv-per-head model counts."""
    from conftest import quantized_graph, random_images, spiky_model
    from spikeport.runtime.lava import backend as LB
    from spikeport.runtime.loihi2.check_hw import describe_processes

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    net = LB.build_network(graph, np.zeros((64, 1), np.int32))
    procs = [p for p in describe_processes(graph, net) if p.layer == "block.0.attn.dendrites"]
    conv = compare(DIGITS, prof)["conv-per-head"]
    n = DIGITS.size
    assert sum(p.neurons for p in procs) == conv.neurons
    (mix,) = [p for p in procs if p.type == "Conv"]
    assert mix.fan_in == 15 * 15  # one channel's kernel on the 8 x 8 token grid, the anti-causal lags included
    (lava_conv,) = [p for p in net.processes if p.name == mix.name]
    assert lava_conv.weight.init.shape == (DIGITS.heads, 15, 15, 1)  # one kernel per head
    identity = [p for p in procs if p.type in ("Sparse", "DelaySparse") and "rescale" not in p.name]
    rescale = [p for p in procs if "rescale" in p.name]
    assert sorted(p.max_delay for p in identity) == [0, 0, 1]  # k, v; q waits for the coincidence stage
    out_exps = set(graph.nodes["block.0.attn.dendrites"].attrs["out_exp"])
    assert sum(p.synapses for p in identity) == 3 * n and len(rescale) == len(out_exps)  # one per exponent
    assert sum(p.synapses for p in rescale) == n
    model = {s.name: s for g in conv.groups for s in g.synapses}
    assert model["q identity (DelaySparse, 1 step)"].max_delay == 1
    # the model's neuron groups are the Lava classes the backend builds, with the state their records give
    built = {p.type: p for p in procs if p.neurons}
    for group in (g for g in conv.groups if g.own):
        assert group.process in built, group.name
        assert group.neurons * group.state_bits // 8 == built[group.process].state_bytes, group.name
    assert conv.neuron_state_bytes == sum(built[g.process].state_bytes for g in conv.groups if g.own)


def test_state_widths_are_the_process_records():
    """The comparison copies no widths: each group's state is its Lava class's record, and a class without
    one is an error naming it."""
    from spikeport.errors import ConversionError
    from spikeport.metrics.lowering_costs import Group
    from spikeport.runtime.lava.facts import PROCESSES

    for name, cost in compare(IMAGENET, load_profile("loihi2")).items():
        for g in cost.groups:
            assert g.state_bits == sum(PROCESSES.get(g.process).state.values()) > 0, (name, g.name)
    with pytest.raises(ConversionError, match="'Neuron2000'.*no record"):
        Group("made up", 10, "Neuron2000", [])
