"""spikeport check-hw: every process placed (chip / host), cores estimated, broken limits named by layer."""

import numpy as np
import pytest
import yaml

from conftest import quantized_graph, random_images, spiky_model
from spikeport.errors import HardwareLimitError
from spikeport.hw_profiles import PROFILE_DIR, load_profile

pytestmark = pytest.mark.lava


@pytest.fixture(scope="module")
def plan():
    """(graph, process list) of digits-tiny lrf_ssa: the graded stem Sparse, chip-native SSA, LRF convs,
    residual delays."""
    from spikeport.runtime.lava import backend as LB
    from spikeport.runtime.loihi2.check_hw import describe_processes

    graph = quantized_graph(spiky_model("lrf_ssa"), random_images(16, seed=1))
    net = LB.build_network(graph, np.zeros((64, 1), np.int32))
    return graph, describe_processes(graph, net), len(net.processes)


def profile_with(tmp_path, **limits):
    data = yaml.safe_load((PROFILE_DIR / "loihi2.yaml").read_text())
    data["name"] = "tiny-loihi2"
    for key, value in limits.items():
        data["limits"][key]["value"] = value
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_profile(path)


def test_every_process_is_placed_and_counted(plan):
    from spikeport.runtime.lava.backend import relayed
    from spikeport.runtime.loihi2.check_hw import evaluate

    graph, procs, n_lava = plan
    assert len(procs) == n_lava + 1  # + the host readout
    place = {p.type: p.placement for p in procs}
    assert place["LIFReset"] == place["Conv"] == place["Sparse"] == place["DelaySparse"] == "chip"
    assert place["ProdNeuron"] == place["LIF"] == "chip"  # SSA: coincidence LIF, Conv of ones, product neuron
    assert place["RingBuffer"] == place["readout"] == "host" and "AttentionCore" not in place
    assert "AnalogConv" not in place  # the stem reads graded pixels through a Sparse on the chip
    result = evaluate(graph, procs, load_profile("loihi2"))
    assert result.violations == []
    neuron_layers = {row["layer"]: row for row in result.layers}
    chip_attention = {n.name for n in graph.by_op("attention")}  # coincidence LIF + product neurons
    assert set(neuron_layers) == {n.name for n in graph.by_op("lif")} | relayed(graph) | chip_attention
    fc1 = neuron_layers["block.0.mlp.fc1_lif"]  # 64 tokens x 256 out; one graded synapse from the relay
    assert fc1["neurons"] == 64 * 256 and fc1["fan_in"] == 64 and fc1["cores"] >= 2
    relay = neuron_layers["block.0.attn_add"]  # the residual sum: one identity synapse per input
    assert relay["fan_in"] == 2 and place["GradedVec"] == "chip"
    d = result.to_dict()
    assert d["totals"]["chip_mappable"] + d["totals"]["host_only"] == len(procs) and d["ok"]
    assert d["totals"]["host_computing"] == []


def test_broken_limits_name_the_layer(plan, tmp_path):
    from spikeport.runtime.loihi2.check_hw import evaluate

    graph, procs, _ = plan
    prof = profile_with(tmp_path, fan_in_axons_per_core=100, neurons_per_core=16, delay_bits=1)
    result = evaluate(graph, procs, prof)
    found = {(f.rule, f.layer) for f in result.violations}
    assert ("fan_in_axons_per_core", "patch_embed.proj_lif2") in found  # 3x3x16 = 144 inputs > 100
    assert ("fan_in_axons_per_core", "patch_embed.proj_lif1") not in found  # 3x3x8 = 72
    assert ("cores_per_chip", "block.0.mlp.fc1_lif") in found  # 16384 neurons / 16 > 128 cores
    assert ("delay_bits", "block.0.attn_add") in found  # the relay holds the block input 3 steps > 1
    assert ("delay_bits", "patch_embed.rpe_add") not in found  # a 1-step delay fits 1 bit
    with pytest.raises(HardwareLimitError, match=r"layer '.+' breaks tiny-loihi2 rule"):
        result.raise_for_violations()


