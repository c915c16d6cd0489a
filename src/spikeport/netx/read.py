"""lava-dl netx interop: the netx format as lava-dl 0.6 reads it, and the import of netx files.

The export of a converted network is in ``netx/write.py``; running netx files in ``runtime/netx_run.py``.

netx (``lava.lib.dl.netx.hdf5.Network``) describes a *sequential* network: groups ``layer/<i>``, each a
synapse (``dense`` or ``conv``) with a CUBA neuron, layer i feeding layer i + 1. What it cannot express
(residual adds, pooling -- netx's ``pool`` raises NotImplementedError --, attention, a host readout) ends
the export. The conversions below mirror lava-dl 0.6's loader (netx/hdf5.py, netx/utils.py) exactly:

- CUBA neuron -> Lava LIF with ``du = iDecay - 1``, ``dv = vDecay``, ``vth = vThMant``, ``bias_mant = bias``
  and a hard-coded ``bias_exp = 6``: a spikeport bias ``bias_mant << bias_exp`` survives only when it is a
  multiple of 64; the export rounds it and reports the error per layer.
- dense weights pass ``optimize_weight_bits`` and Lava Dense's clip/truncate; netx files carry no
  exponent, so the exported integers are ``weight_mant << weight_exp`` (exact for exponents >= 0 while
  they fit netx's [-256, 254]); ``netx/weights.py`` computes what netx really applies.
- conv weights go to Lava Conv untouched (torch layout in the file; netx flips and transposes them).
- every synapse adds one time step of latency in Lava (netx and spikeport alike).

The input of a netx network is spikes. spikeport's first layer reads 16-bit graded pixels with a
negative (flooring) weight exponent, which a netx conv cannot carry, so the export starts at the spikes
of the first layer's neuron and says so. Imported networks get an ``input`` node of kind ``spikes``.

The neuron groups are read by ``netx/neurons.py`` (``NEURONS``: one reader per neuron type); this module opens
and sniffs the file and reads the layers around them: the input node, the synapses, the order.

numpy + h5py only (no lava, no torch): netx files can be read and written in a deploy-only install.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from spikeport.errors import ArtifactError, ConfigError, ConversionError
from spikeport.ir import limits
from spikeport.ir.artifact import damaged_file_error
from spikeport.ir.graph import Graph, Node
from spikeport.ir.hdf5 import HDF5_ERRORS, open_hdf5
from spikeport.ir.ops import infer_shapes, validate
from spikeport.netx.drive import InputDrive
from spikeport.netx.neurons import NEURONS, RF_TYPES, WithNetxDefaultNeuron, delta_encoder
from spikeport.netx.schema import check_file, read_int, read_value
from spikeport.netx.weights import mantissa_exponent, netx_dense_layer_weights
from spikeport.value_kinds import GRADED, SPIKES

# 0/1 payload (2 signed bits), no scaling
SPIKE_INPUT: dict[str, Any] = {"kind": SPIKES.name, "bits": 2, "frac_bits": 0}
# the input neuron's bias_mant (signed 13 bits) as an integer image repeated every step: spikeport's graded input
BIAS_INPUT: dict[str, Any] = {"bits": 13, "frac_bits": 0}
# an SDNN input layer's Delta encoder reads signed integers (its a_in, 24 bits in Lava) as given, every step
GRADED_INPUT: dict[str, Any] = {"kind": GRADED.name, "bits": 24, "frac_bits": 0}
# the attributes of the graph's input node, per input drive
INPUT_ATTRS: dict[InputDrive, dict[str, Any]] = {
    InputDrive.SPIKES: SPIKE_INPUT,
    InputDrive.BIAS: BIAS_INPUT,
    InputDrive.GRADED: GRADED_INPUT,
}
# ``netx_type`` attributes of imported synapses whose netx layer is not their own op: the export writes them back
NETX_INPUT_BLOCK = "input (identity into the input neuron)"
NETX_FLATTENED_DENSE = "dense (flattened input)"
# netx layer types read as a dense synapse: a dense_rec layer is a dense one whose CUBA neuron group also reads its
# own spikes through ``weight_rec`` (lava-dl's RecurrentDense block: spikeport's ``recurrent_lif``)
DENSE_TYPES = ("dense", "dense_rec")


# -------------------------------------------------------------------------------------------- import
def torch_shape(shape: Sequence[int]) -> list[int]:
    """spikeport channels-last (H, W, C) -> netx/torch (C, H, W); (N,) stays."""
    return [int(shape[-1]), *map(int, shape[:-1])] if len(shape) == 3 else [int(s) for s in shape]


def is_netx_file(path: str | os.PathLike[str]) -> bool:
    try:
        if not Path(path).is_file():  # opening a FIFO would block
            return False
    except OSError:  # not searchable: the artifact reader says so
        return False
    try:
        with open_hdf5(Path(path)) as f:  # the links walked, none followed: "layer" may not open another file
            return "layer" in f and "format" not in f.attrs
    except ArtifactError as err:
        if err.field != "<file>":  # a member that reaches outside the file: refused, whichever reader it was for
            raise
        return False  # not HDF5, or damaged: the reader it goes to says what is wrong
    except HDF5_ERRORS:
        return False


@contextlib.contextmanager
def open_netx(path: str | os.PathLike[str], values: bool = True) -> Iterator[h5py.File]:
    """A netx file opened for reading and validated (``netx.schema.check_file``; ``values=False``: all but the
    values of the weights), or an ArtifactError naming the file and the field."""
    path = Path(path)
    f = open_hdf5(path)
    try:
        try:
            check_file(f, path, values)
        except HDF5_ERRORS as err:
            raise damaged_file_error(path, err) from None
        yield f
    finally:
        f.close()


def input_layer_shape(layers: Sequence[h5py.Group]) -> tuple[int, ...]:
    """The channels-last shape of a netx file's input layer (its ``shape`` is torch order (C, H, W)); a map with a
    single axis above 1 that netx flattens straight away (ntidigits' [1, 1, 64]) is the flat vector it is."""
    s = [int(x) for x in np.ravel(layers[0]["shape"][()])]
    if len(s) != 3:
        return tuple(s)
    flattened = len(layers) > 1 and read_value(layers[1], "type") == "flatten" and "neuron" not in layers[0]
    return (int(np.prod(s)),) if flattened and sorted(s)[1] == 1 else (s[1], s[2], s[0])


@dataclass(frozen=True)
class NetxDeclared:
    """What a netx file declares about its input and timing, read in one pass over its headers (:func:`declared`)."""

    input_drive: (
        InputDrive  # GRADED for an SDNN input layer (a Delta encoder), else SPIKES (:func:`default_input_drive`)
    )
    input_shape: tuple[int, ...] | None  # its ``input`` layer's channels-last shape (None: its first layer is no input)
    input_block: bool  # its first layer but flattens is an ``input`` layer with a neuron (netx's Input block)
    steps: int | None  # the time steps per sample it declares (``simulation/tSample``, written by slayer)


def declared(path: str | os.PathLike[str]) -> NetxDeclared:
    """What the netx file at ``path`` declares (:class:`NetxDeclared`), from one opening of the file."""
    with open_netx(path, values=False) as f:
        return NetxDeclared(_input_drive(f), _input_shape(f), _input_block(f), _steps(f))


def default_input_drive(path: str | os.PathLike[str]) -> InputDrive:
    """What a netx file's input is when nobody says: ``GRADED`` integers where its input layer is an SDNN Delta
    encoder, else ``SPIKES``. (``BIAS`` is a way of feeding an Input block that only the caller can choose.)"""
    with open_netx(path, values=False) as f:
        return _input_drive(f)


def starts_with_input_block(path: str | os.PathLike[str]) -> bool:
    """Whether the first layer that is not a flatten is an ``input`` layer with a neuron (netx's Input block):
    lava-dl's Network then resets its layers one step earlier."""
    with open_netx(path, values=False) as f:
        return _input_block(f)


def has_sdnn_input(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with an SDNN ``input`` layer (a Delta encoder of integer inputs)."""
    return default_input_drive(path) is InputDrive.GRADED


def netx_steps(path: str | os.PathLike[str]) -> int | None:
    """The time steps per sample a netx file declares (``simulation/tSample``, written by slayer), or None."""
    with open_netx(path, values=False) as f:
        return _steps(f)


def _input_drive(f: h5py.File) -> InputDrive:
    if "layer/0/neuron" not in f or read_value(f["layer/0"], "type") != "input":
        return InputDrive.SPIKES
    return InputDrive.GRADED if read_value(f["layer/0/neuron"], "type") == "SDNN" else InputDrive.SPIKES


def _input_shape(f: h5py.File) -> tuple[int, ...] | None:
    first = f["layer"]["0"] if "layer" in f and "0" in f["layer"] else None
    if first is None or read_value(first, "type") != "input" or "shape" not in first:
        return None
    return input_layer_shape([f["layer"][str(i)] for i in range(min(2, len(f["layer"])))])


def _input_block(f: h5py.File) -> bool:
    layers = (f["layer"][str(i)] for i in range(len(f["layer"])))
    first = next((g for g in layers if read_value(g, "type") != "flatten"), None)
    return first is not None and read_value(first, "type") == "input" and "neuron" in first


def _steps(f: h5py.File) -> int | None:
    return int(np.ravel(f["simulation/tSample"][()])[0]) if "simulation/tSample" in f else None


def graph_from_netx(
    path: str | os.PathLike[str],
    input_shape: Sequence[int] | None = None,
    T: int = 1,
    input_drive: InputDrive | str | None = None,
    num_layers: int | None = None,
) -> Graph:
    """A quantized spikeport Graph of a netx file made of input / dense / dense_rec / conv / flatten layers.
    ``input_shape`` is channels-last ((H, W, C) or (N,)); by default it comes from the file's input layer
    (:func:`input_layer_shape`) or the first dense layer. ``num_layers`` reads only the first layers of the file, as
    lava-dl's ``Network(num_layers=)`` does (ntidigits ends with an 'average' layer netx lacks).

    ``input_drive`` (an :class:`InputDrive` or its name; None: the file's own) says what feeds the network.
    ``spikes``: 0/1 spikes [S, T, *input_shape] into the first layer's synapse (or, for a netx ``input`` layer with a
    neuron, into that neuron's ``a_in``). ``bias``: the file's ``input`` layer neuron is driven through its bias,
    as lava-dl's tests feed PilotNet and TinyNet (``net.in_layer.neuron.bias_mant.init = image``): the input is an
    integer image [S, *input_shape] (values -4096..4095), the input neuron's ``bias_mant`` for every step of the
    sample. With netx's ``iDecay`` 4096 (Lava ``du`` 4095: the current forgets every step) and ``bias_exp`` 6, a
    bias ``b`` adds ``b << 6`` to ``v`` each step, exactly what a graded input ``b`` through an identity synapse adds
    through ``u`` (Lava shifts ``a_in`` by 6), so the graph reads the image as a graded input (the pixels' input
    node) and the input neuron gets an identity 1 x 1 conv. ``graded``: integers [S, T, *input_shape] into the
    file's SDNN input layer (a Delta encoder)."""
    path = Path(path)
    drive = InputDrive.of(input_drive) if input_drive else default_input_drive(path)
    if not 1 <= T <= limits.MAX_T:
        raise ConfigError(f"T = {T}: expected 1..{limits.MAX_T} time steps per sample")
    with open_netx(path) as f:
        layers = [f["layer"][str(i)] for i in range(len(f["layer"]))][:num_layers]
        graph = Graph(
            nodes={}, T=T, meta={"source": "netx", "netx_file": str(path), "layout": "channels_last"}, quantized=True
        )
        shape = tuple(int(s) for s in input_shape) if input_shape else None
        _read_layers(graph, layers, path, drive, shape)
    if len(graph.nodes) < 2:
        raise ArtifactError(path, "/layer", "has no dense/conv layer")
    try:
        limits.check_graph(graph)
    except ConversionError as err:
        raise ArtifactError(path, "/layer", str(err)) from None
    return graph


def _read_layers(
    graph: Graph, layers: Sequence[h5py.Group], path: Path, drive: InputDrive, shape: tuple[int, ...] | None
) -> None:
    """The file's layers in order into ``graph``: the input node before the first layer that is read, then each
    layer's synapse(s) and neuron group, checked as they are added (an error names the layer)."""
    cur, flatten, depth = "input", False, 0
    for i, g in enumerate(layers):
        where = f"layer/{i}"
        kind = read_value(g, "type")
        if shape is None and kind == "input":
            shape = input_layer_shape(layers)
        if kind == "input" and "neuron" not in g:
            continue
        if kind == "dense" and "neuron" not in g:
            g = WithNetxDefaultNeuron(g)
        if "input" not in graph.nodes:
            graph.add(_input_node(g, kind, shape or _flat_input_shape(g, kind, path, where), drive, path, where))
        try:
            if kind == "flatten":
                flatten = True
                continue
            _check_supported(g, kind, where)
            if kind == "input" and drive is InputDrive.GRADED:  # netx feeds the Delta's a_in: no synapse
                graph.add(delta_encoder(g, f"layer{i}.neuron", cur))
                validate(infer_shapes(graph))
                cur = f"layer{i}.neuron"
                continue
            syn = _add_synapses(graph, g, kind, f"layer{i}.{kind}", cur, flatten, drive)
            depth += 1  # every synapse delays one step on Lava
            cur = _add_neuron(graph, g, kind, f"layer{i}.neuron", syn, depth)
            flatten = False
        except (ConversionError, ValueError, KeyError) as err:
            raise ArtifactError(path, where, str(err)) from None


def _flat_input_shape(g: h5py.Group, kind: str, path: Path, where: str) -> tuple[int, ...]:
    """The input shape of a file that declares none: the flat (N,) its first (dense) layer's weights read."""
    if kind not in DENSE_TYPES:
        raise ArtifactError(
            path, where, f"the input shape of a '{kind}' layer is unknown: give input_shape (--input-shape H,W,C)"
        )
    weights = g["weight/real" if "weight/imag" in g else "weight"]  # (out, in) or netx's flat (out * in,)
    return (weights.size // int(np.prod(g["shape"][()])),)


def _input_node(g: h5py.Group, kind: str, shape: tuple[int, ...], drive: InputDrive, path: Path, where: str) -> Node:
    """The graph's input node for ``drive``, or an ArtifactError where the first layer read cannot take it."""
    if drive is InputDrive.BIAS and len(shape) == 1:  # an image [N] drives a map (1, 1, N): no flatten needed
        shape = (1, 1, *shape)
    if drive is InputDrive.BIAS and (kind != "input" or "neuron" not in g):
        raise ArtifactError(
            path, "layer/0", "input_drive='bias' needs an 'input' layer with a neuron as the first layer"
        )
    if (kind == "input" and read_value(g["neuron"], "type") == "SDNN") != (drive is InputDrive.GRADED):
        raise ArtifactError(
            path,
            where,
            "input_drive='graded' (integers [S, T, *shape] into a Delta encoder) is the input of, and "
            "only of, a netx SDNN 'input' layer as the first layer"
            if drive is InputDrive.GRADED
            else f"a netx SDNN 'input' layer is a Delta encoder that reads integers, not {drive.value}: "
            "use input_drive='graded' (--input-drive graded) with integers [S, T, *shape]",
        )
    return Node("input", "input", [], dict(INPUT_ATTRS[drive]), {}, shape)


def _add_synapses(
    graph: Graph, g: h5py.Group, kind: str, name: str, src: str, flatten: bool, drive: InputDrive
) -> Node:
    """A layer's synapse into ``graph`` (two for netx's ComplexDense: imaginary, then real); the last one added."""
    in_shape = graph.nodes[src].shape
    if kind == "input" and drive is InputDrive.BIAS:
        return graph.add(_bias_drive(g, name, src, in_shape))
    if "weight/imag" not in g:
        return graph.add(_synapse(g, kind, name, src, in_shape, flatten))
    graph.add(_synapse(g, kind, f"{name}.imag", src, in_shape, flatten, "weight/imag"))
    return graph.add(_synapse(g, kind, f"{name}.real", src, in_shape, flatten, "weight/real"))


def _add_neuron(graph: Graph, g: h5py.Group, kind: str, name: str, syn: Node, depth: int) -> str:
    """A layer's neuron group (its type's reader in ``NEURONS``) into ``graph``, checked against the shape the file
    declares; its name."""
    read_neuron = NEURONS.get(read_value(g["neuron"], "type"))
    neuron = graph.add(read_neuron(g, name, syn.name, kind, depth))
    validate(infer_shapes(graph))
    expected = [int(x) for x in np.ravel(g["shape"][()])]
    if int(np.prod(neuron.shape)) != int(np.prod(expected)) or (
        len(expected) == 3 == len(neuron.shape) and torch_shape(neuron.shape) != expected
    ):
        raise ValueError(
            f"output shape {torch_shape(neuron.shape)} (torch order) does not match the file's shape {expected}"
        )
    return neuron.name


def _check_supported(g: h5py.Group, kind: str, where: str) -> None:
    if kind not in ("input", "conv", *DENSE_TYPES):
        raise ValueError(
            f"netx layer type '{kind}' is not supported (spikeport imports input, dense, dense_rec, conv, "
            f"flatten; lava-dl's netx itself implements no pool/convT/unpool/average/concat): import the layers "
            f"before it with num_layers (--num-layers), as lava-dl's own tests load such files"
        )
    rf = "neuron" in g and read_value(g["neuron"], "type") in RF_TYPES
    if rf != ("weight/imag" in g) or rf and kind != "dense":
        raise ValueError(
            "complex weights (weight/real, weight/imag) and RF neurons come together, in a dense layer: lava-dl's "
            "netx builds a ComplexDense block for them and connects an RF neuron nowhere else"
        )
    if "delay" in g and kind == "dense_rec":
        raise ValueError(
            "axonal delays ('delay') in a 'dense_rec' layer are not supported (lava-dl's RecurrentDense builds its "
            "delayed synapses without the weight exponent)"
        )
    if "delay" in g and kind != "dense":
        raise ValueError(f"axonal delays ('delay') in a '{kind}' layer: netx applies them to dense layers only")
    if ("weight_rec" in g) != (kind == "dense_rec"):
        raise ValueError("recurrent weights ('weight_rec') come with, and only with, a 'dense_rec' layer")
    if kind == "dense_rec" and ("neuron" not in g or read_value(g["neuron"], "type") not in ("CUBA", "LOIHI")):
        raise ValueError(
            "a 'dense_rec' layer is imported with a CUBA neuron group (netx's default, a non-spiking integrator, "
            "would never use its recurrent weights; other neuron types are not supported)"
        )
    if "neuron" not in g:  # a dense layer gets netx's default neuron (WithNetxDefaultNeuron)
        raise ValueError(f"'{kind}' layer without a neuron group: lava-dl's netx fails on it too (KeyError 'neuron')")
    ntype = read_value(g["neuron"], "type")
    if ntype not in NEURONS:
        raise ValueError(f"neuron type '{ntype}' is not supported (spikeport imports {', '.join(NEURONS)})")


def _bias_drive(g: h5py.Group, name: str, src: str, in_shape: tuple[int, ...]) -> Node:
    """The input neuron's bias as a graded input: an identity 1 x 1 conv (the analog-input op) into its LIF."""
    n = g["neuron"]
    if read_value(n, "type") not in ("CUBA", "LOIHI") or read_int(n, "iDecay") != 4096:
        raise ValueError(
            f"a bias-driven input neuron needs a CUBA neuron with iDecay 4096 (the current forgets every step), "
            f"found {read_value(n, 'type')} with iDecay {read_int(n, 'iDecay') if 'iDecay' in n else 'none'}"
        )
    if len(in_shape) != 3:
        raise ValueError(f"a bias-driven input of shape {in_shape} is not supported (an (H, W, C) map is)")
    c = in_shape[-1]
    eye = np.eye(c, dtype=np.int32)[:, None, None, :]  # (out, kH, kW, in)
    attrs = _conv_attrs(c, c, (1, 1), (1, 1), (0, 0), (1, 1), 1, 0, netx_type=NETX_INPUT_BLOCK, **_transform(g))
    return Node(name, "conv", [src], attrs, {"weight_mant": eye})


def _transform(g: h5py.Group) -> dict[str, tuple[int, ...]]:
    """An input layer's ``weight`` / ``bias`` scalars: netx's Input block only stores them (``transform``, for the
    user's own input scaling); kept so that the export writes them back."""
    if "weight" not in g and "bias" not in g:
        return {}
    return {"netx_transform": tuple(read_int(g, k) if k in g else d for k, d in (("weight", 64), ("bias", 0)))}


def _synapse(
    g: h5py.Group, kind: str, name: str, src: str, in_shape: tuple[int, ...], flatten: bool, weight: str = "weight"
) -> Node:
    if kind == "input":  # netx Input block: the input drives the neuron's a_in directly
        c = in_shape[-1]
        return Node(
            name,
            "dense",
            [src],
            {"in_features": c, "out_features": c, "weight_exp": 0, "netx_type": NETX_INPUT_BLOCK, **_transform(g)},
            {"weight_mant": np.eye(c, dtype=np.int32)},
        )
    if kind in DENSE_TYPES:
        out, inputs = int(np.prod(g["shape"][()])), int(np.prod(in_shape))
        raw = np.asarray(g[weight][()])
        if raw.shape not in ((out, inputs), (out * inputs,)):  # netx reads a 1-d weight as (out, in), row-major
            raise ValueError(
                f"'{weight}' has shape {raw.shape}, expected ({out}, {inputs}): {out} outputs of {inputs} inputs "
                f"(a transposed or resized matrix is not reshaped)"
            )
        w = netx_dense_layer_weights(g, weight)[0]
        mant, e = mantissa_exponent(w, name)
        # a (1, 1, C) map is flat in every order: the bias drive makes one of a flat input (its identity synapse
        # is a 1 x 1 conv), and a dense layer with axonal delays over it is the token-wise dense of one token
        if len(in_shape) == 1 or (tuple(in_shape[:-1]) == (1, 1) and "delay" in g):
            params = {"weight_mant": mant, **({"delay": _delays(g, mant.shape)} if "delay" in g else {})}
            return Node(
                name, "dense", [src], {"in_features": in_shape[-1], "out_features": out, "weight_exp": e}, params
            )
        if "delay" in g:
            raise ValueError("axonal delays on a dense layer over a map (H, W, C) are not supported (flat inputs are)")
        h, w_, c = in_shape
        if not flatten and (h, w_) != (1, 1):
            raise ValueError(
                f"a dense layer after a {in_shape} (H, W, C) map needs a flatten layer before it "
                f"(netx connects the map to the dense input unflattened, which Lava's port check refuses)"
            )
        # netx flattens with out.transpose([2, 1, 0]).flatten(): (x, y, f) -> (C, H, W) in C order, i.e. the
        # torch order; a full-map convolution. A (1, 1, C) map (a netx Dense block's output is flat (N,), even
        # where the file's shape is [N, 1, 1]) is flat in every order: no flatten layer is needed.
        kernel = mant.reshape(out, c, h, w_).transpose(0, 2, 3, 1)
        return Node(
            name,
            "conv",
            [src],
            _conv_attrs(c, out, (h, w_), (1, 1), (0, 0), (1, 1), 1, e, netx_type=NETX_FLATTENED_DENSE),
            {"weight_mant": np.ascontiguousarray(kernel)},
        )
    w = np.asarray(g["weight"][()])
    w = w.reshape(*w.shape[:4]).astype(np.int64)  # (out, in/groups, kH, kW); NetDict truncates to int
    mant, e = mantissa_exponent(w, name)

    def pair(key: str, default: int) -> tuple[int, ...]:
        return tuple(int(x) for x in np.broadcast_to(g[key][()] if key in g else default, (2,)))

    return Node(
        name,
        "conv",
        [src],
        _conv_attrs(
            int(in_shape[-1]),
            int(w.shape[0]),
            tuple(w.shape[2:4]),
            pair("stride", 1),
            pair("padding", 0),
            pair("dilation", 1),
            read_int(g, "groups") if "groups" in g else 1,
            e,
        ),
        {"weight_mant": np.ascontiguousarray(mant.transpose(0, 2, 3, 1))},
    )


def _delays(g: h5py.Group, shape: tuple[int, ...]) -> np.ndarray:
    """A dense layer's ``delay`` as lava-dl's ``create_dense`` reads it: clipped to 0..62; a 1-D delay of one value
    per output neuron (axonal, as slayer writes it) or per input, else a full [out, in] matrix."""
    d = np.clip(np.asarray(g["delay"][()]).astype(np.int64), 0, 62)
    if d.ndim == 0:
        return np.full(shape, int(d), np.int32)
    if d.ndim == 1 and d.size == shape[0]:
        return np.repeat(d.reshape(-1, 1), shape[1], axis=1).astype(np.int32)
    if d.ndim == 1 and d.size == shape[1]:
        return np.repeat(d.reshape(1, -1), shape[0], axis=0).astype(np.int32)
    if d.shape != shape:
        raise ValueError(f"delay of shape {d.shape} fits neither the {shape} weights nor one of their axes")
    return d.astype(np.int32)


def _conv_attrs(
    cin: int,
    cout: int,
    kernel: Sequence[int],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    e: int,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "in_channels": cin,
        "out_channels": cout,
        "kernel": tuple(kernel),
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
        "weight_exp": e,
        **extra,
    }
