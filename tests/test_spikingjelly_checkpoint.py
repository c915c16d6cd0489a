"""A SpikingJelly ``spikingjelly.activation_based.model.spikformer`` checkpoint converts (issue 36): its state dict
maps onto spikeport's Spikformer (layout conv, the stem's pool before the LIF), whose float logits equal
SpikingJelly's output averaged over T, and that model converts to an artifact the reference runs bit for bit as
the fake-quant executor does (the pooled current is the op maxpool_activation, which Lava refuses by name)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from spikingjelly.activation_based import functional
from spikingjelly.activation_based.model.spikformer import Spikformer as SJSpikformer

from spikeport import api
from spikeport.errors import CheckpointError, ConversionError
from spikeport.train import checkpoint as ck
from spikeport.train.models import build_model


def sj_model(seed: int = 0) -> SJSpikformer:
    """SpikingJelly's Spikformer on 8x8 grey images (patch 4: pools after stages 2 and 3), its BatchNorms and
    weights drawn so that every layer fires and the head separates the classes."""
    torch.manual_seed(seed)
    sj = SJSpikformer(
        T=4, in_channels=1, img_size_h=8, img_size_w=8, patch_size=4, num_classes=10, embed_dims=64, num_heads=4,
        depths=2,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(seed + 1)
    for m in sj.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data = torch.rand(m.weight.shape, generator=gen) + 0.8
            m.bias.data = torch.rand(m.bias.shape, generator=gen) * 0.8
            m.running_mean = torch.randn(m.running_mean.shape, generator=gen) * 0.1
            m.running_var = torch.rand(m.running_var.shape, generator=gen) + 0.5
        elif isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d)):
            m.weight.data = torch.randn(m.weight.shape, generator=gen) * (2.0 / m.weight[0].numel()) ** 0.5
        elif isinstance(m, torch.nn.Linear):
            m.weight.data = torch.randn(m.weight.shape, generator=gen)
    sj.eval()
    with torch.no_grad():  # the head centred on the mean feature: different images win different classes
        sj.head.bias.data -= sj_logits(sj, images(64, seed=seed + 7)).mean(0)
    return sj


def images(n: int = 24, seed: int = 3) -> torch.Tensor:
    return torch.randn(n, 1, 8, 8, generator=torch.Generator().manual_seed(seed))


def sj_logits(sj: SJSpikformer, x: torch.Tensor) -> torch.Tensor:
    functional.reset_net(sj)
    with torch.no_grad():
        return sj(x).mean(0)  # SpikingJelly's head runs per time step


@pytest.mark.parametrize("backend", ["spikingjelly", "torch"])
def test_the_state_dict_maps_onto_spikeports_model_with_equal_logits(backend):
    sj, x = sj_model(), images()
    ref = sj_logits(sj, x)
    state = sj.state_dict()
    assert ck.is_spikingjelly_state(state)
    cfg = ck.spikingjelly_config(state, img_size=8, num_heads=4, neuron_backend=backend)
    assert (cfg.embed_dim, cfg.depth, cfg.num_classes, cfg.pool_stages, cfg.pool_before_lif) == (
        64,
        2,
        10,
        (2, 3),
        True,
    )
    model = ck.load_spikingjelly_state_dict(build_model(cfg), state).eval()
    with torch.no_grad():
        out = model(x)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert len(set(ref.argmax(1).tolist())) > 2  # the classes differ: the equality is not of constants
    # the stem's order matters: pooling after the LIF (the official code's) is another function
    other = build_model(ck.spikingjelly_config(state, img_size=8, num_heads=4, neuron_backend=backend))
    other.cfg.pool_before_lif = False
    ck.load_state_checked(other, ck.spikingjelly_state_dict(state, model), "sj")
    with torch.no_grad():
        assert not torch.allclose(other.eval()(x), ref, atol=1e-3)


def test_checkpoint_files_load_as_spikingjelly_saves_them(tmp_path):
    sj, x = sj_model(1), images()
    path = tmp_path / "sj.pth"
    torch.save({"net": sj.state_dict(), "epoch": 99, "max_test_acc": 0.5}, path)  # SpikingJelly's examples' layout
    model = ck.spikingjelly_model(path, img_size=8, num_heads=4)
    with torch.no_grad():
        torch.testing.assert_close(model(x), sj_logits(sj, x), rtol=1e-5, atol=1e-5)
    with pytest.raises(CheckpointError, match="a SpikingJelly model.spikformer checkpoint, not a spikeport one"):
        ck.load(path)  # what `spikeport convert sj.pth` reads: it says how to load it
    official = build_model(ck.spikingjelly_config(sj.state_dict(), img_size=8, num_heads=4, pool_before_lif=False))
    with pytest.raises(CheckpointError, match="pool_before_lif=True"):
        ck.load_spikingjelly_state_dict(official, path)
    state = dict(sj.state_dict())
    state["blocks.0.attn.extra.weight"] = torch.zeros(1)
    with pytest.raises(CheckpointError, match="does not read: blocks.0.attn.extra.weight"):
        ck.spikingjelly_model(state, img_size=8, num_heads=4)


def test_the_model_converts_and_the_reference_runs_the_pooled_current(tmp_path):
    model = ck.spikingjelly_model(sj_model(2).state_dict(), img_size=8, num_heads=4)
    conv = api.convert(model, tmp_path / "build", calibrate=64, samples=32, dataset="digits", onnx=False)
    pools = [n for n in conv.graph.nodes.values() if n.op == "maxpool_activation"]
    assert [n.name for n in pools] == ["patch_embed.maxpool2", "patch_embed.maxpool3"]
    assert all(conv.graph.nodes[n.inputs[0]].op == "conv" for n in pools)
    comparison = conv.report["comparison"]
    assert comparison["prediction_agreement_fq_ref"] == 1.0  # the integer contract, through the new op
    assert abs(comparison["accuracy"]["reference"] - comparison["accuracy"]["torch-float"]) <= 0.1
    run = api.run(conv.artifact_path, samples=8)
    assert run.layer("patch_embed.proj_lif3").total("spikes") > 0
    with pytest.raises(ConversionError, match="op 'maxpool_activation' has no Lava lowering"):
        api.run(conv.artifact_path, "lava", samples=1)


def test_maxpool_activation_is_torchs_max_pool_with_negative_currents():
    from spikeport import fixedpoint as fx
    from spikeport.ir.graph import Node
    from spikeport.ir.kernels import kernel

    class Ctx:
        ops = fx.INT

    x = np.random.default_rng(0).integers(-1000, -1, size=(2, 7, 7, 3))  # all negative: a zero pad would win
    node = Node("p", "maxpool_activation", ["a"], {"kernel": 3, "stride": 2, "padding": 1})
    out = kernel("maxpool_activation").step(Ctx(), node, [x], {}, {})
    want = torch.nn.functional.max_pool2d(torch.tensor(x).permute(0, 3, 1, 2).double(), 3, 2, 1)
    np.testing.assert_array_equal(out, want.permute(0, 2, 3, 1).numpy().astype(np.int64))


def test_train_init_starts_from_a_spikingjelly_checkpoint(tmp_path):
    """`spikeport train --init sj.pth` (and QAT's init) with a model config of SpikingJelly's shape."""
    from spikeport.train.loop import Trainer

    sj, x = sj_model(4), images()
    path = tmp_path / "sj.pth"
    torch.save(sj.state_dict(), path)
    model = build_model(ck.spikingjelly_config(sj.state_dict(), img_size=8, num_heads=4))
    Trainer.load_init(model, str(path))
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(x), sj_logits(sj, x), rtol=1e-5, atol=1e-5)
