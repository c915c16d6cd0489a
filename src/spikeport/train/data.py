"""Datasets and loaders: scikit-learn digits (embedded), CIFAR-10/100 (python-pickle folders), ImageNet
(an image folder). No torchvision: the few transforms needed live here and in augment.py.

Every loader returns ``(images [B, C, H, W] float32 normalized, labels [B] int64)`` batches. Bad input
(a missing or corrupt CIFAR file, an image folder without images) raises ``DataError`` naming the file
and what was expected.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from spikeport.errors import ConfigError, DataError, unknown_choice
from spikeport.runtime.executor import to_channels_last
from spikeport.train.augment import AugmentConfig, build_eval_transform, build_train_transform

Transform = Callable[[Any], torch.Tensor]  # one image (an array or a PIL image) -> normalized [C, H, W]

DATASETS = ("digits", "cifar10", "cifar100", "imagenet")

# Per-channel statistics of the official recipes (cifar10.yml; timm's IMAGENET_DEFAULT_*).
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm", ".tif", ".tiff")
DIGITS_SPLIT_SEED = 0  # the digits split is fixed, independent of the training seed
DIGITS_TEST_FRACTION = 0.2


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


CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def preprocessing(dataset: str) -> dict:
    """What a model trained on ``dataset`` expects as input, for files that travel without spikeport (the ONNX
    export's metadata, the conversion report): pixel scale, per-channel mean and std, layout, class names."""
    classes: list[str] | None
    if dataset == "digits":
        mean, std = digits_stats()
        scale, classes = "scikit-learn digits pixel / 16 (values 0..16 -> [0, 1])", [str(i) for i in range(10)]
    elif dataset in ("cifar10", "cifar100"):
        mean, std = CIFAR_MEAN, CIFAR_STD
        scale = "uint8 RGB / 255"
        classes = list(CIFAR10_CLASSES) if dataset == "cifar10" else None
    elif dataset == "imagenet":
        mean, std = IMAGENET_MEAN, IMAGENET_STD
        scale, classes = "RGB / 255 after resize to 256 and a 224 centre crop", None
    else:
        raise unknown_choice("dataset", dataset, ("digits", "cifar10", "cifar100", "imagenet"))
    return {
        "dataset": dataset,
        "pixels": scale,
        "mean": list(mean),
        "std": list(std),
        "normalise": "x = (pixels - mean) / std per channel",
        "layout": "NCHW",
        "classes": classes,  # None: class index i is the dataset's i-th label
    }


# --------------------------------------------------------------------------------------------- digits
def digits_arrays() -> dict[str, np.ndarray]:
    """scikit-learn digits, stratified fixed 80/20 split: pixels in [0, 1] as float32 [N, 1, 8, 8]."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None]
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=DIGITS_TEST_FRACTION, stratify=y, random_state=DIGITS_SPLIT_SEED
    )
    return {"x_train": x_tr, "y_train": y_tr, "x_test": x_te, "y_test": y_te}


def digits_stats() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Mean and std of the digits training split (one grey channel)."""
    x = digits_arrays()["x_train"]
    return (float(x.mean()),), (float(x.std()),)


def load_digits_split(split: str = "test", normalize: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """(images [N, 1, 8, 8], labels [N]) of the fixed digits split; used by convert/run/demo as well."""
    if split not in ("train", "test"):
        raise unknown_choice("digits split", split, ("train", "test"))
    arrays = digits_arrays()
    x = torch.from_numpy(arrays[f"x_{split}"])
    if normalize:
        mean, std = digits_stats()
        x = (x - mean[0]) / std[0]
    return x, torch.from_numpy(arrays[f"y_{split}"])


class ArrayDataset(Dataset):
    """In-memory images (uint8 HWC or float CHW) with a per-sample transform."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform: Transform) -> None:
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return self.transform(self.images[i]), int(self.labels[i])


# ---------------------------------------------------------------------------------------------- CIFAR
class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles the CIFAR batches (dicts of numpy arrays and lists) and nothing else: a pickle that asks
    for any other global is refused instead of executed."""

    ALLOWED = {
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")
        if module == "numpy.core.multiarray":  # numpy 2 renamed the module
            module = "numpy._core.multiarray"
        return super().find_class(module, name)


def _read_cifar_batch(path: Path, label_key: bytes) -> tuple[np.ndarray, np.ndarray]:
    expected = f"a CIFAR python-pickle batch: a dict with b'data' (uint8 [N, 3072]) and {label_key!r} (N ints)"
    if not path.is_file():
        raise DataError(f"{path}: file not found; expected {expected}")
    try:
        with open(path, "rb") as fh:
            batch = _ArrayUnpickler(io.BytesIO(fh.read()), encoding="bytes").load()
    except Exception as err:  # noqa: BLE001 - any unpickling failure means a corrupt file
        raise DataError(f"{path}: cannot read it ({type(err).__name__}: {err}); expected {expected}") from None
    if not isinstance(batch, dict):
        raise DataError(f"{path}: holds a {type(batch).__name__}; expected {expected}")
    batch = {k.encode() if isinstance(k, str) else k: v for k, v in batch.items()}
    if b"data" not in batch or label_key not in batch:
        raise DataError(f"{path}: keys {sorted(batch)}; expected {expected}")
    data = np.asarray(batch[b"data"])
    labels = np.asarray(batch[label_key], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data):
        raise DataError(
            f"{path}: b'data' has dtype {data.dtype} shape {data.shape} with {len(labels)} labels; expected {expected}"
        )
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels  # HWC uint8, like PIL


CIFAR_LAYOUT = {  # dataset: (folder name, train files, test files, label key, classes)
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], b"labels", 10),
    "cifar100": ("cifar-100-python", ["train"], ["test"], b"fine_labels", 100),
}


def cifar_folder(dataset: str, data_dir: str | os.PathLike) -> Path:
    """The folder holding the batches: ``data_dir`` itself or its standard subfolder."""
    folder_name, train_files = CIFAR_LAYOUT[dataset][:2]
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DataError(
            f"{root}: no such folder; expected the {dataset} python-pickle folder "
            f"({folder_name}/ with {', '.join(train_files)}, ...)"
        )
    if not (root / train_files[0]).exists() and (root / folder_name).is_dir():
        root = root / folder_name
    return root


def load_cifar(dataset: str, data_dir: str | os.PathLike, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Images [N, 32, 32, 3] uint8 and labels [N] of one split of CIFAR-10/100 in the python-pickle layout."""
    _, train_files, test_files, key, classes = CIFAR_LAYOUT[dataset]
    root = cifar_folder(dataset, data_dir)
    parts = [_read_cifar_batch(root / name, key) for name in (train_files if split == "train" else test_files)]
    images, labels = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if labels.min() < 0 or labels.max() >= classes:
        raise DataError(f"{root}: labels span {labels.min()}..{labels.max()}; expected 0..{classes - 1} for {dataset}")
    return images, labels


# ------------------------------------------------------------------------------------------- ImageNet
class ImageFolder(Dataset):
    """``root/<class>/<image>`` (class = subfolder name, sorted), read with PIL."""

    def __init__(self, root: str | os.PathLike[str], transform: Transform, classes: list[str] | None = None) -> None:
        self.root, self.transform = Path(root), transform
        if not self.root.is_dir():
            raise DataError(f"{self.root}: no such folder; expected an image folder with one subfolder per class")
        self.classes = classes or sorted(d.name for d in self.root.iterdir() if d.is_dir())
        self.samples = [
            (p, label)
            for label, c in enumerate(self.classes)
            if (self.root / c).is_dir()
            for p in sorted((self.root / c).rglob("*"))
            if p.suffix.lower() in IMAGE_EXTENSIONS
        ]
        if not self.samples:
            raise DataError(
                f"{self.root}: no images found; expected class subfolders holding {'/'.join(IMAGE_EXTENSIONS)} files"
            )

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        from PIL import Image

        path, label = self.samples[i]
        try:
            with Image.open(path) as img:
                img = img.convert("RGB")
        except Exception as err:  # noqa: BLE001 - PIL raises many types for broken files
            raise DataError(
                f"{path}: cannot decode image ({type(err).__name__}: {err}); expected an image file"
            ) from None
        return self.transform(img), label


ImageDataset = ArrayDataset | ImageFolder  # (normalized image [C, H, W], label) per index


def imagenet_split_dir(data_dir: str | os.PathLike, split: str) -> Path:
    names = ("train",) if split == "train" else ("val", "test", "validation")
    for name in names:
        if (Path(data_dir) / name).is_dir():
            return Path(data_dir) / name
    raise DataError(
        f"{Path(data_dir).expanduser()}: no {'/'.join(names)} subfolder; expected the ImageNet "
        f"image-folder layout <dir>/train/<class>/*.JPEG and <dir>/val/<class>/*.JPEG"
    )


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


# The images each data set holds: (side, channels); ImageNet's are resized to the model's side
IMAGE_SHAPES: dict[str, tuple[int | None, int]] = {"digits": (8, 1), "cifar10": (32, 3), "cifar100": (32, 3),
                                                   "imagenet": (None, 3)}  # fmt: skip


def check_model_input(dataset: str, img_size: int | None, in_channels: int | None = None) -> None:
    """A model of ``img_size`` x ``img_size`` images of ``in_channels`` channels can read ``dataset``, checked before
    any image is read: a ConfigError naming both otherwise (a SpikingJelly checkpoint built with img_size=16 and
    converted on digits ended in numpy's "could not broadcast" traceback)."""
    side, channels = IMAGE_SHAPES.get(dataset, (None, None))
    if side is not None and img_size is not None and img_size != side:
        raise ConfigError(
            f"dataset {dataset} holds {side}x{side} images, the model takes img_size {img_size}: build the model with "
            f"img_size={side}, or give the data set it was made for"
        )
    if channels is not None and in_channels is not None and in_channels != channels:
        raise ConfigError(
            f"dataset {dataset} holds images of {channels} channel(s), the model takes in_channels {in_channels}"
        )


def split_tensors(
    dataset: str, data_dir: str | None, split: str, limit: int | None = None, img_size: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(images [S, C, H, W] normalized, labels [S]) without augmentation; the first ``limit`` samples.
    Used by convert / run / demo / QAT (calibration and evaluation tensors)."""
    from spikeport.train.augment import augment_config

    check_model_input(dataset, img_size)
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


def artifact_test_images(
    meta: dict[str, Any], dataset: str, data_dir: str | None, samples: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``samples`` test images of ``dataset`` at the image size of the artifact whose metadata is
    ``meta`` (its ``data_dir`` unless one is given), channels-last as the integer executors take them, and their
    labels."""
    size = (meta.get("model_config") or {}).get("img_size")
    x, y = split_tensors(dataset, data_dir or meta.get("data_dir"), "test", samples, size)
    return to_channels_last(x.numpy()), y.numpy()


def dataset_of(ckpt: dict, override: str | None = None) -> str:
    """The dataset a checkpoint was trained on (its train config), unless the user names one."""
    if override:
        return override
    name = (ckpt.get("train_config") or {}).get("dataset")
    if name:
        return name
    size = (ckpt.get("model_config") or {}).get("img_size")
    return "digits" if size is None else {8: "digits", 32: "cifar10", 224: "imagenet"}.get(size, "digits")
