"""Inputs of netx networks: the axis layouts users hand in and the .npy files that hold them.

spikeport's own layout is channels-last with the sample axis first: spikes ``[S, T, *input_shape]`` ((H, W, C)
or (N,)), bias-driving images ``[S, H, W, C]`` (or flat ``[S, N]``), graded integers for an SDNN input layer
``[S, T, *input_shape]``. ``--input-layout`` reads slayer's and lava-dl netx's own axis orders instead
(:func:`to_spikeport_layout`). Every loader names the file and what it expected on anything else.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from spikeport.errors import ConfigError, DataError
from spikeport.ir import limits
from spikeport.netx.drive import InputDrive

INPUT_LAYOUTS = ("spikeport", "slayer", "netx")
GRADED_INPUT_MAX = 2**11 - 1  # x << 12 within Loihi's signed 24 bits
BIAS_RANGE = (-4096, 4095)  # the input neuron's bias_mant


def from_slayer_layout(x: np.ndarray) -> np.ndarray:
    """slayer's [S, C, H, W, T] or [S, N, T] -> spikeport's [S, T, H, W, C] / [S, T, N]."""
    x = np.asarray(x)
    _rank(x, (3, 5), "slayer", "[S, C, H, W, T] or [S, N, T]")
    return np.moveaxis(x, -1, 1) if x.ndim == 3 else np.ascontiguousarray(x.transpose(0, 4, 2, 3, 1))


def from_netx_layout(x: np.ndarray) -> np.ndarray:
    """lava-dl netx's RingBuffer data (x, y, f, t) = (W, H, C, T) or (N, T), one sample or a batch
    [S, W, H, C, T] / [S, N, T] -> spikeport's [S, T, H, W, C] / [S, T, N]."""
    x = np.asarray(x)
    _rank(x, (2, 3, 4, 5), "netx", "[S,] W, H, C, T or [S,] N, T")
    if x.ndim in (2, 4):  # one sample, as lava-dl's gts files hold it
        x = x[None]
    return np.moveaxis(x, -1, 1) if x.ndim == 3 else np.ascontiguousarray(x.transpose(0, 4, 2, 1, 3))


def to_spikeport_layout(
    x: np.ndarray, input_drive: InputDrive | str = InputDrive.SPIKES, layout: str = "spikeport"
) -> np.ndarray:
    """Inputs for ``input_drive`` (an :class:`InputDrive` or its name) in ``layout`` -> spikeport's channels-last
    batch: spikes and graded integers [S, T, *input_shape], bias images [S, H, W, C]. Layouts: ``spikeport``
    (that), ``slayer`` (spikes [S, C, H, W, T] / [S, N, T], images [S, C, H, W]), ``netx`` (lava-dl's (x, y, f)
    order: spikes [S,] W, H, C, T or [S,] N, T; images [S,] W, H, C; the sample axis may be left out for one
    sample)."""
    if layout not in INPUT_LAYOUTS:
        raise ConfigError(f"unknown input layout {layout!r}; valid choices: {', '.join(INPUT_LAYOUTS)}")
    x = np.asarray(x)
    if InputDrive.of(input_drive).timed:
        if layout == "slayer":
            return from_slayer_layout(x)
        return from_netx_layout(x) if layout == "netx" else x
    if x.ndim == 3:  # one image
        x = x[None]
    if x.ndim != 4:
        return x  # the caller names the expected shape
    if layout == "slayer":
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3)) if layout == "netx" else x


def _rank(x: np.ndarray, ranks: tuple[int, ...], layout: str, expected: str) -> None:
    if x.ndim not in ranks:
        raise DataError(f"inputs of shape {tuple(x.shape)} in layout {layout!r}: expected {expected}")


def load_inputs(
    path: str | os.PathLike[str],
    input_drive: InputDrive | str = InputDrive.SPIKES,
    input_shape: tuple[int, ...] | None = None,
    samples: int | None = None,
    layout: str = "spikeport",
) -> np.ndarray:
    """An .npy of inputs for ``input_drive`` in ``layout`` (:func:`to_spikeport_layout`) -> spikes int8
    [S, T, *input_shape], graded integers int32 [S, T, *input_shape] or bias images int32 [S, H, W, C]; DataError
    naming the file on anything else."""
    load = LOADERS[InputDrive.of(input_drive)]
    return load(path, input_shape, samples, layout)


