"""One counting rule everywhere (spikeport.metrics.counting, docs/counting.md): spikeport info, the
reference counter, the GPU estimate, the ablation's op table and the memory report give the same numbers
for the same layer."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.metrics import counting as C

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
    from spikeport.runtime.sim.executor import to_channels_last
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
    run = ReferenceSimulator(graph).run(images, batch_size=2)
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


@pytest.mark.parametrize("attention", ["ssa", "lrf_dyn"])
def test_memory_report_and_kernel_records_agree_on_attention_state(attention):
    """The attention state a Loihi-precision memory breakdown holds per block is the reference
    counter's state_bytes of the core node (K^T V at 16 bits; the dendritic X at 24 bits)."""
    from spikeport.metrics.memory import breakdown
    from spikeport.runtime.sim.reference import Counter

    model = spiky_model(attention, backend="torch")
    graph = quantized_graph(model, random_images(8, seed=1))
    node = "block.0.attn.dendrites" if attention == "lrf_dyn" else "block.0.attn.core"
    held = Counter(graph).layers[node].state_bytes
    memory = {m.name: m for m in breakdown(model.cfg, "loihi").modules}
    # ssa: K^T V; lrf_dyn: the chip-native lowering keeps nothing between steps (the kernel is weights)
    assert memory["block.0.attn"].attention_core == held and (held > 0) == (attention == "ssa")
