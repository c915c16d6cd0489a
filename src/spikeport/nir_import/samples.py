"""The samples a NIR import is given, in spikeport's layout, and the samples an artifact converted from NIR runs on.

Samples are analog values, the same at every time step (direct coding), one per sample in NIR's torch layout:
``[S, *input shape]`` ((N,), (C, N) or (C, H, W)); a vector input also takes ``[S, H, W]`` images it flattens in
C order. Labels are integers ``[S]``. The conversion keeps their paths in the artifact's meta (``nir_inputs``,
``nir_labels``), so ``spikeport run`` / ``bundle`` on the artifact use them unless given others. numpy only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from spikeport.errors import DataError


def to_ir_layout(x: np.ndarray, nir_shape: tuple[int, ...], where: str) -> np.ndarray:
    """[S, *nir_shape] -> [S, *ir shape] float64: (N,) -> (1, 1, N), (C, N) -> (1, N, C), (C, H, W) -> (H, W, C)."""
    x = np.asarray(x)
    if x.ndim >= 2 and len(nir_shape) == 1 and int(np.prod(x.shape[1:])) == nir_shape[0]:
        x = x.reshape(len(x), -1)  # images into a vector input: flattened in C order, as torch's Flatten does
    if x.ndim < 1 or tuple(x.shape[1:]) != tuple(nir_shape) or len(x) == 0:
        raise DataError(
            f"{where}: samples of shape {tuple(x.shape)}, expected [S, {', '.join(map(str, nir_shape))}] (S >= 1: one "
            "analog sample per row in the NIR graph's input layout, fed at every time step)"
        )
    if not np.issubdtype(x.dtype, np.number) or not np.isfinite(x).all():
        raise DataError(f"{where}: samples must be finite numbers (found dtype {x.dtype} or NaN / inf)")
    x = x.astype(np.float64)
    if len(nir_shape) == 1:
        return x.reshape(len(x), 1, 1, -1)
    if len(nir_shape) == 2:
        return np.ascontiguousarray(x.transpose(0, 2, 1)[:, None])
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def load_array(path: str | os.PathLike[str], what: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise DataError(f"{path}: cannot read the {what} as a NumPy .npy array ({err})") from None


def load_labels(path: str | os.PathLike[str], count: int) -> np.ndarray:
    y = load_array(path, "labels")
    if y.ndim != 1 or len(y) != count or not np.issubdtype(y.dtype, np.integer):
        raise DataError(f"{path}: labels of shape {y.shape} and dtype {y.dtype}, expected {count} integers [S]")
    return y.astype(np.int64)


def artifact_samples(
    meta: dict[str, Any], samples: int | None, inputs: str | os.PathLike[str] | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """(samples [S, *ir shape], labels or None) an artifact converted from NIR runs on: ``inputs`` (a path or an
    array in NIR's layout; no labels) or the samples it was converted with (its meta's ``nir_inputs`` and
    ``nir_labels``), the first ``samples`` of them."""
    shape = tuple(int(s) for s in meta.get("nir_input_shape", ()))
    labels = None
    if inputs is None:
        stored = meta.get("nir_inputs")
        if not stored or not Path(stored).is_file():
            raise DataError(
                f"the samples this artifact was converted with ({stored}) are gone: give others with --inputs FILE.npy"
            )
        inputs = stored
        if meta.get("nir_labels") and Path(meta["nir_labels"]).is_file():
            labels = load_array(meta["nir_labels"], "labels")
    where = str(inputs) if isinstance(inputs, (str, os.PathLike)) else "inputs"
    raw = load_array(inputs, "samples") if isinstance(inputs, (str, os.PathLike)) else np.asarray(inputs)
    x = to_ir_layout(raw, shape, where)
    if labels is not None and len(labels) != len(x):
        labels = None
    end = samples if samples is not None else len(x)
    return x[:end], None if labels is None else labels[:end].astype(np.int64)