def _load_npy(path: str | os.PathLike[str], what: str) -> tuple[Path, np.ndarray]:
    """An .npy file's array, memory-mapped, after its header was checked: numbers (no pickled objects, no
    structured records), at least one axis and none of length 0, at most ``limits.MAX_INPUT_ELEMENTS`` values,
    the data all there and finite. DataError naming the file otherwise; an .npz archive is refused by name."""
    path = Path(path)
    try:
        regular = path.is_file()
        if regular:
            with open(path, "rb") as fh:
                if fh.read(4) == b"PK\x03\x04":
                    raise DataError(f"{path}: an .npz archive; give one array as an .npy file (np.save) of {what}")
                fh.seek(0)
                shape, dtype = _npy_header(fh, path)
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not regular:
        raise DataError(f"{path}: input file not found or not a regular file (an .npy of {what})")
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biuf":
        raise DataError(f"{path}: dtype {dtype}, expected numbers ({what})")
    if not shape or 0 in shape:
        raise DataError(f"{path}: an array of shape {shape}, expected {what} with no axis of length 0")
    if math.prod(shape) > limits.MAX_INPUT_ELEMENTS:
        raise DataError(
            f"{path}: an array of shape {shape} ({math.prod(shape)} values), the limit is {limits.MAX_INPUT_ELEMENTS} "
            "(split the inputs into several files)"
        )
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as err:  # data shorter than the header says
        raise DataError(f"{path}: not a readable .npy file (truncated?): {str(err)[:200]}") from None
    if x.dtype.kind == "f" and not np.isfinite(x).all():
        raise DataError(f"{path}: {int((~np.isfinite(x)).sum())} values are NaN or infinite, expected {what}")
    return path, x


def _in_layout(x: np.ndarray, drive: InputDrive, layout: str, path: Path) -> np.ndarray:
    try:
        return to_spikeport_layout(x, drive, layout)
    except DataError as err:
        raise DataError(f"{path}: {err}") from None


def _npy_header(fh: BinaryIO, path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) from an .npy header, before any data are read."""
    try:
        version = np.lib.format.read_magic(fh)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"format version {version}, expected 1.0 or 2.0")
        shape, _, dtype = read(fh)
    except ValueError as err:
        raise DataError(f"{path}: not an .npy file: {str(err)[:200]}") from None
    return tuple(int(s) for s in shape), np.dtype(dtype)


def load_spike_inputs(
    path: str | os.PathLike[str],
    input_shape: tuple[int, ...] | None = None,
    samples: int | None = None,
    layout: str = "spikeport",
) -> np.ndarray:
    """An .npy of binary spikes -> int8 [S, T, *input_shape]; DataError naming the file on anything else."""
    path, x = _load_npy(path, "spikes [S, T, *input_shape]")
    x = _in_layout(x, InputDrive.SPIKES, layout, path)
    if x.ndim < 3 or (input_shape is not None and tuple(x.shape[2:]) != tuple(input_shape)):
        raise DataError(
            f"{path}: spikes of shape {tuple(x.shape)} (after layout {layout!r}), expected "
            f"[S, T, {', '.join(map(str, input_shape or ('...',)))}]"
        )
    x = np.asarray(x[:samples] if samples else x)
    if x.size and not np.isin(x, (0, 1)).all():
        raise DataError(
            f"{path}: values other than 0 and 1 (binary spikes expected; for images that drive the input "
            f"neuron's bias, as lava-dl's PilotNet and TinyNet tests do, use input_drive='bias' / "
            f"--input-drive bias --steps T)"
        )
    return x.astype(np.int8)


def load_graded_inputs(
    path: str | os.PathLike[str],
    input_shape: tuple[int, ...] | None = None,
    samples: int | None = None,
    layout: str = "spikeport",
) -> np.ndarray:
    """An .npy of integers for a Delta encoder's a_in (a netx SDNN input layer) -> int32 [S, T, *input_shape];
    DataError naming the file on anything else. lava-dl's gts/pilotnet_sdnn/input.npy is one frame in the
    ``netx`` layout (W, H, C, 1): repeat it along T for a constant input."""
    path, x = _load_npy(path, "integers [S, T, *input_shape] for the Delta encoder")
    x = _in_layout(x, InputDrive.GRADED, layout, path)
    if x.ndim < 3 or (input_shape is not None and tuple(x.shape[2:]) != tuple(input_shape)):
        raise DataError(
            f"{path}: integers of shape {tuple(x.shape)} (after layout {layout!r}), expected "
            f"[S, T, {', '.join(map(str, input_shape or ('...',)))}]"
        )
    x = np.asarray(x[:samples] if samples else x)
    check_graded_inputs(x, str(path))
    return x.astype(np.int32)


def check_graded_inputs(x: np.ndarray, where: str) -> None:
    """Delta encoder inputs: integers whose x << (spike_exp + state_exp) = x << 12 fits Lava's 24-bit a_in."""
    if (x != np.rint(x)).any() or x.min(initial=0) < -GRADED_INPUT_MAX - 1 or x.max(initial=0) > GRADED_INPUT_MAX:
        raise DataError(
            f"{where}: graded inputs must be integers in {-GRADED_INPUT_MAX - 1}..{GRADED_INPUT_MAX} (the Delta "
            f"encoder shifts them left by spike_exp + state_exp = 12 into its 24-bit state), found "
            f"{x.min(initial=0)}..{x.max(initial=0)}"
        )


