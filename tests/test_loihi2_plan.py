"""The hardware plan (runtime/loihi2/plan.py): the network a Loihi 2 system runs, built as Intel's tested runs are
(bias drive or PyToN3ConvAdapter in, NxToPyAdapter out, states read with Var.get), simulated here with stand-ins for
the embedded-IO adapters and bit-exact with the reference at the outputs every step and at the read states."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import ConfigError

pytestmark = pytest.mark.lava

STATES = ("patch_embed.proj_lif", "block.1.mlp.fc2_lif")


@pytest.fixture(scope="module")
def ssa():
    model = spiky_model("ssa")
    return quantized_graph(model, random_images(16, seed=1)), random_images(3, seed=5).numpy().transpose(0, 2, 3, 1)


@pytest.mark.parametrize("drive", ["bias", "adapter"])
def test_plan_on_simulated_embedded_io_equals_the_reference(ssa, drive):
    from spikeport.runtime.loihi2.plan_run import expect, run_plan
    from spikeport.runtime.sim.reference import ReferenceSimulator

    graph, x = ssa
    ref = ReferenceSimulator(graph).run(x)
    report = run_plan(graph, x, drive=drive, states=STATES)
    run = report.hardware
    assert run is not None and run.samples == 3
    assert run.outputs_identical and run.states_identical and run.first_mismatch is None, run.first_mismatch
    assert report.predictions == ref.predictions
    assert report.executor == "loihi2-sim" and run.embedded_io == "simulated embedded IO"
    assert run.run_config.startswith("Loihi2SimCfg") and run.drive == drive and run.io_latency == 0
    assert run.counts_from.startswith("reference")
    assert [layer.to_dict() for layer in report.layers] == [layer.to_dict() for layer in ref.layers]
    # the outputs are the readout's input summed over tokens, every step: not all zero, so equality proves something
    expected = expect(graph, x, None, run.plan["outputs"], STATES)
    assert run.plan["outputs"] == ["head.token_sum"] and expected.outputs["head.token_sum"].any()
    assert all(np.abs(v).sum() > 0 for d in expected.states.values() for v in d.values())
    if drive == "bias":  # the stem's current enters v as a bias: the layer's u is not read
        assert run.bias_bits is not None and set(expected.states) == set(STATES)


def test_a_wrong_expectation_is_found_where_it_differs(ssa):
    from spikeport.runtime.loihi2.plan_run import expect, run_plan

    graph, x = ssa
    expected = expect(graph, x, None, ["head.token_sum"], STATES[1:])
    expected.outputs["head.token_sum"][1, 2, 5] += 1
    run = run_plan(graph, x, drive="bias", states=STATES[1:], expected=expected).hardware
    assert run is not None and not run.outputs_identical and run.states_identical
    assert run.first_mismatch == {
        "output": "head.token_sum",
        "sample": 1,
        "time_step": 2,
        "index": 5,
        "value": int(expected.outputs["head.token_sum"][1, 2, 5]) - 1,
        "expected": int(expected.outputs["head.token_sum"][1, 2, 5]),
    }


def test_plan_records_each_crossing_and_its_traffic(ssa):
    from spikeport.runtime.loihi2.plan import build_plan_network

    graph, _ = ssa
    bias = build_plan_network(graph, "bias", STATES)
    kinds = {type(p).__name__ for p in bias.net.processes}
    assert not kinds & {"SpikeRecorder", "StateRecorder"}  # recorders are a simulation feature
    assert "SimulatedNxToPyAdapter" in kinds and "SimulatedPyToN3ConvAdapter" not in kinds
    plan = bias.plan
    assert plan.bias_layer == "patch_embed.proj_lif" and plan.warnings == []
    adapters = [(b.adapter, b.chip, b.per) for b in plan.boundaries]
    assert adapters == [
        ("bias_mant.set", "patch_embed.proj_lif", "sample"),
        ("eio.spike.NxToPyAdapter", "head.token_sum", "step"),
        ("Var.get", "patch_embed.proj_lif", "sample"),
        ("Var.get", "block.1.mlp.fc2_lif", "sample"),
    ]
    channels = graph.nodes["block.1.mlp_add"].shape[-1]
    assert plan.per_step() == (channels, channels * 3)  # 24-bit token sums, one a channel a step
    v_only, u_and_v = 8 * 8 * 8, 2 * 8 * 8 * 64
    assert plan.per_sample()[0] == 8 * 8 * 8 + v_only + u_and_v  # the bias, then the states read
    streamed = build_plan_network(graph, "adapter").plan
    (frame,) = [b for b in streamed.boundaries if b.adapter == "eio.spike.PyToN3ConvAdapter"]
    assert frame.streams_frame and frame.values == 64 and frame.message_bits == 16
    assert any("PilotNet-SDNN" in w and "59 ms" in w for w in streamed.warnings)


def test_bias_drive_is_refused_where_the_current_does_not_forget(ssa):
    from spikeport.runtime.loihi2.plan import build_plan_network

    graph, _ = ssa
    lif = graph.nodes["patch_embed.proj_lif"]
    du = lif.attrs["du"]
    lif.attrs["du"] = 2048
    try:
        with pytest.raises(ConfigError, match="patch_embed.proj_lif.*du = 2048.*adapter"):
            build_plan_network(graph, "bias")
    finally:
        lif.attrs["du"] = du
    with pytest.raises(ConfigError, match="read state of 'head'"):
        build_plan_network(graph, "bias", ["head"])


def test_pitfalls_name_the_process(ssa):
    from spikeport.runtime.loihi2.pitfalls import pitfalls
    from spikeport.runtime.loihi2.plan import build_plan_network

    graph, _ = ssa
    built = build_plan_network(graph, "adapter")
    assert [p.what for p in pitfalls(built.net)] == ["LIF parameters scaled on the chip"]
    (synapse,) = [p for p in built.net.processes if p.name == "block.0.mlp.fc2_linear"]
    synapse.weight.init = np.zeros_like(synapse.weight.init)
    found = pitfalls(built.net, cores=600)
    zero = [p for p in found if p.what == "all-zero weights"]
    assert [p.where for p in zero] == ["block.0.mlp.fc2_linear"] and zero[0].source == "lava#501"
    assert any(p.what == "compile memory" and "lava-dl#252" in p.source for p in found)
