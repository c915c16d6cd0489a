"""Evaluation / calibration tensors for the deploy-side commands (convert, run, demo)."""
from __future__ import annotations

import torch

from spikeport.errors import DataError


def dataset_of(ckpt: dict, override: str | None = None) -> str:
    """The dataset a checkpoint was trained on (its train config), unless the user names one."""
    if override:
        return override
    name = (ckpt.get("train_config") or {}).get("dataset")
    if name:
        return name
    size = (ckpt.get("model_config") or {}).get("img_size")
    return {8: "digits", 32: "cifar10", 224: "imagenet"}.get(size, "digits")


def tensors(dataset: str, data_dir: str | None, split: str, limit: int | None = None,
            img_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(images [S, C, H, W] normalized, labels [S]) without augmentation; the first ``limit`` samples."""
    from spikeport.train.augment import augment_config
    from spikeport.train.data import build_datasets, load_digits_split

    if dataset == "digits":
        x, y = load_digits_split(split)
    else:
        train, test, _ = build_datasets(dataset, data_dir, augment_config("none"), img_size)
        ds = train if split == "train" else test
        n = len(ds) if limit is None else min(limit, len(ds))
        if n == 0:
            raise DataError(f"{dataset} {split} split is empty")
        items = [ds[i] for i in range(n)]
        x = torch.stack([a for a, _ in items])
        y = torch.as_tensor([int(b) for _, b in items], dtype=torch.int64)
    if limit is not None:
        x, y = x[:limit], y[:limit]
    return x.float(), y
