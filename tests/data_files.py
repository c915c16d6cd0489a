"""Small dataset files in the real on-disk formats, written by the tests themselves."""

from __future__ import annotations

import pickle

import numpy as np


def write_cifar(root, dataset="cifar10", per_file=6, seed=0):
    """A miniature CIFAR folder in the python-pickle layout (protocol 2, bytes keys, uint8 rows)."""
    rng = np.random.default_rng(seed)
    if dataset == "cifar10":
        folder, files, key, classes = (
            root / "cifar-10-batches-py",
            [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"],
            b"labels",
            10,
        )
    else:
        folder, files, key, classes = root / "cifar-100-python", ["train", "test"], b"fine_labels", 100
    folder.mkdir(parents=True)
    for name in files:
        batch = {
            b"batch_label": name.encode(),
            key: rng.integers(0, classes, per_file).tolist(),
            b"data": rng.integers(0, 256, (per_file, 3072), dtype=np.uint8),
            b"filenames": [f"img{i}.png".encode() for i in range(per_file)],
        }
        if dataset == "cifar100":
            batch[b"coarse_labels"] = rng.integers(0, 20, per_file).tolist()
        with open(folder / name, "wb") as fh:
            pickle.dump(batch, fh, protocol=2)
    return folder


def write_image_folder(root, classes=("cat", "dog"), per_class=3, size=(40, 30)):
    from PIL import Image

    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        for c in classes:
            (root / split / c).mkdir(parents=True)
            for i in range(per_class):
                img = Image.fromarray(rng.integers(0, 256, (*size[::-1], 3), dtype=np.uint8))
                img.save(root / split / c / f"{i}.{'JPEG' if i % 2 else 'png'}")
    return root
