"""Each conversion pass alone, the quantizer's rules, and refusal of unsupported modules."""

import numpy as np
import pytest
import torch
from torch import nn

from conftest import spiky_model
from spikeport import fixedpoint as fx
from spikeport.convert import passes
from spikeport.convert.handlers import supported_modules, trace
from spikeport.convert.quantize import mantissa_exp, quantize
from spikeport.errors import ConversionError, UnsupportedModuleError
from spikeport.ir.ops import validate
from spikeport.train.models import build_model
from spikeport.train.presets import preset_config


def test_trace_names_nodes_after_module_paths():
    g = trace(spiky_model("lrf_dyn"))
    for name in (
        "input",
        "patch_embed.proj_conv",
        "patch_embed.rpe_add",
        "block.0.attn.q_linear",
        "block.0.attn.dendrites",
        "block.0.attn.lrf.convs.1",
        "block.1.mlp_add",
        "head",
    ):
        assert name in g.nodes
    assert g.nodes["block.0.attn.attn_lif"].inputs == [
        "block.0.attn.dendrites",
        "block.0.attn.lrf.convs.0",
        "block.0.attn.lrf.convs.1",
    ]


def test_fold_bn_reproduces_linear_plus_batchnorm():
    model = spiky_model("ssa")
    with torch.no_grad():
        bn = model.block[0].attn.q_bn
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    g = passes.fold_bn(trace(model))
    node = g.nodes["block.0.attn.q_linear"]
    x = torch.rand(5, 64)
    ref = model.block[0].attn.q_bn(model.block[0].attn.q_linear(x)).detach().numpy()
    ours = x.numpy() @ node.params["weight"].T + node.params["bias"]
    assert np.allclose(ours, ref, atol=1e-5)
    assert not any(k.startswith("bn_") for k in node.params)


def test_fold_tau_moves_one_over_tau_into_synapses():
    g = passes.fold_bn(trace(spiky_model("ssa")))
    w = g.nodes["block.0.mlp.fc1_linear"].params["weight"].copy()
    scale = g.nodes["block.0.attn.core"].attrs["scale"]
    g = passes.fold_tau(g)
    assert np.allclose(g.nodes["block.0.mlp.fc1_linear"].params["weight"], w / 2)
    assert g.nodes["block.0.attn.core"].attrs["scale"] == scale / 2
    assert g.nodes["block.0.mlp.fc1_lif"].attrs["dv"] == 2048 and g.nodes["block.0.mlp.fc1_lif"].attrs["du"] == 4095
    assert passes.fold_tau(g) is g and np.allclose(g.nodes["block.0.mlp.fc1_linear"].params["weight"], w / 2)


def test_channels_last_conv_equals_torch_conv():
    model = spiky_model("ssa")
    g = passes.to_channels_last(trace(model))
    w = g.nodes["patch_embed.proj_conv1"].params["weight"]
    x = np.random.default_rng(0).integers(0, 2, (1, 8, 8, 8))
    ours = fx.conv2d_nhwc(x, np.round(w * 1000).astype(np.int64), (1, 1), (1, 1), (1, 1), 1)
    ref = torch.nn.functional.conv2d(
        torch.tensor(x).permute(0, 3, 1, 2).double(),
        torch.tensor(np.round(w * 1000)).permute(0, 3, 1, 2).double(),
        padding=1,
    )
    assert np.array_equal(ours, ref.permute(0, 2, 3, 1).numpy().astype(np.int64))


def test_quantize_rules():
    model = spiky_model("lrf_ssa")
    g = quantize(passes.run_flow(trace(model), passes.PRE_QUANT_FLOW), input_range=2.0)
    validate(g)
    for lif in g.by_op("lif"):
        assert lif.attrs["vth"] == round(2 ** lif.attrs["sigma_exp"] * lif.attrs["v_threshold"])
        assert 0 < lif.attrs["vth"] <= fx.VTH_MAX
    for node in g.by_op("dense"):
        if g.nodes[node.inputs[0]].op == "add":  # residual inputs: never a flooring exponent
            assert node.attrs["weight_exp"] >= 0
        assert np.abs(node.params["weight_mant"]).max() >= 64  # full 8-bit use on the largest weight
    assert g.nodes["input"].attrs["frac_bits"] == 13  # 2 * 2**13 <= 32767 < 2 * 2**14
    for name, q in g.meta["quantization"].items():
        if g.nodes[name].op in ("conv", "dense"):
            assert q["rel_error"] < 0.05 and q["saturated"] <= 0.01 * q["size"] + 1


