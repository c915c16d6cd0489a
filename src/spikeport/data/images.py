"""The image data sets in numpy: scikit-learn digits (embedded), CIFAR-10/100 (python-pickle folders), ImageNet
(an image folder), and their evaluation preprocessing, bit for bit what training's evaluation transform gives.

Bad input (a missing or corrupt CIFAR file, an image folder without images) raises ``DataError`` naming the file
and what was expected.
"""

from __future__ import annotations

import functools
import io
import math
import os
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.errors import ConfigError, DataError, unknown_choice
from spikeport.runtime.executor import to_channels_last

if TYPE_CHECKING:
    from PIL import Image

DATASETS = ("digits", "cifar10", "cifar100", "imagenet")

# Per-channel statistics of the official recipes (cifar10.yml; timm's IMAGENET_DEFAULT_*).
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".ppm", ".tif", ".tiff")
DIGITS_SPLIT_SEED = 0  # the digits split is fixed, independent of the training seed
DIGITS_TEST_FRACTION = 0.2

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
        raise unknown_choice("dataset", dataset, DATASETS)
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
    """scikit-learn digits, stratified fixed 80/20 split: pixels in [0, 1] as float32 [N, 1, 8, 8] (copies: the
    caller may write to them)."""
    return {name: array.copy() for name, array in _digits_arrays().items()}


@functools.cache
def _digits_arrays() -> dict[str, np.ndarray]:
    """The split, read once per process: scikit-learn parses its CSV on every load (~0.25 s), and a conversion
    asks for the split several times (calibration, evaluation, statistics)."""
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


def digits_split(split: str = "test", normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(images float32 [N, 1, 8, 8], labels int64 [N]) of the fixed digits split."""
    if split not in ("train", "test"):
        raise unknown_choice("digits split", split, ("train", "test"))
    arrays = digits_arrays()
    x = arrays[f"x_{split}"]
    if normalize:
        mean, std = digits_stats()
        x = (x - np.float32(mean[0])) / np.float32(std[0])
    return x, arrays[f"y_{split}"]


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
def folder_classes(root: str | os.PathLike[str]) -> list[str]:
    """The class names of an image folder ``root/<class>/<image>``: its subfolders, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"{root}: no such folder; expected an image folder with one subfolder per class")
    return sorted(d.name for d in root.iterdir() if d.is_dir())


def folder_images(root: str | os.PathLike[str], classes: list[str] | None = None) -> list[tuple[Path, int]]:
    """(image path, label) of every image in ``root/<class>/``, label = the class's index in ``classes`` (the
    folder's own subfolders, sorted, unless given)."""
    root = Path(root)
    classes = classes or folder_classes(root)
    samples = [
        (p, label)
        for label, c in enumerate(classes)
        if (root / c).is_dir()
        for p in sorted((root / c).rglob("*"))
        if p.suffix.lower() in IMAGE_EXTENSIONS
    ]
    if not samples:
        raise DataError(
            f"{root}: no images found; expected class subfolders holding {'/'.join(IMAGE_EXTENSIONS)} files"
        )
    return samples


