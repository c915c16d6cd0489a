"""The papers' model sizes with every LIF layer firing, built in minutes from files a test writes (issue 25).

A freshly or briefly trained spikformer-4-384 is silent past its stem (issue 25 measured one epoch on a small
CIFAR folder: only the first LIF fired), so a comparison of executors on it compares zeros. Here the model's
BatchNorm statistics are re-estimated on the data set's own images (conftest.spiky_model: one train-mode pass,
momentum 1, gains and biases drawn so that LIFs fire), and the result is saved as a spikeport checkpoint that
``spikeport convert`` reads like any trained one. Everything is seeded.

    folder = write_synthetic_cifar(tmp / "cifar")
    ckpt = firing_checkpoint("spikformer-4-384", "lrf_dyn", "cifar10", folder, tmp / "run")
    spikeport convert <ckpt> --out ... (calibrates and evaluates on the same folder)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import spiky_model
from data_files import write_cifar, write_image_folder

FIRING_FLOOR = 0.01  # every LIF layer fires on at least this share of its neuron-steps


def write_synthetic_cifar(root: Path, per_file: int = 16, seed: int = 0) -> Path:
    """A CIFAR-10 folder in the python-pickle layout (5 train batches and a test batch of ``per_file`` images
    each); returns the folder to give as ``--data-dir``."""
    write_cifar(Path(root), "cifar10", per_file=per_file, seed=seed)
    return Path(root)


def write_synthetic_imagenet(root: Path, classes: int = 2, per_class: int = 2) -> Path:
    """An ImageNet image folder (train/<class>/, val/<class>/) of 256 x 256 images, center-cropped to 224."""
    write_image_folder(
        Path(root), classes=tuple(f"n{i:08d}" for i in range(classes)), per_class=per_class, size=(256, 256)
    )
    return Path(root)


def dataset_images(dataset: str, data_dir: Path, split: str, limit: int, img_size: int):
    """The first ``limit`` images of a split as the converter reads them (normalized, [S, C, H, W] torch)."""
    from spikeport.train.data import split_tensors

    return split_tensors(dataset, str(data_dir), split, limit, img_size)


def firing_model(preset: str, attention: str, dataset: str, data_dir: Path, calib: int = 16, seed: int = 0):
    """``preset`` with ``attention`` whose BatchNorm statistics come from ``calib`` training images of
    ``data_dir`` (see the module docstring)."""
    from spikeport.train.presets import preset_config

    size = preset_config(preset, dataset).img_size
    images, _ = dataset_images(dataset, data_dir, "train", calib, size)
    return spiky_model(attention, seed=seed, preset=preset, calib=images, num_classes=_classes(dataset, data_dir))


def _classes(dataset: str, data_dir: Path) -> int:
    if dataset != "imagenet":
        from spikeport.train.presets import DATASET_SHAPES

        return DATASET_SHAPES[dataset][2]
    return sum(1 for p in (Path(data_dir) / "train").iterdir() if p.is_dir())


def firing_checkpoint(
    preset: str, attention: str, dataset: str, data_dir: Path, out: Path, calib: int = 16, seed: int = 0
) -> Path:
    """``firing_model`` saved as ``<out>/checkpoint.pt`` (a spikeport checkpoint: model, config, data set)."""
    from spikeport.train import checkpoint as ckpt_io

    model = firing_model(preset, attention, dataset, data_dir, calib, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = {
        "format": ckpt_io.FORMAT,
        "version": ckpt_io.VERSION,
        "model": model.state_dict(),
        "model_config": model.cfg.to_dict(),
        "train_config": {"dataset": dataset, "data_dir": str(data_dir), "seed": seed},
        "epoch": 0,
    }
    return ckpt_io.save_atomic(state, out / "checkpoint.pt")


def firing_rates(spikes: dict[str, np.ndarray], layers: list[str]) -> dict[str, float]:
    """Share of neuron-steps that spiked, per layer, from spikes [S, T, *shape]."""
    return {name: float(np.mean(spikes[name])) for name in layers}
