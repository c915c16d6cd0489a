"""The seed 000 ablation: operation counts against its Table 1, and a very small end-to-end study."""

from __future__ import annotations

import json

import pytest
import torch

from spikeport.analysis.ablation import AblationConfig, run_ablation, vit_overrides
from spikeport.analysis.opcount import count_ops
from spikeport.errors import ConfigError
from spikeport.train.models import build_model
from spikeport.train.presets import preset_config


def test_operation_counts_match_seed000_table1():
    """Seed 000 Table 1 (CIFAR-10, 12 layers, 384, 6 heads): ViT 21.34M / 1.38B, ViT no MLP 7.14M / 462.54M,
    Spikformer 23.58M / 7.36B (their FLOPs: Linear/Conv MACs; Spikformer summed over T = 4; they also count
    BatchNorm, which folds into the preceding layer here, hence < 1% less)."""
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    vit = count_ops(build_model(preset_config("vit-12-384")), x)
    assert vit["params"] == pytest.approx(21.34e6, rel=1e-3) and vit["module_macs"] == pytest.approx(1.38e9, rel=2e-3)
    assert vit["attention_macs"] == 12 * 2 * 65 * 65 * 384 and vit["sops"] is None
    vit_no_mlp = count_ops(build_model(preset_config("vit-12-384", mlp=False)), x)
    assert vit_no_mlp["module_macs"] == pytest.approx(462.54e6, rel=5e-3)
    spk = count_ops(build_model(preset_config("spikformer-12-384", neuron_backend="torch")), x)
    assert spk["params_with_unused"] == pytest.approx(23.58e6, rel=1e-3)
    assert spk["module_macs"] == pytest.approx(7.36e9, rel=1e-2) and spk["module_macs"] < 7.36e9
    assert spk["analog_macs"] == 4 * 32 * 32 * 48 * 3 * 9  # the first conv, T = 4 time steps


def test_sops_count_input_spikes_times_fan_out():
    from test_analysis_model import firing_model

    model = firing_model("ssa")
    x = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    ops = count_ops(model, x, batch_size=2)
    # the first conv (T x positions x out channels x 3x3 x 1 channel) and the head (fed firing rates)
    assert ops["analog_macs"] == 4 * 64 * 8 * 9 + 64 * 10
    # one Linear fed by known spikes: SOPs = spikes x out_features
    lin = model.block[0].mlp.fc2_linear
    seen = {}

    def grab(module, args, out):
        seen["x"] = args[0].detach()

    hook = lin.register_forward_hook(grab)
    ops_again = count_ops(model, x[:1])
    hook.remove()
    assert float(seen["x"].sum()) * lin.out_features <= ops_again["sops"]
    assert 0 < ops["sops"] < ops["module_macs"]


def test_vit_twin_sees_the_spikformer_token_grid():
    assert vit_overrides("digits-tiny", None, {}) == {"arch": "vit", "patch_size": 1}
    assert vit_overrides("spikformer-12-384", None, {}) == {"arch": "vit", "patch_size": 4}
    assert vit_overrides("spikformer-8-512", None, {}) == {"arch": "vit", "patch_size": 16}
    with pytest.raises(ConfigError, match="variant"):
        AblationConfig(variants=("no_attention",))
    with pytest.raises(ConfigError, match="eval_every = 0: the ablation evaluates every epoch"):
        AblationConfig(train={"eval_every": 0})


def test_tiny_ablation_end_to_end(tmp_path):
    """1 epoch of a shrunken digits-tiny (D=16, 1 block, T=1): both archs, then a second call that reuses
    the finished runs and adds the no-MLP ViT."""
    small = {"embed_dim": 16, "num_heads": 2, "depth": 1, "T": 1, "neuron_backend": "torch"}
    common = dict(epochs=1, model=small, train={"batch_size": 256}, out=str(tmp_path), progress=False, count_samples=8)
    res = run_ablation(AblationConfig(variants=("baseline",), **common), log=lambda *_: None)
    assert [r["name"] for r in res["rows"]] == ["ViT Baseline", "Spikformer Baseline"]
    first = {r["name"]: r for r in res["rows"]}
    res = run_ablation(AblationConfig(archs=("vit",), variants=("baseline", "no_mlp"), **common), log=lambda *_: None)
    rows = {r["name"]: r for r in res["rows"]}
    assert rows["ViT Baseline"]["final"] == first["ViT Baseline"]["final"]  # reused, not retrained
    assert rows["ViT No MLP"]["ops"]["params"] < rows["ViT Baseline"]["ops"]["params"]
    assert rows["ViT No MLP"]["ops"]["module_macs"] < rows["ViT Baseline"]["ops"]["module_macs"]
    for r in rows.values():
        assert 0 <= r["final"]["top1"] <= r["final"]["top5"] <= 1 and len(r["curves"]) == 1
        assert r["best"]["epoch"] == 1
    saved = json.loads((tmp_path / "ablation.json").read_text())
    assert saved["schema"] == "spikeport.ablation" and len(saved["rows"]) == 2
    md = (tmp_path / "ablation.md").read_text()
    assert "Table 1" in md and "ViT No MLP" in md and (tmp_path / "curves.png").stat().st_size > 0
    assert "data:image/png;base64," in (tmp_path / "index.html").read_text()
    assert first["Spikformer Baseline"]["ops"]["sops"] is not None
