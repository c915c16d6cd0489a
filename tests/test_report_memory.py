"""Memory: analytic bytes against hand-computed ones on a tiny config; against torch's own parameters;
the layer-by-layer trace of the real model against the measured torch forward; the CLI's JSON."""

from __future__ import annotations

import json

import pytest

from spikeport.baselines.torch_memory import analytic_memory, memory_breakdown
from spikeport.metrics.memory import breakdown
from spikeport.train.model_config import ModelConfig
from spikeport.train.models import build_model

torch = pytest.importorskip("torch")


def tiny(attention: str) -> ModelConfig:
    # D = 16, 2 heads (d_h = 8), N = 16 tokens on a 4 x 4 grid (W = 4), MLP hidden 32, k = 4 dendrites,
    # one LRF dilation 1: the streaming LRF window is 2 * 1 * (4 + 1) + 1 = 11 tokens.
    return ModelConfig(
        img_size=4,
        in_channels=1,
        num_classes=3,
        embed_dim=16,
        depth=1,
        num_heads=2,
        mlp_ratio=2.0,
        T=2,
        pool_stages=(),
        layout="linear",
        attention=attention,
        num_dendrites=4,
        lrf_dilations=(1,),
    )


HAND = {  # attention (core, buffers) bytes: fp32 and Loihi precision, batch 1
    # Loihi, N <= 64 tokens: the chip-native lowerings keep no K^T V, S or dendritic X between steps (SSA and
    # causal recount coincidences from each step's spikes; the dendritic recursion is a token kernel)
    "ssa": {"fp32": (2 * 8 * 8 * 4, 3 * 16 * 16 * 4), "loihi": (0, 3 * 16 * 16 // 8)},
    "lrf_ssa": {"fp32": (2 * 8 * 8 * 4, 3 * 16 * 16 * 4), "loihi": (0, 3 * 16 * 16 // 8)},
    "lrf_causal": {"fp32": (2 * 8 * 8 * 4, 11 * 16 * 4), "loihi": (0, 11 * 16 // 8)},
    "lrf_dyn": {"fp32": (4 * 16 * 4, 11 * 16 * 4), "loihi": (0, 11 * 16 // 8)},
}


def test_ssa_past_the_chip_native_token_limit_holds_kv_on_the_host():
    from dataclasses import replace

    cfg = replace(tiny("ssa"), img_size=9)  # 81 tokens: a 9 x 9 grid, chip-native (no state held)
    assert {m.name: m for m in breakdown(cfg, "loihi").modules}["block.0.attn"].attention_core == 0
    cfg = replace(tiny("ssa"), img_size=65)  # 65 x 65 tokens fit no 64 x 64 grid: the host AttentionCore
    attn = {m.name: m for m in breakdown(cfg, "loihi").modules}["block.0.attn"]
    assert attn.attention_core == 2 * 8 * 8 * 2  # K^T V: 2 heads x 8 x 8, 16-bit


@pytest.mark.parametrize("attention", sorted(HAND))
@pytest.mark.parametrize("precision", ["fp32", "loihi"])
def test_attention_state_hand_computed(attention, precision):
    b = breakdown(tiny(attention), precision)
    attn = {m.name: m for m in b.modules}["block.0.attn"]
    assert (attn.attention_core, attn.attention_buffers) == HAND[attention][precision]


def test_neuron_state_hand_computed():
    b = {m.name: m for m in breakdown(tiny("ssa"), "fp32", batch=3).modules}
    # stem: LIF groups of 2, 4, 8, 16 channels on 4 x 4 + the RPE LIF 16 x 16 tokens = 736 neurons
    assert b["stem"].neuron_state == 736 * 4 * 3
    assert b["block.0.attn"].neuron_state == 5 * 16 * 16 * 4 * 3  # q, k, v, attn, proj
    assert b["block.0.mlp"].neuron_state == (16 * 32 + 16 * 16) * 4 * 3
    loihi = {m.name: m for m in breakdown(tiny("ssa"), "loihi").modules}
    assert loihi["stem"].neuron_state == 736 * 2 * 3  # u and v, 24 bits each


def test_weights_hand_computed_and_equal_to_torch():
    b = {m.name: m for m in breakdown(tiny("ssa"), "fp32").modules}
    convs = 9 * (1 * 2 + 2 * 4 + 4 * 8 + 8 * 16) + 9 * 16 * 16
    bn = (2 + 4 + 8 + 16 + 16) * 4 * 4 + 5 * 8  # weight, bias, mean, var + int64 counter
    assert b["stem"].weights == convs * 4 + bn
    loihi = {m.name: m for m in breakdown(tiny("ssa"), "loihi").modules}
    assert loihi["stem"].weights == convs + (2 + 4 + 8 + 16 + 16) * 3  # int8 + one 24-bit folded bias
    for att in HAND:
        model = build_model(tiny(att))
        torch_bytes = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
        assert breakdown(tiny(att), "fp32").total("weights") == torch_bytes, att


def test_precision_and_preset_errors():
    from spikeport.errors import ConfigError

    with pytest.raises(ConfigError, match="precision"):
        analytic_memory("digits-tiny", precision="int4")
    with pytest.raises(ConfigError, match="vit"):
        analytic_memory("vit-12-384")
    with pytest.raises(ConfigError, match="preset"):
        analytic_memory("spikformer-99")


def test_spikformer_8_512_attention_state():
    """The published O(d^2) vs O(kd) argument, per head as the official code stores it: K^T V is
    H d_h^2 = 8 x 64 x 64 = 32,768 entries per block; X is k d = 8 x 512 = 4,096: 1/8, not d/k = 1/64."""
    # the parallel form: the stem's peak does not depend on it, and it traces in a fraction of the time
    # of the recurrent form's token loop (8 blocks x 196 tokens of small ops on the meta device)
    ssa = analytic_memory("spikformer-8-512", attention="ssa", inference_form="parallel")
    dyn = analytic_memory("spikformer-8-512", attention="lrf_dyn", inference_form="parallel")
    assert ssa.total("attention_core") == 8 * 32768 * 4
    assert dyn.total("attention_core") == 8 * 4096 * 4
    # the streaming LRF window (151 of 196 tokens) dominates lrf_dyn's attention state
    assert dyn.total("attention_buffers") == 8 * 151 * 512 * 4
    # the whole-model peak is in the stem, identical for both variants
    assert ssa.peak_module == dyn.peak_module == "stem"
    assert ssa.activation_peak == dyn.activation_peak == 118_013_952  # docs/memory.md's table


def test_activations_only_where_traced():
    """metrics.memory alone has no activation view; memory_breakdown traces it (not at Loihi precision)."""
    assert breakdown(tiny("lrf_dyn"), "fp32").activation_peak is None
    traced = memory_breakdown(tiny("lrf_dyn"), "fp32")
    assert traced.activation_peak > 0 and traced.peak_module
    assert memory_breakdown(tiny("lrf_dyn"), "loihi").activation_peak is None


@pytest.mark.parametrize(
    "attention,form",
    [("ssa", "recurrent"), ("lrf_dyn", "recurrent"), ("lrf_causal", "recurrent"), ("lrf_dyn", "parallel")],
)
def test_trace_matches_measured_forward(attention, form):
    """The trace of the real model on the meta device (with SpikingJelly's CPU LIF scratch) against the
    measured allocator peak of a CPU forward: the attention core's working set to the byte (+ scalars),
    the whole forward within 10 % (the LIF's inside is modelled, not traced)."""
    from spikeport.baselines.torch_memory import measure
    from spikeport.train.presets import preset_config

    cfg = preset_config("digits-tiny", attention=attention)
    measured = measure(build_model(cfg), inference_form=form)
    analytic = memory_breakdown(cfg, "fp32", inference_form=form, lif_impl="spikingjelly-cpu")
    assert measured.method == "torch.profiler CPU allocation events" and measured.no_grad
    assert measured.weights_bytes == analytic.total("weights")
    core = {m.name: m.core_working_set for m in analytic.modules}["block.0.attn"]
    assert measured.working_sets["block.0.attn.core"] == pytest.approx(core, abs=64)
    assert measured.activation_peak == pytest.approx(analytic.activation_peak, rel=0.10)
    assert set(measured.modules) == {m.name for m in analytic.modules}


def test_compare_json_and_cli(capsys):
    from spikeport.cli import main

    assert (
        main(["memory", "digits-tiny", "--attention", "ssa", "--attention", "lrf_dyn", "--no-measure", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "spikeport.memory_compare" and out["schema_version"] == 1
    rows = {r["figure"]: r for r in out["summary"]}
    core = rows["attn core state"]
    assert core["ratio_to_ssa"]["lrf_dyn"] == pytest.approx(core["bytes"]["lrf_dyn"] / core["bytes"]["ssa"])
    assert rows["act peak measured"]["bytes"]["ssa"] is None  # --no-measure
    assert main(["memory", "digits-tiny", "--attention", "lrf_dyn", "--no-measure"]) == 0
    assert "held total" in capsys.readouterr().out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.max_memory_allocated)")
def test_measure_on_cuda():
    from spikeport.baselines.torch_memory import measure
    from spikeport.train.presets import preset_config

    m = measure(build_model(preset_config("digits-tiny", attention="lrf_dyn")), device="cuda")
    assert m.method == "torch.cuda.max_memory_allocated" and m.activation_peak > 0
    assert "block.0.attn.core" in m.working_sets
