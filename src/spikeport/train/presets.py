"""Named model presets. Parameter counts are checked against the published ones in tests/test_presets.py.

Published counts: Spikformer paper (Zhou et al. 2023) Tables: CIFAR 4-256 4.15M, 2-384 5.76M,
4-384 9.32M; ImageNet 8-384 16.81M, 8-512 29.68M, 8-768 66.34M. Seed 000 Table 1: ViT 21.34M,
ViT no MLP 7.14M, ViT no skip 21.33M, Spikformer 23.58M, no MLP 9.35M, no skip 23.58M (12 layers, 384,
6 heads, patch 4, CIFAR-10).
"""

from __future__ import annotations

from typing import Any

from spikeport.errors import unknown_choice
from spikeport.train.model_config import ModelConfig

CIFAR = dict(img_size=32, in_channels=3, pool_stages=(2, 3), layout="linear", T=4)
IMAGENET = dict(img_size=224, in_channels=3, num_classes=1000, pool_stages=(0, 1, 2, 3), layout="conv", T=4)

PRESETS: dict[str, dict] = {
    "spikformer-4-384": dict(CIFAR, embed_dim=384, depth=4, num_heads=12),
    "spikformer-4-256": dict(CIFAR, embed_dim=256, depth=4, num_heads=16),
    "spikformer-2-384": dict(CIFAR, embed_dim=384, depth=2, num_heads=12),
    "spikformer-8-384": dict(IMAGENET, embed_dim=384, depth=8, num_heads=12),
    "spikformer-8-512": dict(IMAGENET, embed_dim=512, depth=8, num_heads=8),
    "spikformer-8-768": dict(IMAGENET, embed_dim=768, depth=8, num_heads=12),
    # seed 000 (Clustering in Spiking Transformers), CIFAR-10, Table 4
    "spikformer-12-384": dict(CIFAR, embed_dim=384, depth=12, num_heads=6),
    "vit-12-384": dict(arch="vit", img_size=32, in_channels=3, embed_dim=384, depth=12, num_heads=6, patch_size=4),
    # the embedded default: scikit-learn digits, 8x8 grey, 10 classes. The smallest Spikformer that keeps
    # SPS (4 conv stages), RPE, attention and MLP: D=64, 2 blocks, 4 heads; no pooling so that the 8x8 token
    # grid keeps the LRF dilations (3, 5) and the locality statistics meaningful.
    "digits-tiny": dict(
        img_size=8,
        in_channels=1,
        num_classes=10,
        embed_dim=64,
        depth=2,
        num_heads=4,
        pool_stages=(),
        layout="linear",
        T=4,
        patch_size=1,
    ),
}

# The dataset a preset is meant for (used when --dataset is not given).
DEFAULT_DATASET = {
    name: ("digits" if name == "digits-tiny" else "imagenet" if spec.get("img_size") == 224 else "cifar10")
    for name, spec in PRESETS.items()
}

# The training recipe of each preset: train/configs/<name>.yaml (spikeport.train.api.recipe).
DEFAULT_TRAIN = {
    name: (
        "digits"
        if name == "digits-tiny"
        else "seed000"
        if name in ("vit-12-384", "spikformer-12-384")
        else "imagenet"
        if spec.get("img_size") == 224
        else "cifar"
    )
    for name, spec in PRESETS.items()
}

DATASET_SHAPES = {  # (img_size, in_channels, num_classes)
    "digits": (8, 1, 10),
    "cifar10": (32, 3, 10),
    "cifar100": (32, 3, 100),
    "imagenet": (224, 3, 1000),
}


def preset_config(name: str, dataset: str | None = None, **overrides: Any) -> ModelConfig:
    """The ModelConfig of a named preset, adapted to ``dataset`` (classes, channels, size) and overrides."""
    if name not in PRESETS:
        raise unknown_choice("preset", name, sorted(PRESETS))
    spec = dict(PRESETS[name])
    if dataset is not None:
        if dataset not in DATASET_SHAPES:
            raise unknown_choice("dataset", dataset, sorted(DATASET_SHAPES))
        size, chans, classes = DATASET_SHAPES[dataset]
        spec.update(img_size=size, in_channels=chans, num_classes=classes)
    spec.update({k: v for k, v in overrides.items() if v is not None})
    return ModelConfig(**spec)