def test_cli_exit_status_and_json(plan, tmp_path, capsys):
    import json

    from spikeport.cli import main
    from spikeport.ir import artifact

    graph, _, _ = plan
    art = artifact.write(graph, tmp_path / "m.spk.h5")
    profile_with(tmp_path, fan_in_axons_per_core=100)
    assert main(["check-hw", str(art), "--profile", str(tmp_path / "tiny.yaml")]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION: layer 'patch_embed.proj_lif2' breaks tiny-loihi2 rule 'fan_in_axons_per_core'" in out
    assert "0 computing processes on the host" in out
    assert main(["check-hw", str(art), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "spikeport.check_hw" and d["ok"] and d["totals"]["cores"] > 0
    assert d["totals"]["host_computing"] == []
    # the stem's graded pixels: 16-bit payload x 8-bit weights over 9 taps can exceed the 24-bit accumulator
    (stem,) = [f for f in d["findings"] if f["rule"] == "graded_accumulator_bits"]
    assert stem["severity"] == "warning" and stem["layer"] == "patch_embed.proj_lif" and stem["value"] > 24


def test_mantissa_bits():
    from spikeport.runtime.loihi2.check_hw import mantissa_bits

    assert mantissa_bits(np.array([-256, 254, 0, 2])) == 8  # 2 x 8-bit (Lava's mixed-sign convention)
    assert mantissa_bits(np.array([-128, 127])) == 8
    assert mantissa_bits(np.array([255, 3])) == 8 and mantissa_bits(np.array([3 << 9, -5 << 9])) == 4
    assert mantissa_bits(np.array([300, -7])) == 10


@pytest.mark.parametrize("attention", ["ssa", "lrf_dyn"])
def test_state_each_process_holds_is_read_from_its_vars(attention):
    """The state claim (issue 12 req. 3): lrf_dyn's chip-native attention holds one value per neuron or
    synapse output (the coincidence LIF, the product neuron, pipeline buffers) and no Var that grows with
    tokens x tokens or d_h x d_h; SSA's host core holds K^T V (d_h x d_h per head)."""
    from spikeport.runtime.lava import backend as LB
    from spikeport.runtime.loihi2.check_hw import check_hw, describe_processes

    graph = quantized_graph(spiky_model(attention), random_images(16, seed=1))
    net = LB.build_network(graph, np.zeros((64, 1), np.int32))
    procs = {p.name: p for p in describe_processes(graph, net)}
    net_outputs = {getattr(q, "name", ""): next(iter(q.out_ports)).shape for q in net.processes if q.out_ports}
    tokens, d, heads = 64, 64, 4  # digits-tiny: an 8 x 8 grid, 64 channels, 4 heads
    lif = procs["block.0.attn.attn_lif"]
    assert [(s["var"], s["shape"], s["bits"]) for s in lif.state] == [("u", [tokens * d], 24), ("v", [tokens * d], 24)]
    assert lif.state_bytes == 2 * tokens * d * 3
    if attention == "lrf_dyn":  # chip-native: standard processes only, the kernel is weights, not state
        core = None
        parts = [p for p in procs.values() if p.layer == "block.0.attn.dendrites"]
        assert {p.type for p in parts} == {"LIF", "Sparse", "DelaySparse", "Conv", "ProdNeuron"}
        assert all(p.placement == "chip" for p in parts)
    else:
        # SSA's chip-native attention holds no K^T V either: it recounts the coincidences of the current step,
        # one product neuron per (token, c, c') of a head -- the neurons grow with N d d_h, the state does not
        core = None
        product = procs["block.0.attn.core.product"]
        assert product.neurons == tokens * heads * (d // heads) ** 2
    # every other process keeps one value per neuron, or per synapse output and pending delay: nothing grows
    # with tokens x tokens or d x d
    for p in procs.values():
        if p is core or p.type.endswith("Core") or not p.state:
            continue
        outputs = p.neurons or int(np.prod(net_outputs[p.name]))
        for s in p.state:
            assert int(np.prod(s["shape"])) == outputs * (p.max_delay + 1 if s["var"] == "a_buff" else 1), (p.name, s)
    totals = check_hw(graph).to_dict()["totals"]
    on_host = sum(p.state_bytes for p in procs.values() if p.placement == "host")
    assert totals["state_bytes_on_host"] == on_host == 0


def test_attention_past_the_conv_kernel_runs_on_the_host_priced(tmp_path, capsys):
    """81 tokens: SSA's all-ones token kernel would span 161 lags, past Lava Conv's 8-bit kernel size; the
    attention stays on the host and every step's host round trip is priced and cited."""
    from spikeport.cli import main
    from spikeport.ir import artifact

    graph = quantized_graph(spiky_model("ssa", img_size=9), random_images(16, seed=1, shape=(1, 9, 9)))
    assert main(["check-hw", str(artifact.write(graph, tmp_path / "m.spk.h5"))]) == 0
    out = capsys.readouterr().out
    assert "2 computing processes on the host (block.0.attn.core, block.1.attn.core): every time step waits" in out
    assert "59 ms per step (estimate: 59 ms (derived; lava-dl tutorials/lava/lib/dl/netx/pilotnet_sdnn" in out
    assert "N > 64 tokens" in out