def load_bias_inputs(
    path: str | os.PathLike[str],
    input_shape: tuple[int, ...] | None = None,
    samples: int | None = None,
    layout: str = "spikeport",
) -> np.ndarray:
    """An .npy of integer images (the input neuron's bias_mant), one [H, W, C] or a batch [S, H, W, C] in
    ``layout`` -> int32 [S, H, W, C]; flat images (a 1-D input layer such as mnist.net's) one [N] or a batch [S, N];
    DataError naming the file on anything else."""
    path, x = _load_npy(path, "integer images [S, H, W, C] (or flat [S, N]) for the input neuron's bias")
    raw = tuple(x.shape)
    flat = x.ndim in (1, 2) and (input_shape is None or len(input_shape) == 1)
    x = np.atleast_2d(x) if flat else _in_layout(x, InputDrive.BIAS, layout, path)
    if x.ndim != (2 if flat else 4) or (input_shape is not None and tuple(x.shape[1:]) != tuple(input_shape)):
        hint = " (this looks like spikes with a time axis: use input_drive='spikes')" if len(raw) == 5 else ""
        raise DataError(
            f"{path}: bias inputs of shape {raw} in layout {layout!r}, expected one image or a batch of "
            f"images [S, {', '.join(map(str, input_shape or ('H', 'W', 'C')))}] in spikeport's channels-last "
            f"order{hint}"
        )
    x = np.asarray(x[:samples] if samples else x)
    check_bias_inputs(x, str(path))
    return x.astype(np.int32)


def check_bias_inputs(x: np.ndarray, where: str) -> None:
    """Images that set the input neuron's bias: integers within its bias_mant."""
    lo, hi = BIAS_RANGE
    if (x != np.rint(x)).any() or x.min(initial=0) < lo or x.max(initial=0) > hi:
        raise DataError(f"{where}: bias inputs must be integers in {lo}..{hi} (the input neuron's bias_mant)")


# (path, input_shape, samples, layout) -> the inputs in spikeport's layout, per input drive
Loader = Callable[[str | os.PathLike[str], tuple[int, ...] | None, int | None, str], np.ndarray]
LOADERS: dict[InputDrive, Loader] = {
    InputDrive.SPIKES: load_spike_inputs,
    InputDrive.BIAS: load_bias_inputs,
    InputDrive.GRADED: load_graded_inputs,
}
