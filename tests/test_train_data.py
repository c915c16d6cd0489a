"""Loaders on small files written here in the real formats, and every bad-input case of the data side."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from data_files import write_cifar, write_image_folder
from spikeport.errors import DataError
from spikeport.train.augment import AugmentConfig, augment_config
from spikeport.train.data import build_loaders, load_digits_split


def test_digits_split_is_fixed_and_stratified():
    x_tr, y_tr = load_digits_split("train", normalize=False)
    x_te, y_te = load_digits_split("test", normalize=False)
    assert x_tr.shape == (1437, 1, 8, 8) and x_te.shape == (360, 1, 8, 8)
    assert 0 <= float(x_te.min()) and float(x_te.max()) <= 1
    counts = torch.bincount(y_te, minlength=10)
    assert int(counts.min()) >= 35 and int(counts.max()) <= 37  # stratified: ~36 per class
    assert torch.equal(load_digits_split("test", normalize=False)[0], x_te)
    xn, _ = load_digits_split("train")
    assert abs(float(xn.mean())) < 1e-4 and abs(float(xn.std()) - 1) < 1e-2


def test_digits_loader():
    train, test, info = build_loaders("digits", None, augment_config("light"), batch_size=50)
    x, y = next(iter(train))
    assert x.shape == (50, 1, 8, 8) and y.dtype == torch.int64
    assert (info.num_classes, info.in_channels, info.train_size, info.test_size) == (10, 1, 1437, 360)
    assert sum(len(b[1]) for b in test) == 360


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100"])
def test_cifar_loader(tmp_path, dataset):
    folder = write_cifar(tmp_path, dataset)
    for data_dir in (tmp_path, folder):  # the parent folder or the batches folder itself
        train, test, info = build_loaders(dataset, data_dir, augment_config("cifar"), batch_size=8)
        assert info.train_size == (30 if dataset == "cifar10" else 6) and info.test_size == 6
        x, y = next(iter(train))
        assert x.shape == (8 if dataset == "cifar10" else 6, 3, 32, 32) and x.dtype == torch.float32
    # the evaluation images are the pickled pixels, normalized: undo and compare
    with open(folder / ("test_batch" if dataset == "cifar10" else "test"), "rb") as fh:
        raw = pickle.load(fh, encoding="bytes")
    x, y = next(iter(test))
    mean, std = torch.tensor(info.mean)[:, None, None], torch.tensor(info.std)[:, None, None]
    pixels = torch.from_numpy(raw[b"data"][0].reshape(3, 32, 32).astype(np.float32) / 255)
    torch.testing.assert_close(x[0] * std + mean, pixels, rtol=0, atol=1e-5)
    assert y.tolist() == list(raw[b"labels" if dataset == "cifar10" else b"fine_labels"])


def test_image_folder_loader(tmp_path):
    write_image_folder(tmp_path)
    train, test, info = build_loaders("imagenet", tmp_path, augment_config("imagenet"), batch_size=4, img_size=32)
    x, y = next(iter(train))
    assert x.shape == (4, 3, 32, 32) and info.num_classes == 2 and info.train_size == 6
    xs = torch.cat([b[0] for b in test])
    assert xs.shape == (6, 3, 32, 32)


def test_missing_and_corrupt_cifar_files(tmp_path):
    folder = write_cifar(tmp_path)
    (folder / "data_batch_3").unlink()
    with pytest.raises(DataError, match=r"data_batch_3: file not found; expected a CIFAR python-pickle batch"):
        build_loaders("cifar10", tmp_path, AugmentConfig(), 8)
    (folder / "data_batch_3").write_bytes(b"\x80\x02not a pickle at all")
    with pytest.raises(DataError, match=r"data_batch_3: cannot read it"):
        build_loaders("cifar10", tmp_path, AugmentConfig(), 8)
    with open(folder / "data_batch_3", "wb") as fh:
        pickle.dump({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}, fh, protocol=2)
    with pytest.raises(DataError, match=r"shape \(2, 100\)"):
        build_loaders("cifar10", tmp_path, AugmentConfig(), 8)
    with pytest.raises(DataError, match="no such folder"):
        build_loaders("cifar10", tmp_path / "nope", AugmentConfig(), 8)
    with pytest.raises(DataError, match="--data-dir is required"):
        build_loaders("cifar100", None, AugmentConfig(), 8)


def test_cifar_pickles_cannot_run_code(tmp_path):
    folder = write_cifar(tmp_path)

    class Evil:
        def __reduce__(self):
            return (print, ("executed",))

    with open(folder / "test_batch", "wb") as fh:
        pickle.dump({b"data": Evil(), b"labels": []}, fh, protocol=2)
    with pytest.raises(DataError, match=r"refusing to load global (__builtin__|builtins)\.print"):
        build_loaders("cifar10", tmp_path, AugmentConfig(), 8)


def test_empty_and_broken_image_folders(tmp_path):
    (tmp_path / "train" / "cat").mkdir(parents=True)
    (tmp_path / "val" / "cat").mkdir(parents=True)
    (tmp_path / "train" / "cat" / "notes.txt").write_text("no images here")
    with pytest.raises(DataError, match=r"train: no images found; expected class subfolders"):
        build_loaders("imagenet", tmp_path, AugmentConfig(), 2)
    (tmp_path / "train" / "cat" / "broken.jpg").write_bytes(b"\xff\xd8 truncated")
    (tmp_path / "val" / "cat" / "broken.jpg").write_bytes(b"\xff\xd8 truncated")
    train, _, _ = build_loaders("imagenet", tmp_path, AugmentConfig(), 2, img_size=16)
    with pytest.raises(DataError, match=r"broken\.jpg: cannot decode image"):
        next(iter(train))
    with pytest.raises(DataError, match="no train subfolder"):
        build_loaders("imagenet", tmp_path / "train", AugmentConfig(), 2)
