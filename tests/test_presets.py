"""Parameter counts of every preset against the published ones (built on the meta device: no memory)."""

from __future__ import annotations

import math

import pytest
import torch

from spikeport.train.models import build_model, count_params
from spikeport.train.presets import DEFAULT_DATASET, PRESETS, preset_config

# Spikformer paper (Zhou et al., ICLR 2023), Tables 1-2: what the forward pass uses.
SPIKFORMER_PAPER_M = {
    "spikformer-4-384": 9.32,
    "spikformer-4-256": 4.15,
    "spikformer-2-384": 5.76,
    "spikformer-8-384": 16.81,
    "spikformer-8-512": 29.68,
    "spikformer-8-768": 66.34,
}
# Seed 000 Table 1 (CIFAR-10, 12 layers, 384, 6 heads, patch 4): these counts include the official
# blocks' unused LayerNorms; the table truncates to two decimals.
SEED000_M = {
    ("vit-12-384", True, True): 21.34,
    ("vit-12-384", False, True): 7.14,
    ("vit-12-384", True, False): 21.33,
    ("spikformer-12-384", True, True): 23.58,
    ("spikformer-12-384", False, True): 9.35,
    ("spikformer-12-384", True, False): 23.58,
}


def meta_model(preset: str, **overrides):
    with torch.device("meta"):
        return build_model(preset_config(preset, **overrides))


@pytest.mark.parametrize("preset", sorted(SPIKFORMER_PAPER_M))
def test_spikformer_paper_counts(preset):
    millions = count_params(meta_model(preset)) / 1e6
    assert abs(millions - SPIKFORMER_PAPER_M[preset]) <= 0.01, (preset, millions)


@pytest.mark.parametrize("key", sorted(SEED000_M))
def test_seed000_table1_counts(key):
    preset, mlp, skip = key
    params = count_params(meta_model(preset, mlp=mlp, skip=skip), include_unused=True)
    assert math.floor(params / 1e4) / 100 == SEED000_M[key], (key, params)


def test_unused_norms_are_the_only_difference():
    model = meta_model("spikformer-4-384")
    unused = count_params(model, include_unused=True) - count_params(model)
    assert unused == 4 * 2 * 2 * 384  # 4 blocks x (norm1, norm2) x (weight, bias) x D


def test_every_preset_has_a_dataset_and_a_recipe():
    from spikeport.train.api import recipe

    for name in PRESETS:
        assert DEFAULT_DATASET[name] in ("digits", "cifar10", "imagenet")
        assert recipe(name)["epochs"] >= 1


def test_digits_tiny_keeps_the_spikformer_structure():
    cfg = preset_config("digits-tiny")
    model = meta_model("digits-tiny")
    assert cfg.grid == (8, 8) and cfg.depth >= 1 and cfg.mlp
    names = {n for n, _ in model.named_modules()}
    assert {"patch_embed.proj_conv3", "patch_embed.rpe_conv", "block.0.attn", "block.0.mlp"} <= names
    assert count_params(model) < 250_000


def test_info_table_cuts_no_name_and_no_number_in_an_80_column_terminal():
    """A new user's complaint: at 80 columns `info` showed `patch_embe...` and `462,422,0...`."""
    import io

    from rich.console import Console

    from spikeport.cli._common import fmt, table
    from spikeport.train.info import model_info

    info = model_info(preset_config("spikformer-8-768"), "spikformer-8-768", None)
    rows = [[r["name"], r["op"], "x".join(map(str, r["out_shape"])), r["params"], r["macs"]] for r in info["layers"]]
    console = Console(width=80, file=io.StringIO(), force_terminal=True, color_system=None)
    table("spikformer-8-768", ["layer", "op", "out shape", "params", "MACs"], rows, console=console)
    out = console.file.getvalue()
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    for r in rows:
        assert r[0] in out and fmt(r[4]) in out
