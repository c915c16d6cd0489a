"""Datasets and loaders: scikit-learn digits (embedded), CIFAR-10/100 (python-pickle folders), ImageNet
(an image folder), read by ``spikeport.data.images`` (numpy, what the deploy side uses) and wrapped here as torch
datasets. No torchvision: the few transforms needed live here and in augment.py.

Every loader returns ``(images [B, C, H, W] float32 normalized, labels [B] int64)`` batches. Bad input
(a missing or corrupt CIFAR file, an image folder without images) raises ``DataError`` naming the file
and what was expected.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from spikeport.data.images import (
    CIFAR_LAYOUT,
    CIFAR_MEAN,
    CIFAR_STD,
    DATASETS,
    IMAGENET_MEAN,
    IMAGENET_STD,
    digits_arrays,
    digits_split,
    digits_stats,
    folder_classes,
    folder_images,
    imagenet_split_dir,
    load_cifar,
    read_image,
    split_arrays,
)
from spikeport.errors import DataError, unknown_choice
from spikeport.train.augment import AugmentConfig, build_eval_transform, build_train_transform

Transform = Callable[[Any], torch.Tensor]  # one image (an array or a PIL image) -> normalized [C, H, W]


@dataclass
class DataInfo:
    dataset: str
    num_classes: int
    in_channels: int
    img_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    train_size: int
    test_size: int


# --------------------------------------------------------------------------------------------- digits
def load_digits_split(split: str = "test", normalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """(images [N, 1, 8, 8], labels [N]) of the fixed digits split; used by convert/run/demo as well."""
    x, y = digits_split(split, normalize)
    return torch.from_numpy(x), torch.from_numpy(y)


class ArrayDataset(Dataset):
    """In-memory images (uint8 HWC or float CHW) with a per-sample transform."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform: Transform) -> None:
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.transform(self.images[i]), int(self.labels[i])


# ------------------------------------------------------------------------------------------- ImageNet
class ImageFolder(Dataset):
    """``root/<class>/<image>`` (class = subfolder name, sorted), read with PIL."""

    def __init__(self, root: str | os.PathLike[str], transform: Transform, classes: list[str] | None = None) -> None:
        self.root, self.transform = Path(root), transform
        self.classes = classes or folder_classes(self.root)
        self.samples = folder_images(self.root, self.classes)

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        path, label = self.samples[i]
        return self.transform(read_image(path)), label


ImageDataset = ArrayDataset | ImageFolder  # (normalized image [C, H, W], label) per index


# -------------------------------------------------------------------------------------------- loaders
def build_datasets(
    dataset: str, data_dir: str | None, augment: AugmentConfig, img_size: int | None = None
) -> tuple[ImageDataset, ImageDataset, DataInfo]:
    """(train dataset, test dataset, DataInfo) for one of DATASETS."""
    train: ImageDataset
    test: ImageDataset
    if dataset not in DATASETS:
        raise unknown_choice("dataset", dataset, DATASETS)
    if dataset == "digits":
        arrays = digits_arrays()
        mean, std = digits_stats()
        size, chans, classes = 8, 1, 10
        train_tf = build_train_transform(augment, "tensor", mean, std, size)
        eval_tf = build_eval_transform("tensor", mean, std, size)
        train = ArrayDataset(arrays["x_train"], arrays["y_train"], train_tf)
        test = ArrayDataset(arrays["x_test"], arrays["y_test"], eval_tf)
    elif dataset in CIFAR_LAYOUT:
        if not data_dir:
            raise DataError(
                f"--data-dir is required for {dataset}: the folder of the python-pickle batches "
                f"({CIFAR_LAYOUT[dataset][0]}/)"
            )
        mean, std, size, chans, classes = CIFAR_MEAN, CIFAR_STD, 32, 3, CIFAR_LAYOUT[dataset][4]
        train = ArrayDataset(
            *load_cifar(dataset, data_dir, "train"), build_train_transform(augment, "pil", mean, std, size)
        )
        test = ArrayDataset(*load_cifar(dataset, data_dir, "test"), build_eval_transform("pil", mean, std, size))
    else:
        if not data_dir:
            raise DataError("--data-dir is required for imagenet: a folder with train/<class>/ and val/<class>/")
        mean, std, size, chans = IMAGENET_MEAN, IMAGENET_STD, img_size or 224, 3
        train = ImageFolder(
            imagenet_split_dir(data_dir, "train"), build_train_transform(augment, "pil-crop", mean, std, size)
        )
        test = ImageFolder(
            imagenet_split_dir(data_dir, "test"),
            build_eval_transform("pil-crop", mean, std, size),
            classes=train.classes,
        )
        classes = len(train.classes)
    info = DataInfo(dataset, classes, chans, size, tuple(mean), tuple(std), len(train), len(test))
    return train, test, info


def build_loaders(
    dataset: str,
    data_dir: str | None,
    augment: AugmentConfig,
    batch_size: int,
    eval_batch_size: int | None = None,
    num_workers: int = 0,
    seed: int = 0,
    distributed: bool = False,
    img_size: int | None = None,
) -> tuple[DataLoader[Any], DataLoader[Any], DataInfo]:
    """(train loader, test loader, DataInfo). The train order comes from a generator the loop reseeds
    every epoch (``set_epoch``), so a resumed run sees the same batches as an uninterrupted one."""
    train, test, info = build_datasets(dataset, data_dir, augment, img_size)
    eval_batch_size = eval_batch_size or batch_size
    if distributed:
        from torch.utils.data.distributed import DistributedSampler

        train_sampler: Sampler[int] = DistributedSampler(train, shuffle=True, seed=seed, drop_last=True)
        test_sampler: Sampler[int] | None = DistributedSampler(test, shuffle=False)
    else:
        train_sampler, test_sampler = EpochShuffle(len(train), seed), None
    pin = torch.cuda.is_available()
    train_loader = DataLoader(
        train,
        batch_size=batch_size,
        sampler=train_sampler,
        num_workers=num_workers,
        drop_last=len(train) > batch_size,
        pin_memory=pin,
        persistent_workers=num_workers > 0,
    )
    test_loader = DataLoader(
        test, batch_size=eval_batch_size, sampler=test_sampler, shuffle=False, num_workers=num_workers, pin_memory=pin
    )
    return train_loader, test_loader, info


class EpochShuffle(Sampler[int]):
    """A random permutation that depends only on (seed, epoch): the same as DistributedSampler's rule."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.n, generator=gen).tolist())

    def __len__(self) -> int:
        return self.n


def split_tensors(
    dataset: str, data_dir: str | None, split: str, limit: int | None = None, img_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images [S, C, H, W] normalized, labels [S]) without augmentation; the first ``limit`` samples
    (``spikeport.data.images.split_arrays`` as tensors). Used by convert / QAT / the exports (calibration and
    evaluation tensors)."""
    x, y = split_arrays(dataset, data_dir, split, limit, img_size)
    return torch.from_numpy(x).float(), torch.from_numpy(y)
