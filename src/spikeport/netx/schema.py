"""The netx file schema: every field lava-dl's netx (0.6) reads from a network file, with the type, shape and
bounds spikeport requires before its importer (``netx/read.py``) reads anything, and the two readers of a checked
field (:func:`read_value`, :func:`read_int`).

netx files carry no digest and no version (docs/netx.md), so this is what stands between a damaged or hostile
file and the importer: without it a NaN bias was read as 0, a NaN delay as 0, a transposed weight matrix reshaped
into another network, a layer without ``weight`` or a string ``tSample`` ended in a traceback, and a few-KB file
declaring a 450 GiB weight was read. :func:`check_file` refuses, in one ``ArtifactError`` naming the file and the
field:

- structure: ``/layer`` a group whose members are exactly ``0 .. n-1`` (no gap), each a group with a ``type`` and a
  ``shape``; ``neuron`` a group with a ``type``; ``/simulation`` a group;
- every field below of the wrong kind (a string where netx reads a number, a float where it reads an integer), of
  the wrong size (a scalar with several values, a weight of another rank), with a non-finite value, or with an
  integer beyond 2**31 (netx's ``astype(int)`` of NaN or 1e30 is an arbitrary integer);
- sizes from each dataset's header, before it is read: at most ``limits.MAX_PARAM_ELEMENTS`` per dataset and
  ``limits.MAX_TOTAL_ELEMENTS`` in the file; a layer ``shape`` within ``limits.MAX_RANK`` / ``MAX_NODE_ELEMENTS``;
- the weight shapes the layer declares: a dense weight has ``prod(shape)`` rows (a 1-d weight is netx's row-major
  ``(out, in)``), a conv weight ``shape[0]`` output channels. The importer then checks the number of inputs, where
  the input is known: a transposed matrix is refused, never reshaped.

Fields netx does not read (``theta``, ``scaleRho``, ``wgtExp``...) are typed too when present; members netx does
not know are left alone, as netx leaves them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from spikeport.errors import ArtifactError
from spikeport.ir import limits

INT_BOUND = 2**31  # |integer| netx's fields may hold: Lava's Vars are int32
MAX_STRING = 64  # characters of a type or activation name


@dataclass(frozen=True)
class Field:
    """One field netx reads: ``kind`` 'string', 'int' (integer values; netx truncates floats with astype(int), so a
    float field must hold whole numbers) or 'real' (finite numbers); ``sizes``: the element counts allowed (None:
    any array); ``low``: the smallest value."""

    kind: str
    sizes: tuple[int, ...] | None = (1,)
    low: float | None = None


SCALAR_INT, SCALAR_REAL, STRING = Field("int"), Field("real"), Field("string")
ARRAY_INT = Field("int", None)
LAYER_FIELDS: dict[str, Field] = {
    "type": STRING,
    "shape": Field("int", (1, 2, 3), 1),
    "weight": ARRAY_INT,
    "weight/real": ARRAY_INT,
    "weight/imag": ARRAY_INT,
    "weight_rec": ARRAY_INT,
    "bias": ARRAY_INT,
    "delay": Field("int", None, 0),
    "stride": Field("int", (1, 2), 1),
    "padding": Field("int", (1, 2), 0),
    "dilation": Field("int", (1, 2), 1),
    "kernelSize": Field("int", (1, 2), 1),
    "groups": Field("int", (1,), 1),
    "inFeatures": Field("int", (1,), 1),
    "outFeatures": Field("int", (1,), 1),
    "inChannels": Field("int", (1,), 1),
    "outChannels": Field("int", (1,), 1),
}
NEURON_FIELDS: dict[str, Field] = {
    "type": STRING,
    "activation": STRING,
    "iDecay": Field("int", (1,), 0),
    "vDecay": Field("int", (1,), 0),
    "vThMant": Field("real", (1,), 0),  # an RF neuron's is a real (netx scales it by 2**6); others' a whole number
    "refDelay": Field("int", (1,), 0),
    "messageBits": Field("int", (1,), 0),
    "gradedSpike": SCALAR_INT,
    "sigma_output": SCALAR_INT,
    "theta": SCALAR_REAL,
    "wgtExp": SCALAR_INT,
    "scaleRho": SCALAR_REAL,
    "tauRho": SCALAR_REAL,
    "sinDecay": SCALAR_REAL,
    "cosDecay": SCALAR_REAL,
}
# the fields netx's get_neuron_params reads, per neuron type
NEURON_NEEDS: dict[str, tuple[str, ...]] = {
    "CUBA": ("iDecay", "vDecay", "vThMant"),
    "LOIHI": ("iDecay", "vDecay", "vThMant"),
    "SDNN": ("vThMant",),
    "RF": ("sinDecay", "cosDecay", "vThMant"),
    "RF_IZ": ("sinDecay", "cosDecay", "vThMant"),
    "RF_PHASE": ("sinDecay", "cosDecay", "vThMant"),
}
SIMULATION_FIELDS: dict[str, Field] = {"Ts": Field("real", (1,), 0), "tSample": Field("int", (1,), 1)}
SMALL = 4096  # elements of a dataset whose values are checked even when only the headers are asked for


def check_file(f: h5py.File, path: Path, values: bool = True) -> None:
    """Validate an open netx file (see the module doc); ``values=False`` checks the structure, every header and the
    values of the small fields only (the weights' values are read by the importer, which asks for them)."""
    budget = [limits.MAX_TOTAL_ELEMENTS]
    layers = _layer_groups(f, path)
    for i, g in enumerate(layers):
        where = f"layer/{i}"
        _fields(g, path, where, LAYER_FIELDS, budget, values)
        for key in ("type", "shape"):
            if key not in g:
                raise ArtifactError(path, f"{where}/{key}", "is missing (every netx layer has a type and a shape)")
        shape = [int(s) for s in np.ravel(g["shape"][()])]
        if math.prod(shape) > limits.MAX_NODE_ELEMENTS:
            raise ArtifactError(
                path,
                f"{where}/shape",
                f"is {shape} ({math.prod(shape)} neurons), the limit is {limits.MAX_NODE_ELEMENTS}",
            )
        if "neuron" in g:
            neuron = g["neuron"]
            if not isinstance(neuron, h5py.Group):
                raise ArtifactError(path, f"{where}/neuron", "is not a group (netx reads the neuron's fields from it)")
            _fields(neuron, path, f"{where}/neuron", NEURON_FIELDS, budget, values)
            if "type" not in neuron:
                raise ArtifactError(path, f"{where}/neuron/type", "is missing (CUBA, LOIHI, SDNN, RF...)")
            ntype = _string(neuron["type"])
            for key in NEURON_NEEDS.get(ntype, ()):
                if key not in neuron:
                    raise ArtifactError(
                        path, f"{where}/neuron/{key}", f"is missing (netx builds a {ntype} neuron from it)"
                    )
            if "vThMant" in neuron and not ntype.startswith("RF"):
                _check_values(np.asarray(neuron["vThMant"][()]), path, f"{where}/neuron/vThMant", Field("int"))
        _check_weights(g, path, where, shape)
    if "simulation" in f:
        sim = f["simulation"]
        if not isinstance(sim, h5py.Group):
            raise ArtifactError(path, "simulation", "is not a group (netx files keep Ts and tSample in it)")
        _fields(sim, path, "simulation", SIMULATION_FIELDS, budget, values)


def _layer_groups(f: h5py.File, path: Path) -> list[h5py.Group]:
    if "layer" not in f:
        raise ArtifactError(path, "/layer", "is missing (not a netx file)")
    layer = f["layer"]
    if not isinstance(layer, h5py.Group):
        raise ArtifactError(path, "/layer", "is a dataset, expected the group of layers 0 .. n-1")
    n = len(layer)
    if not 1 <= n <= limits.MAX_NODES:
        raise ArtifactError(path, "/layer", f"has {n} layers, expected 1..{limits.MAX_NODES}")
    names = set(layer.keys())
    expected = {str(i) for i in range(n)}
    if names != expected:
        odd = sorted(names - expected, key=lambda s: (len(s), s))[0]
        missing = sorted(expected - names, key=int)[0]
        raise ArtifactError(
            path, f"layer/{odd}", f"layers are numbered 0..{n - 1} without a gap; layer/{missing} is missing"
        )
    groups = []
    for i in range(n):
        g = layer[str(i)]
        if not isinstance(g, h5py.Group):
            raise ArtifactError(path, f"layer/{i}", "is a dataset, expected a layer group (type, shape, ...)")
        groups.append(g)
    return groups


def _fields(g: h5py.Group, path: Path, where: str, spec: dict[str, Field], budget: list[int], values: bool) -> None:
    for key, field in spec.items():
        if key not in g:
            continue
        ds = g[key]
        at = f"{where}/{key}"
        if not isinstance(ds, h5py.Dataset):
            if key == "weight" and {"real", "imag"} >= set(ds.keys()):
                continue  # a complex dense layer: weight/real and weight/imag are its fields
            raise ArtifactError(path, at, "is a group, expected a dataset")
        _check_dataset(ds, path, at, field, budget, values or ds.size <= SMALL)


def _check_dataset(ds: h5py.Dataset, path: Path, at: str, field: Field, budget: list[int], values: bool) -> None:
    size = ds.size or 0  # a dataset without a dataspace (h5py.Empty) has None
    if ds.shape is None or size == 0:
        raise ArtifactError(path, at, "is empty, expected a value")
    if size > limits.MAX_PARAM_ELEMENTS:  # from the header: an unwritten dataset is a few bytes on disk
        raise ArtifactError(path, at, f"has {size} elements {ds.shape}, the limit is {limits.MAX_PARAM_ELEMENTS}")
    budget[0] -= size
    if budget[0] < 0:
        raise ArtifactError(path, at, f"brings the file above {limits.MAX_TOTAL_ELEMENTS} elements in all")
    if field.sizes is not None and size not in field.sizes:
        raise ArtifactError(path, at, f"has {size} values {ds.shape}, expected {' or '.join(map(str, field.sizes))}")
    kind = ds.dtype.kind
    if field.kind == "string":
        if kind not in "SOU":
            raise ArtifactError(path, at, f"is {ds.dtype} data, expected a string")
        _check_string(ds, path, at)
        return
    if kind not in "biuf":
        raise ArtifactError(path, at, f"is {ds.dtype} data, expected numbers")
    if not values:
        return
    try:
        data = np.asarray(ds[()])
    except (OSError, RuntimeError, ValueError, TypeError) as err:
        raise ArtifactError(path, at, f"cannot be read (damaged?): {type(err).__name__}") from None
    _check_values(data, path, at, field)


def _check_values(data: np.ndarray, path: Path, at: str, field: Field) -> None:
    if data.dtype.kind == "f":
        finite = np.isfinite(data)
        if not finite.all():
            bad = data[~finite].ravel()[0]
            raise ArtifactError(
                path, at, f"holds {int((~finite).sum())} non-finite value(s) ({bad}): expected finite numbers"
            )
        if field.kind == "int" and (data != np.trunc(data)).any():
            bad = data[data != np.trunc(data)].ravel()[0]
            raise ArtifactError(
                path, at, f"holds {bad}, expected whole numbers (netx truncates them to integers: 0.5 would be read 0)"
            )
    if data.dtype.kind != "b":
        low, high = data.min(), data.max()
        if field.kind == "int" and (low < -INT_BOUND or high >= INT_BOUND):
            raise ArtifactError(path, at, f"holds values in [{low}, {high}], expected integers within 32 bits")
        if field.low is not None and low < field.low:
            raise ArtifactError(path, at, f"holds {low}, expected values >= {field.low:g}")


def _check_string(ds: h5py.Dataset, path: Path, at: str) -> None:
    try:
        value = ds[()]
    except (OSError, RuntimeError, ValueError, TypeError) as err:
        raise ArtifactError(path, at, f"cannot be read (damaged?): {type(err).__name__}") from None
    if isinstance(value, np.ndarray):
        value = value.ravel()[0]
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            raise ArtifactError(path, at, "is not ASCII text") from None
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_STRING:
        raise ArtifactError(path, at, f"expected a name of 1..{MAX_STRING} ASCII characters")


def _check_weights(g: h5py.Group, path: Path, where: str, shape: list[int]) -> None:
    """A dense or conv layer's weights: present, and of the shape the layer declares."""
    kind = _string(g["type"])
    if kind == "input":  # netx's Input block reads int(weight) and int(bias): one value each
        for key in ("weight", "bias"):
            if key in g and g[key].size != 1:
                raise ArtifactError(path, f"{where}/{key}", f"has {g[key].size} values, an input layer's is one")
    if kind not in ("dense", "conv"):
        return
    keys = ["weight/real", "weight/imag"] if kind == "dense" and "weight/imag" in g else ["weight"]
    for key in keys:
        if key not in g or not isinstance(g[key], h5py.Dataset):
            raise ArtifactError(path, f"{where}/{key}", f"is missing (a netx {kind} layer holds its weights there)")
        w = g[key]
        if kind == "dense":
            out = math.prod(shape)
            if w.ndim == 2 and w.shape[0] != out:
                raise ArtifactError(
                    path,
                    f"{where}/{key}",
                    f"has shape {w.shape}, expected ({out}, inputs): {out} rows for the layer's shape {shape} "
                    "(a transposed matrix is not reshaped)",
                )
            if w.ndim == 1 and w.shape[0] % out:
                raise ArtifactError(
                    path, f"{where}/{key}", f"has {w.shape[0]} values, not a multiple of the layer's {out} outputs"
                )
            if w.ndim not in (1, 2):
                raise ArtifactError(path, f"{where}/{key}", f"has shape {w.shape}, expected (outputs, inputs)")
        else:
            if not (w.ndim == 4 or w.ndim == 5 and w.shape[4] == 1):
                raise ArtifactError(
                    path, f"{where}/{key}", f"has shape {w.shape}, expected (out, in / groups, kH, kW[, 1])"
                )
            if len(shape) == 3 and w.shape[0] != shape[0]:
                raise ArtifactError(
                    path,
                    f"{where}/{key}",
                    f"has {w.shape[0]} output channels, the layer's shape {shape} (C, H, W) has {shape[0]}",
                )


def _string(ds: h5py.Dataset) -> str:
    value = ds[()]
    if isinstance(value, np.ndarray):
        value = value.ravel()[0]
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def read_value(g: h5py.Group, key: str) -> Any:
    """A checked field's value: a string decoded, a one-string array as its string, anything else as stored."""
    value = g[key][()]
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        value = value.ravel()[0]
    return value.decode("ascii") if isinstance(value, bytes) else value


def read_int(g: h5py.Group, key: str) -> int:
    """A checked scalar field as an int (netx stores scalars as 0-d or one-element arrays)."""
    return int(np.ravel(g[key][()])[0])
