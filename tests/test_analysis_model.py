"""spikeport analyze: token-mixing matrices, streaming statistics, the whole analysis on tiny models."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from spikeport.analysis.mixing import local_mixing, mixing_per_step
from spikeport.analysis.model_analysis import AnalysisConfig, analyze_model, write_outputs
from spikeport.analysis.stats import CosineStats, HeadCorrStats, LocalityStats, manhattan
from spikeport.train.models import build_model
from spikeport.train.presets import preset_config

ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")


def firing_model(attention: str = "ssa", arch: str = "spikformer", seed: int = 0):
    """digits-tiny (or its ViT twin), untrained, with BatchNorm affine parameters that make every LIF fire
    (an untrained Spikformer is silent), so that every statistic has data."""
    torch.manual_seed(seed)
    extra = {"arch": "vit", "patch_size": 1} if arch == "vit" else {"attention": attention}
    model = build_model(preset_config("digits-tiny", neuron_backend="torch", **extra)).eval()
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data = torch.rand(m.weight.shape, generator=gen) * 2 + 0.5
            m.bias.data = torch.rand(m.bias.shape, generator=gen) + 0.2
    return model


def images(n=12, seed=1):
    return torch.randn(n, 1, 8, 8, generator=torch.Generator().manual_seed(seed))


# ------------------------------------------------------------------------------------- mixing matrices
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_mixing_matrices_reproduce_the_attention_input(attention):
    attn = firing_model(attention).block[0].attn
    gen = torch.Generator().manual_seed(0)
    q, k, v = ((torch.rand(2, 3, 64, 64, generator=gen) < 0.3).float() for _ in range(3))
    with torch.no_grad():
        local = attn.lrf(v).double() if attn.lrf is not None else 0.0
        y = attn.mix(q, k, v).double() - local
        a = mixing_per_step(attn, q, k)  # [T, B, H, N, N]
        if attention == "lrf_dyn":  # channel-wise mixing: the maps are its sum over the head's channels
            ones = torch.ones_like(v)
            y1 = attn.mix(q, k, ones).double() - attn.lrf(ones).double()
            torch.testing.assert_close(attn.heads(y1).sum(-1), a.sum(-1))
        else:
            ref = (a @ attn.heads(v.double())).transpose(2, 3).reshape(y.shape)
            torch.testing.assert_close(y, ref)
        if attn.lrf is not None:
            mats = local_mixing(attn.lrf)
            torch.testing.assert_close(torch.einsum("cnm,tbmc->tbnc", mats, v.double()), attn.lrf(v).double())
    if attention == "lrf_causal":
        assert float(a[..., 0, 1:].abs().sum()) == 0.0  # token 0 sees no later key


# ------------------------------------------------------------------------------------- statistics
def test_locality_on_constructed_maps():
    grid = (8, 8)
    eye = LocalityStats(grid)
    eye.update(torch.eye(64)[None])
    r = eye.result()
    assert r["share_within_radius"] == pytest.approx(1.0) and r["normalised_entropy"] == pytest.approx(0.0)
    assert r["mean_distance"] == pytest.approx(0.0)
    uni = LocalityStats(grid)
    uni.update(torch.ones(2, 64, 64))
    r = uni.result()
    assert r["share_within_radius"] == pytest.approx(r["uniform_share_within_radius"])
    assert r["normalised_entropy"] == pytest.approx(1.0)
    far = LocalityStats(grid)
    far.update((manhattan(grid) == 7).double() + 0 * torch.eye(64))
    r = far.result()
    assert r["share_within_radius"] == 0.0 and r["mean_distance"] == pytest.approx(7.0)
    assert r["empty_rows"] == int(((manhattan(grid) == 7).sum(1) == 0).sum())
    # rows are normalised: scaling a map changes nothing
    a, b = LocalityStats(grid), LocalityStats(grid)
    m = torch.rand(3, 64, 64, generator=torch.Generator().manual_seed(0))
    a.update(m)
    b.update(m * 7.5)
    assert a.result()["share_within_radius"] == pytest.approx(b.result()["share_within_radius"])


def test_head_correlation_streams_to_the_batch_value():
    gen = torch.Generator().manual_seed(0)
    base = torch.rand(6, 1, 10, 10, generator=gen)
    maps = torch.cat([base, 2 * base + 1, -base, torch.rand(6, 1, 10, 10, generator=gen)], dim=1)  # 4 heads
    stats = HeadCorrStats()
    for chunk in maps.split(2):
        stats.update(chunk)
    c = stats.matrix()
    ref = np.corrcoef(maps.transpose(0, 1).reshape(4, -1).numpy())
    np.testing.assert_allclose(c, ref, atol=1e-9)
    assert c[0, 1] == pytest.approx(1.0) and c[0, 2] == pytest.approx(-1.0) and abs(c[0, 3]) < 0.2
    silent = HeadCorrStats()
    silent.update(torch.cat([base, torch.zeros_like(base)], 1))
    assert np.isnan(silent.matrix()[0, 1]) and silent.result()["mean_offdiag"] != silent.result()["mean_offdiag"]


def test_cosine_histogram_and_silent_tokens():
    stats = CosineStats()
    feats = torch.ones(2, 5, 3)
    feats[0, 4] = 0  # a silent token
    stats.update(feats)
    r = stats.result()
    assert r["pairs"] == 10 + 6 and r["share_ge_0.99"] == pytest.approx(1.0) and r["mean"] == pytest.approx(1.0)
    assert r["silent_token_share"] == pytest.approx(0.1) and sum(r["hist"]) == 16
    opposite = CosineStats()
    opposite.update(torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]]))
    assert opposite.result()["mean"] == pytest.approx(-1.0) and opposite.result()["hist"][0] == 1


# ------------------------------------------------------------------------------------- whole analysis
@pytest.mark.parametrize("attention,arch", [("ssa", "spikformer"), ("lrf_ssa", "spikformer"), (None, "vit")])
def test_analyze_model_on_tiny_models(attention, arch, tmp_path):
    model = firing_model(attention or "ssa", arch)
    x = images(12)
    res = analyze_model(model, x, torch.zeros(12, dtype=torch.long), AnalysisConfig(samples=10, batch_size=4))
    assert res["samples"] == 10 and 0.0 <= res["accuracy_on_samples"] <= 1.0
    assert len(res["representations"]) == 3 and len(res["blocks"]) == 2
    # numbered from 0 like the layer names (block.0.attn...) every other command prints
    assert [b["block"] for b in res["blocks"]] == [0, 1] and res["representations"][1]["name"] == "block 0 output"
    assert all(r["cosine"]["pairs"] > 0 for r in res["representations"])
    kinds = {"attention", "effective", "local_only"} if attention == "lrf_ssa" else {"attention"}
    assert set(res["locality_overall"]) == kinds
    for kind in kinds:
        s = res["locality_overall"][kind]
        assert 0 < s["share_within_radius"] <= 1 and 0 <= s["normalised_entropy"] <= 1 and s["rows"] > 0
        assert sum(s["mass_by_distance"]) == pytest.approx(1.0, abs=1e-4)
    hc = np.array(res["blocks"][0]["head_correlation"]["matrix"], dtype=float)
    assert hc.shape == (4, 4) and np.allclose(np.diag(hc)[np.isfinite(np.diag(hc))], 1.0)
    if arch == "vit":
        assert 0 < res["blocks"][0]["cls_mass"] < 1
    out = write_outputs(res, tmp_path, "test")
    assert out["files"] == ["analysis.json", "cosine.png", "heads.png", "index.html", "locality.png"]
    page = (tmp_path / "index.html").read_text()
    assert page.count("data:image/png;base64,") == 3 and "share within 5" in page
    assert json.loads((tmp_path / "analysis.json").read_text())["schema"] == "spikeport.analysis"


def test_analyze_cli_on_a_checkpoint(tmp_path):
    from spikeport.cli import main
    from spikeport.train import checkpoint

    model = firing_model("lrf_ssa")
    ckpt = tmp_path / "ckpt.pt"
    checkpoint.save_atomic(
        {
            "format": checkpoint.FORMAT,
            "version": checkpoint.VERSION,
            "epoch": 0,
            "model": model.state_dict(),
            "model_config": model.cfg.to_dict(),
            "train_config": {"dataset": "digits"},
        },
        ckpt,
    )
    out = tmp_path / "an"
    assert main(["analyze", str(ckpt), "--out", str(out), "--samples", "8", "--batch-size", "8"]) == 0
    res = json.loads((out / "analysis.json").read_text())
    assert res["source"]["dataset"] == "digits" and res["samples"] == 8
    assert res["model"]["attention"] == "lrf_ssa" and res["accuracy_on_samples"] is not None
    assert main(["analyze", str(tmp_path / "missing.pt"), "--out", str(out)]) == 2


def test_analyze_hugging_face_albert(tmp_path):
    transformers = pytest.importorskip("transformers", reason="optional extra spikeport[hf] not installed")
    cfg = transformers.AlbertConfig(
        vocab_size=120,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        attn_implementation="eager",
    )
    torch.manual_seed(0)
    model = transformers.AlbertModel(cfg)  # randomly initialised from a config: no download
    from spikeport.analysis.hf import analyze_hf_model

    ids = torch.randint(0, 120, (6, 20), generator=torch.Generator().manual_seed(0))
    res = analyze_hf_model(model, ids, batch_size=4)
    assert len(res["representations"]) == 4 and len(res["blocks"]) == 3
    assert res["model"]["grid"] == [1, 20] and res["locality_overall"]["attention"]["rows"] == 3 * 6 * 4 * 20
    assert np.array(res["blocks"][0]["head_correlation"]["matrix"]).shape == (4, 4)
    assert 0 < res["blocks"][0]["first_token_mass"] < 1
    write_outputs(res, tmp_path, "albert")
    assert (tmp_path / "index.html").stat().st_size > 0
    # the CLI on a local model folder (save_pretrained): no hub access
    from spikeport.cli import main

    model.save_pretrained(tmp_path / "albert-tiny")
    out = tmp_path / "cli"
    assert (
        main(["analyze", "--hf", str(tmp_path / "albert-tiny"), "--out", str(out), "--samples", "3", "--seq-len", "12"])
        == 0
    )
    res = json.loads((out / "analysis.json").read_text())
    assert res["source"]["kind"] == "huggingface" and res["samples"] == 3 and res["model"]["tokens"] == 12