def read_image(path: Path) -> Image.Image:
    """The image file at ``path`` as an RGB PIL image."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except Exception as err:  # noqa: BLE001 - PIL raises many types for broken files
        raise DataError(f"{path}: cannot decode image ({type(err).__name__}: {err}); expected an image file") from None


def imagenet_split_dir(data_dir: str | os.PathLike, split: str) -> Path:
    names = ("train",) if split == "train" else ("val", "test", "validation")
    for name in names:
        if (Path(data_dir) / name).is_dir():
            return Path(data_dir) / name
    raise DataError(
        f"{Path(data_dir).expanduser()}: no {'/'.join(names)} subfolder; expected the ImageNet "
        f"image-folder layout <dir>/train/<class>/*.JPEG and <dir>/val/<class>/*.JPEG"
    )


def resize_center_crop(img: Image.Image, size: int, crop_pct: float = 1.0) -> Image.Image:
    """Evaluation: shorter side to size / crop_pct (bicubic), then the central size x size crop."""
    from PIL import Image

    w, h = img.size
    short = int(math.floor(size / crop_pct))
    if (w, h) != (size, size):
        scale = short / min(w, h)
        img = img.resize((max(short, round(w * scale)), max(short, round(h * scale))), Image.Resampling.BICUBIC)
        w, h = img.size
        left, top = (w - size) // 2, (h - size) // 2
        img = img.crop((left, top, left + size, top + size))
    return img


# ------------------------------------------------------------------------------------ evaluation images
def image_chw(img: Any) -> np.ndarray:
    """A PIL image or uint8 HWC array -> float32 [C, H, W] in [0, 1]; a float CHW array passes through."""
    arr = np.asarray(img)
    if arr.dtype == np.uint8:
        arr = arr.astype(np.float32) / 255.0
        arr = arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)
    return np.ascontiguousarray(arr, dtype=np.float32)


def normalized(x: np.ndarray, mean: Sequence[float], std: Sequence[float]) -> np.ndarray:
    """``(x - mean) / std`` per channel of float32 [..., C, H, W], in float32."""
    m = np.asarray(mean, dtype=np.float32)[:, None, None]
    s = np.asarray(std, dtype=np.float32)[:, None, None]
    return (x - m) / s


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


def split_arrays(
    dataset: str, data_dir: str | None, split: str, limit: int | None = None, img_size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(images float32 [S, C, H, W] normalized, labels int64 [S]) of one split as evaluation sees them (no
    augmentation); the first ``limit`` samples. ``data_dir``: CIFAR's python-pickle folder, ImageNet's folder of
    train/ and val/ (its classes are train/'s subfolders)."""
    check_model_input(dataset, img_size)
    if dataset not in DATASETS:
        raise unknown_choice("dataset", dataset, DATASETS)
    if dataset == "digits":
        x, y = digits_split(split)
        return (x, y) if limit is None else (x[:limit], y[:limit])
    if not data_dir:
        need = (
            f"the folder of the python-pickle batches ({CIFAR_LAYOUT[dataset][0]}/)"
            if dataset in CIFAR_LAYOUT
            else "a folder with train/<class>/ and val/<class>/"
        )
        raise DataError(f"--data-dir is required for {dataset}: {need}")
    if dataset in CIFAR_LAYOUT:
        images, labels = load_cifar(dataset, data_dir, split)
        n = len(labels) if limit is None else min(limit, len(labels))
        chw = [image_chw(img) for img in images[:n]]
        mean, std = CIFAR_MEAN, CIFAR_STD
    else:
        size = img_size or 224
        classes = folder_classes(imagenet_split_dir(data_dir, "train"))
        samples = folder_images(imagenet_split_dir(data_dir, split), classes if split != "train" else None)
        n = len(samples) if limit is None else min(limit, len(samples))
        chw = [image_chw(resize_center_crop(read_image(p), size)) for p, _ in samples[:n]]
        labels = np.asarray([label for _, label in samples[:n]], dtype=np.int64)
        mean, std = IMAGENET_MEAN, IMAGENET_STD
    if n == 0:
        raise DataError(f"{dataset} {split} split is empty")
    return normalized(np.stack(chw), mean, std), np.asarray(labels[:n], dtype=np.int64)


def artifact_test_images(
    meta: dict[str, Any], dataset: str, data_dir: str | None, samples: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``samples`` test images of ``dataset`` at the image size of the artifact whose metadata is
    ``meta`` (its ``data_dir`` unless one is given), channels-last as the integer executors take them, and their
    labels."""
    size = (meta.get("model_config") or {}).get("img_size")
    x, y = split_arrays(dataset, data_dir or meta.get("data_dir"), "test", samples, size)
    return to_channels_last(x), y


def dataset_of(ckpt: dict, override: str | None = None) -> str:
    """The dataset a checkpoint was trained on (its train config), unless the user names one."""
    if override:
        return override
    name = (ckpt.get("train_config") or {}).get("dataset")
    if name:
        return name
    size = (ckpt.get("model_config") or {}).get("img_size")
    return "digits" if size is None else {8: "digits", 32: "cifar10", 224: "imagenet"}.get(size, "digits")
