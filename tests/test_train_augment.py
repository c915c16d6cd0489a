"""The restricted augmentations: determinism from the seed, shapes, and what each one does."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from spikeport.errors import ConfigError
from spikeport.train.augment import (
    AUGMENT_PROFILES,
    Mixup,
    RandAugment,
    SampleTransform,
    augment_config,
    parse_randaugment,
    random_erase,
)


def test_profiles_and_overrides():
    cifar = augment_config("cifar")
    assert (cifar.hflip, cifar.reprob, cifar.mixup, cifar.cutmix, cifar.mixup_off_epoch) == (0.5, 0.25, 0.5, 0.0, 200)
    assert parse_randaugment(cifar.randaugment) == {"magnitude": 9.0, "num_ops": 1, "magnitude_std": 0.4}
    assert augment_config({"profile": "cifar", "mixup": 0.0}).mixup == 0.0
    with pytest.raises(ConfigError, match="valid choices: none, light, cifar, imagenet"):
        augment_config("heavy")
    with pytest.raises(ConfigError, match="unknown augment keys"):
        augment_config({"mixupp": 1})
    with pytest.raises(ConfigError, match="expected a probability"):
        augment_config({"hflip": 2})
    with pytest.raises(ConfigError, match="unknown section"):
        augment_config({"randaugment": "rand-m9-x3"})
    assert set(AUGMENT_PROFILES) == {"none", "light", "cifar", "imagenet"}


def test_pairs_in_configs_are_two_numbers():
    """crop_scale and betas are refused at config time unless they are two numbers (three crop_scale values
    used to pass and fail in the DataLoader; three betas at AdamW's first step)."""
    from spikeport.train.config import TrainConfig

    assert augment_config({"crop_scale": [0.08, 1]}).crop_scale == (0.08, 1.0)
    assert TrainConfig.from_dict({"betas": [0.9, 0.99]}).betas == (0.9, 0.99)
    for bad in ([0.1, 0.5, 1.0], [0.5], 0.5):
        with pytest.raises(ConfigError, match=r"augment.crop_scale = .*expected two numbers"):
            augment_config({"crop_scale": bad})
        with pytest.raises(ConfigError, match=r"betas = .*expected two numbers"):
            TrainConfig.from_dict({"betas": bad})


def test_randaugment_ops_change_pixels_and_are_seeded():
    from PIL import Image

    img = Image.fromarray(np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8))
    ra = RandAugment("rand-m9-n1-mstd0.4-inc1", fill=(125, 123, 114))
    for op in ("Equalize", "Rotate", "ShearX", "TranslateXRel", "TranslateYRel"):
        out = ra.apply(img, op, 0.9)
        assert out.size == img.size and not np.array_equal(np.asarray(out), np.asarray(img)), op
    random.seed(5)
    a = [np.asarray(ra(img)) for _ in range(20)]
    random.seed(5)
    b = [np.asarray(ra(img)) for _ in range(20)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    changed = sum(not np.array_equal(x, np.asarray(img)) for x in a)
    assert 3 <= changed <= 17  # each op applied with p = 0.5


def test_sample_transform_train_and_eval():
    img = np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    mean, std = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)
    ev = SampleTransform(None, "pil", mean, std, 32, train=False)(img)
    torch.testing.assert_close(ev, (torch.from_numpy(img).permute(2, 0, 1).float() / 255 - 0.5) / 0.25)
    tr = SampleTransform(augment_config("cifar"), "pil", mean, std, 32, train=True)
    random.seed(0)
    outs = [tr(img) for _ in range(8)]
    assert all(o.shape == (3, 32, 32) for o in outs) and any(not torch.equal(o, ev) for o in outs)
    digits = SampleTransform(augment_config("light"), "tensor", (0.3,), (0.4,), 8, train=True)
    x = np.random.default_rng(2).random((1, 8, 8)).astype(np.float32)
    assert digits(x).shape == (1, 8, 8)


def test_random_erase_zeroes_a_box():
    random.seed(1)
    x = torch.ones(3, 32, 32)
    out = random_erase(x, 1.0)
    zero = (out == 0).all(0)
    assert 0.02 * 1024 * 0.5 <= int(zero.sum()) <= 1024 / 3 * 1.5
    assert torch.equal(random_erase(x, 0.0), x)


def test_mixup_targets_and_switch_off():
    cfg = augment_config({"profile": "none", "mixup": 0.5, "mixup_off_epoch": 3})
    mix = Mixup(cfg, num_classes=4, smoothing=0.1)
    x, y = torch.randn(6, 1, 8, 8), torch.tensor([0, 1, 2, 3, 0, 1])
    xm, t = mix(x, y, epoch=0, rng=random.Random(0))
    torch.testing.assert_close(t.sum(-1), torch.ones(6))
    assert not torch.equal(xm, x)
    xo, to = mix(x, y, epoch=3, rng=random.Random(0))  # switched off: smoothed one-hot targets
    assert torch.equal(xo, x)
    torch.testing.assert_close(to[0], torch.tensor([0.925, 0.025, 0.025, 0.025]))
    cut = Mixup(augment_config({"cutmix": 1.0}), 4, 0.0)
    xc, tc = cut(x, y, 0, random.Random(3))
    changed = (xc != x).float().mean()
    assert 0 < changed < 1 and torch.allclose(tc.sum(-1), torch.ones(6))
