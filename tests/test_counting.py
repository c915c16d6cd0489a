"""One counting rule everywhere (spikeport.counting, docs/counting.md): spikeport info, the
reference counter, the GPU estimate, the ablation's op table and the memory report give the same numbers
for the same layer."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport import counting as C

torch = pytest.importorskip("torch")


def test_dendritic_macs_rule():
    # per token and channel: tridiagonal A X (3k - 2) + C^T X (k) + the q gate (1); Gamma x Token: synops
    assert C.dendritic_macs_per_element(8) == 3 * 8 - 2 + 8 + 1 == 31
    assert C.dendritic_macs(64, 64, 8) == 64 * 64 * 31
    k, v = np.array([[[1, 0, 1]]]), np.array([[[1, 1, 1]]])
    assert C.dendritic_events(k, v, 8) == 2 * 8  # two coincidences, k dendrites each


def test_info_reference_and_gpu_estimate_agree_on_dendritic_macs():
    """One lrf_dyn layer: spikeport info's row and the GPU estimate's layer are the same N D (4k - 1) MACs
    (the float model's recursion); the reference simulator counts what the chip-native lowering does: a
    coincidence LIF and a product neuron per token and channel, at most one graded message (MAC) each."""
    from spikeport.baselines import gpu
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator
    from spikeport.train.info import model_info

    model = spiky_model("lrf_dyn")
    cfg = model.cfg
    expected = cfg.num_tokens * cfg.embed_dim * (4 * cfg.num_dendrites - 1)
    name = "block.0.attn.dendrites"

    info = next(r for r in model_info(cfg)["layers"] if r["name"] == name)
    census = gpu.census(cfg, batch=1)
    samples = 3
    graph = quantized_graph(model, random_images(8, seed=1))
    images = to_channels_last(random_images(samples, seed=2).numpy())
    run = ReferenceSimulator(graph).run(images, batch_size=2).to_dict()
    layer = next(row for row in run["layers"] if row["name"] == name)

    assert info["op"] == "dendritic_recursion" and info["macs"] == expected
    assert census.layer_macs[name] == expected
    assert layer["op"] == "dendritic"
    assert layer["neuron_updates"] == [samples * 2 * cfg.num_tokens * cfg.embed_dim] * cfg.T
    assert all(0 < m <= samples * cfg.num_tokens * cfg.embed_dim for m in layer["macs"])
    # the estimate's FLOPs hold T of those per block (and the rest of the network)
    assert gpu.estimate(census, "h100", "x", batch=1).flops == 2 * model_info(cfg)["macs_per_inference"]


def test_ablation_table_uses_info_rules():
    from spikeport.analysis.opcount import count_ops

    model = spiky_model("lrf_dyn", backend="torch")
    cfg = model.cfg
    ops = count_ops(model, random_images(2, seed=3))
    per_layer = C.dendritic_macs(cfg.num_tokens, cfg.embed_dim, cfg.num_dendrites)
    assert ops["attention_macs"] == cfg.T * cfg.depth * per_layer
    # the dendritic dynamics run on non-spike state: MACs, beside the analog first conv and the head
    first_conv = cfg.T * C.conv_macs(cfg.in_channels, cfg.embed_dim // 8, 3, cfg.img_size, cfg.img_size)
    head = cfg.embed_dim * cfg.num_classes
    assert ops["analog_macs"] == first_conv + head + cfg.T * cfg.depth * per_layer


@pytest.mark.parametrize(("attention", "side"), [("ssa", 8), ("ssa", 9), ("lrf_dyn", 8)])
def test_memory_report_and_kernel_records_agree_on_attention_state(attention, side):
    """The attention state a Loihi-precision memory breakdown holds per block is the reference counter's
    state_bytes of the core node: nothing for the chip-native lowerings (every token grid up to 64 x 64: 81
    tokens too); K^T V at 16 bits for the host core, where the user asks for it."""
    from spikeport.ir.kernels.attention import place_on_host
    from spikeport.metrics.memory import breakdown
    from spikeport.runtime.counter import RunCounter

    model = spiky_model(attention, backend="torch", img_size=side)
    graph = quantized_graph(model, random_images(8, seed=1, shape=(1, side, side)))
    node = "block.0.attn.dendrites" if attention == "lrf_dyn" else "block.0.attn.core"
    held = RunCounter(graph).layers[node].state_bytes
    memory = {m.name: m for m in breakdown(model.cfg, "loihi").modules}
    assert memory["block.0.attn"].attention_core == held == 0
    if attention == "ssa":
        place_on_host(graph)
        heads = model.cfg.num_heads
        assert RunCounter(graph).layers[node].state_bytes == C.kv_state_entries(model.cfg.embed_dim, heads) * 2 > 0


@pytest.mark.parametrize("causal,n", [(False, 6), (True, 6), (True, 70)])
def test_pair_mix_counts_follow_the_chip_native_graph(causal, n):
    """Synops and product messages of the chip-native SSA / causal attention, counted pair by pair the way its
    Lava graph routes them: select synapses (d_h per q, k, v spike), all-ones token synapses per coincidence,
    one rescale synapse per non-zero product. N = 70: past the 64 tokens a word of the first-coincidence search
    holds."""
    rng = np.random.default_rng(3)
    b, heads, dh = 2, 2, 3
    q, k, v = (rng.random((b, n, heads * dh)) < 0.4 for _ in range(3))
    synops, messages = 0, 0
    for s in range(b):
        for h in range(heads):
            for i in range(dh):
                for j in range(dh):
                    c, c2 = h * dh + i, h * dh + j
                    synops += q[s, :, c].sum() + k[s, :, c].sum() + v[s, :, c2].sum()
                    for m in range(n):
                        if k[s, m, c] and v[s, m, c2]:
                            synops += n - m if causal else n
                    for t in range(n):
                        reach = range(t + 1) if causal else range(n)
                        held = sum(int(k[s, m, c] and v[s, m, c2]) for m in reach)
                        messages += int(q[s, t, c] and held > 0)
    assert C.pair_mix_counts(q, k, v, heads, causal) == (synops, messages)
    assert C.pair_mix_neurons(n, heads * dh, heads) == 2 * n * heads * dh * dh


def test_first_coincidence_across_words():
    """The first coincidence of each pair, found in the first 64-token word, in the second, or never."""
    k, v = np.zeros((1, 130, 1, 3)), np.zeros((1, 130, 1, 3))
    k[0, [5, 63, 64, 129], 0, 0] = 1
    v[0, [63, 129], 0, 1] = 1  # pair (0, 1): first at 63, the last bit of the first word
    v[0, [64, 100], 0, 2] = 1  # pair (0, 2): first at 64, the first bit of the second word
    k[0, 100, 0, 1] = 1
    first = C.first_coincidence(k, v)[0, 0]
    assert first[0].tolist() == [130, 63, 64] and first[1].tolist() == [130, 130, 100]
    assert (first[2] == 130).all()