def test_mantissa_exp():
    assert mantissa_exp(0.25) == (64, -8)
    m, e = mantissa_exp(1000.0)
    assert 64 <= m <= 127 and abs(m * 2.0**e - 1000) / 1000 < 0.01


def test_dendritic_kernel_is_the_recursions_impulse_response():
    """K_m = C^T A^m Gamma: the token convolution with K equals the recursion X_n = A X_{n-1} + Gamma u_n,
    g_n = C^T X_n on any input (the identity the chip-native lowering rests on)."""
    from spikeport.ir.kernels.dendritic import dendritic_kernel

    rng = np.random.default_rng(0)
    a = np.array([[[0.9, 0.05], [0.05, 0.5]]])
    gamma, readout = np.array([[1.0, 0.5]]), np.array([[0.7, -0.3]])
    u = rng.integers(0, 2, 20).astype(np.float64)
    kernel = dendritic_kernel(a, gamma, readout, 20)[0]
    x, recursion = np.zeros(2), []
    for un in u:
        x = a[0] @ x + gamma[0] * un
        recursion.append(readout[0] @ x)
    convolution = [sum(kernel[m] * u[n - m] for m in range(n + 1)) for n in range(20)]
    assert np.allclose(recursion, convolution)


def test_check_ranges_refuses_an_out_of_range_weight():
    g = quantize(passes.run_flow(trace(spiky_model("ssa")), passes.PRE_QUANT_FLOW))
    g.nodes["block.0.attn.q_linear"].params["weight_mant"][0, 0] = 300
    with pytest.raises(ConversionError, match="block.0.attn.q_linear.*weight_mant"):
        passes.check_ranges(g)


def test_unsupported_module_names_path_type_and_alternative():
    model = spiky_model("ssa")
    model.block[1].mlp.fc1_lif = nn.ReLU()
    with pytest.raises(UnsupportedModuleError) as err:
        trace(model)
    msg = str(err.value)
    assert "block.1.mlp.fc1_lif" in msg and "ReLU" in msg and "LIF" in msg


def test_batchnorm_without_running_statistics_is_refused_by_name():
    """Its None mean and variance used to reach fold_bn ("unsupported operand type(s) for +: 'NoneType'")."""
    model = spiky_model("ssa")
    model.block[0].attn.q_bn = nn.BatchNorm1d(model.block[0].attn.q_bn.num_features, track_running_stats=False)
    with pytest.raises(UnsupportedModuleError, match="block.0.attn.q_linear.*track_running_stats=True"):
        trace(model)


def test_vit_is_refused_with_spikformer_as_alternative():
    vit = build_model(preset_config("vit-12-384", depth=1))
    with pytest.raises(UnsupportedModuleError, match="ViT.*Spikformer"):
        trace(vit)


def test_supported_list_covers_the_zoo():
    names = " ".join(n for n, _ in supported_modules())
    for t in (
        "Spikformer",
        "SPS",
        "SSA",
        "Dendrites",
        "LocalReceptiveField",
        "Conv2d",
        "Linear",
        "MaxPool2d",
        "LIFNode",
    ):
        assert t in names


@pytest.mark.parametrize(
    "preset,attention",
    [
        ("spikformer-4-256", "ssa"),
        ("spikformer-8-384", "lrf_dyn"),
        ("spikformer-2-384", "lrf_causal"),
        ("spikformer-4-256", "lrf_ssa"),
    ],
)
def test_zoo_presets_convert(preset, attention):
    # reduced image size keeps it fast; the structure (stem pools, layout, heads) is the preset's
    img = 32 if preset.startswith("spikformer-8") else 16
    model = build_model(preset_config(preset, attention=attention, img_size=img, depth=1)).eval()
    g = quantize(passes.run_flow(trace(model), passes.PRE_QUANT_FLOW))
    validate(g)
    assert g.nodes["head"].shape == (model.cfg.num_classes,)
