"""Every preset x attention builds and runs; reset, determinism, and the two neuron backends agree."""

from __future__ import annotations

import pytest
import torch

from spikeport.train.model_config import ATTENTIONS
from spikeport.train.models import build_model, count_params
from spikeport.train.neurons import is_lif, reset_net
from spikeport.train.presets import PRESETS, preset_config

CIFAR = [p for p, s in PRESETS.items() if s.get("img_size") == 32 and s.get("arch", "spikformer") == "spikformer"]
IMAGENET = [p for p, s in PRESETS.items() if s.get("img_size") == 224]


def run(model, x):
    with torch.no_grad():
        out = model(x)
    reset_net(model)
    return out


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("preset", ["digits-tiny", *CIFAR])
def test_forward_shapes(preset, attention):
    # T=1 and one block (all blocks are alike): the preset's SPS stem, block and head at its resolution
    torch.manual_seed(0)
    cfg = preset_config(preset, attention=attention, T=1, depth=1, neuron_backend="torch")
    model = build_model(cfg).eval()
    x = torch.rand(2, cfg.in_channels, cfg.img_size, cfg.img_size)
    assert model.forward_features(x).shape == (1, 2, cfg.num_tokens, cfg.embed_dim)
    reset_net(model)
    out = run(model, x)
    assert out.shape == (2, cfg.num_classes) and torch.isfinite(out).all()


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("preset", IMAGENET)
def test_imagenet_presets_build_and_run_reduced(preset, attention):
    full = preset_config(preset, attention=attention)
    assert full.grid == (14, 14) and full.layout == "conv"
    with torch.device("meta"):
        assert count_params(build_model(full)) > 16e6
    # forward on a reduced image: 32x32 -> a 2x2 token grid through the four pooled SPS stages
    cfg = preset_config(preset, attention=attention, img_size=32, T=1, depth=1, num_classes=7, neuron_backend="torch")
    out = run(build_model(cfg).eval(), torch.rand(1, 3, 32, 32))
    assert cfg.grid == (2, 2) and out.shape == (1, 7)


@pytest.mark.parametrize("mlp,skip", [(True, True), (False, True), (True, False)])
def test_vit_and_ablations(mlp, skip):
    cfg = preset_config("vit-12-384", depth=2, mlp=mlp, skip=skip)
    out = run(build_model(cfg).eval(), torch.rand(2, 3, 32, 32))
    assert out.shape == (2, 10)
    spk = preset_config("digits-tiny", mlp=mlp, skip=skip, neuron_backend="torch")
    model = build_model(spk).eval()
    assert (model.block[0].mlp is None) == (not mlp)
    assert run(model, torch.rand(2, 1, 8, 8)).shape == (2, 10)


def spiky(attention="ssa", backend="torch", seed=0):
    """digits-tiny with BatchNorm scales that make the untrained layers fire."""
    torch.manual_seed(seed)
    model = build_model(preset_config("digits-tiny", attention=attention, neuron_backend=backend)).eval()
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data = torch.rand(m.weight.shape, generator=gen) * 2.5 + 0.5
            m.bias.data = torch.rand(m.bias.shape, generator=gen) * 1.5 - 0.5
    return model


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_reset_makes_runs_repeatable(attention):
    model, x = spiky(attention), torch.rand(4, 1, 8, 8) * 2
    with torch.no_grad():
        first = model(x)
        carried = model(x)  # membrane state carried over from the first run
    reset_net(model)
    again = run(model, x)
    assert torch.equal(first, again)
    assert not torch.equal(first, carried)


@pytest.mark.parametrize("attention", ["ssa", "lrf_dyn"])
def test_seeded_construction_is_deterministic(attention):
    a, b = spiky(attention, seed=3), spiky(attention, seed=3)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert ka == kb and torch.equal(va, vb)
    x = torch.rand(3, 1, 8, 8) * 2
    assert torch.equal(run(a, x), run(b, x))
    assert not torch.equal(spiky(attention, seed=4).head.weight, a.head.weight)


def lif_spikes(model, x):
    spikes = {}
    hooks = [
        m.register_forward_hook(lambda _m, _i, out, n=n: spikes.__setitem__(n, out.detach().clone()))
        for n, m in model.named_modules()
        if is_lif(m)
    ]
    out = run(model, x)
    for h in hooks:
        h.remove()
    return out, spikes


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_spikingjelly_and_torch_neurons_give_identical_spikes(attention):
    x = torch.rand(4, 1, 8, 8) * 2
    out_t, spk_t = lif_spikes(spiky(attention, "torch"), x)
    out_s, spk_s = lif_spikes(spiky(attention, "spikingjelly"), x)
    assert spk_t.keys() == spk_s.keys() and len(spk_t) == 19
    for name in spk_t:
        assert torch.equal(spk_t[name], spk_s[name]), name
    assert sum(float(s.sum()) for s in spk_t.values()) > 0
    assert torch.equal(out_t, out_s)


def test_backends_give_the_same_gradients():
    x, y = torch.rand(4, 1, 8, 8) * 2, torch.tensor([0, 1, 2, 3])
    grads = []
    for backend in ("torch", "spikingjelly"):
        model = spiky("lrf_dyn", backend).train()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        reset_net(model)
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert grads[0].abs().sum() > 0
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-4, atol=1e-5)  # float summation order differs


def test_attention_spec_of_each_variant():
    """The four user-facing names map to (core, lrf, dendrites) and back; the model is built from the spec."""
    from spikeport.train.model_config import ATTENTION_VARIANTS, AttentionSpec, ModelConfig, attention_spec

    expected = {
        "ssa": AttentionSpec("ssa", False),
        "lrf_ssa": AttentionSpec("ssa", True),
        "lrf_causal": AttentionSpec("causal", True),
        "lrf_dyn": AttentionSpec("dendritic", True, 6),
    }
    assert set(expected) == set(ATTENTION_VARIANTS) == set(ATTENTIONS)
    for name, spec in expected.items():
        cfg = ModelConfig(
            img_size=8,
            in_channels=1,
            embed_dim=16,
            depth=1,
            num_heads=2,
            pool_stages=(),
            attention=name,
            num_dendrites=6,
            neuron_backend="torch",
        )
        assert cfg.attention_spec == attention_spec(name, 6) == spec and spec.name == name
        assert cfg.to_dict()["attention"] == name and ModelConfig.from_dict(cfg.to_dict()).attention_spec == spec
        attn = build_model(cfg).block[0].attn
        assert (attn.lrf is not None, attn.dendrites is not None) == (spec.lrf, spec.core == "dendritic")
        assert attn.dendrites is None or attn.dendrites.num_dendrites == 6
    assert [attention_spec(n).causal for n in ATTENTIONS] == [False, False, True, True]


def test_attention_spec_validation_names_the_field():
    from spikeport.errors import ConfigError
    from spikeport.train.model_config import AttentionSpec, ModelConfig, attention_spec

    with pytest.raises(ConfigError, match="attention core 'softmax'"):
        AttentionSpec("softmax", False)
    with pytest.raises(ConfigError, match="'lrf' must be a bool"):
        AttentionSpec("ssa", "yes")
    with pytest.raises(ConfigError, match="'dendrites'.*>= 1"):
        AttentionSpec("dendritic", True, 0)
    with pytest.raises(ConfigError, match="'dendrites' must be 0 for the causal core"):
        AttentionSpec("causal", True, 4)
    with pytest.raises(ConfigError, match="unknown attention 'lrf_x'; valid choices: ssa, lrf_ssa"):
        attention_spec("lrf_x")
    with pytest.raises(ConfigError, match="num_dendrites"):
        ModelConfig(attention="lrf_dyn", num_dendrites=0)
    with pytest.raises(ConfigError, match="no variant name"):
        _ = AttentionSpec("dendritic", False, 4).name
