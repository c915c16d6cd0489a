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
  they fit netx's [-256, 254]); :func:`netx_dense_weight` computes what netx really applies.
- conv weights go to Lava Conv untouched (torch layout in the file; netx flips and transposes them).
- every synapse adds one time step of latency in Lava (netx and spikeport alike).

The input of a netx network is spikes. spikeport's first layer reads 16-bit graded pixels with a
negative (flooring) weight exponent, which a netx conv cannot carry, so the export starts at the spikes
of the first layer's neuron and says so. Imported networks get an ``input`` node of kind ``spikes``.

numpy + h5py only (no lava, no torch): netx files can be read and written in a deploy-only install.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import numpy.typing as npt

from spikeport import fixedpoint as fx
from spikeport.errors import ArtifactError, ConfigError, ConversionError
from spikeport.ir import limits
from spikeport.ir.artifact import damaged_file_error
from spikeport.ir.graph import Graph, Node
from spikeport.ir.hdf5 import HDF5_ERRORS, open_hdf5
from spikeport.ir.ops import infer_shapes, validate
from spikeport.ir.registry import Registry
from spikeport.netx.drive import InputDrive
from spikeport.netx.schema import check_file
from spikeport.value_kinds import GRADED, SPIKES

NETX_BIAS_EXP = 6  # netx get_neuron_params: bias_exp=6 for CUBA neurons
NETX_SPIKE_EXP = NETX_STATE_EXP = 6  # netx Network(spike_exp=6) and SigmaDelta(state_exp=6) for SDNN neurons
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


# ------------------------------------------------------------------------------------------- weights
def netx_dense_weight(weight: npt.ArrayLike) -> np.ndarray:
    """The integer weights lava-dl netx + Lava ``Dense`` (fixed_pt) really apply to binary spikes, for a
    ``weight`` dataset of a netx dense layer: netx ``optimize_weight_bits`` (scale bits, weight exponent,
    number of weight bits) followed by Lava's ``clip_weights`` / ``truncate_weights`` with the sign mode
    Lava itself determines. Raises ValueError where no per-synapse integer weight exists."""
    return netx_dense_weights(weight)[0]


def netx_dense_weights(*parts: npt.ArrayLike) -> list[np.ndarray]:
    """:func:`netx_dense_weight` for weight matrices [out, in_k] that netx optimizes together, each applied by its
    own Lava ``Dense``: a ``dense_rec`` layer's ``weight`` and ``weight_rec`` (``create_dense`` runs
    ``optimize_weight_bits`` on ``[weight | weight_rec]``: one scale, exponent and number of bits; Lava truncates
    each synapse's matrix with its own sign mode)."""
    ws = [np.asarray(p).astype(np.int64) for p in parts]
    w = np.hstack(ws)
    if not w.any():
        return ws
    if (w.max() > 254 and w.min() < 0) or (w.min() < -256 and w.max() > 0):
        w = np.clip(w, -256, 254)  # netx prints a warning and clips
    wmax, wmin = int(w.max()), int(w.min())
    if wmax < 0:
        signed, scale = 0, -256 / wmin
    elif wmin >= 0:
        signed, scale = 0, 255 / wmax
    else:
        signed, scale = 1, min(127 / wmax, -128 / wmin)
    scale_bits = int(np.floor(np.log2(scale))) + signed
    if scale_bits < 0:
        raise ValueError(f"weights up to {max(wmax, -wmin)} exceed netx's 8-bit range")
    n = 8
    while n > 0 and np.any(w % (1 << n)):
        n -= 1
    num_weight_bits = 8 - scale_bits - (n - signed)
    out = []
    for part in np.split(w, np.cumsum([x.shape[1] for x in ws])[:-1], axis=1):
        scaled = part << scale_bits
        # Lava Dense (PyDenseModelBitAcc): its own sign mode, clip to 8 bits, drop the low bits
        mode = "excitatory" if scaled.min() >= 0 else "inhibitory" if scaled.max() <= 0 else "mixed"
        mixed = int(mode == "mixed")
        x = -scaled if mode == "inhibitory" else scaled
        x = np.clip(x, -256 * mixed, 255)
        drop = 8 - num_weight_bits + mixed
        x = (x >> drop) << drop
        x = -x if mode == "inhibitory" else x
        if np.any(x % (1 << scale_bits)):
            raise ValueError("netx's rescaled weights are not integers after Lava's truncation")
        out.append(x >> scale_bits)  # weight_exp = -scale_bits, exact per synapse
    return out


def mantissa_exponent(w: np.ndarray, where: str) -> tuple[np.ndarray, int]:
    """Integer weights -> (8-bit mantissa, exponent >= 0) with ``mant << exp == w``, or ConversionError."""
    w = np.asarray(w, np.int64)
    for e in range(17):
        if np.all(w % (1 << e) == 0) and w.min() >> e >= fx.WEIGHT_MIN and w.max() >> e <= fx.WEIGHT_MAX:
            return (w >> e).astype(np.int32), e
        if np.any(w % (1 << (e + 1))):
            break
    raise ConversionError(
        f"{where}: weights in [{w.min()}, {w.max()}] are not an 8-bit mantissa times 2**e (spikeport's weight format)"
    )


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


def _read(g: h5py.Group, key: str) -> Any:
    value = g[key][()]
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        value = value.ravel()[0]
    return value.decode("ascii") if isinstance(value, bytes) else value


def input_layer_shape(layers: Sequence[h5py.Group]) -> tuple[int, ...]:
    """The channels-last shape of a netx file's input layer (its ``shape`` is torch order (C, H, W)); a map with a
    single axis above 1 that netx flattens straight away (ntidigits' [1, 1, 64]) is the flat vector it is."""
    s = [int(x) for x in np.ravel(layers[0]["shape"][()])]
    if len(s) != 3:
        return tuple(s)
    flattened = len(layers) > 1 and _read(layers[1], "type") == "flatten" and "neuron" not in layers[0]
    return (int(np.prod(s)),) if flattened and sorted(s)[1] == 1 else (s[1], s[2], s[0])


def default_input_drive(path: str | os.PathLike[str]) -> InputDrive:
    """What a netx file's input is when nobody says: ``GRADED`` integers where its input layer is an SDNN Delta
    encoder, else ``SPIKES``. (``BIAS`` is a way of feeding an Input block that only the caller can choose.)"""
    with open_netx(path, values=False) as f:
        if "layer/0/neuron" not in f or _read(f["layer/0"], "type") != "input":
            return InputDrive.SPIKES
        return InputDrive.GRADED if _read(f["layer/0/neuron"], "type") == "SDNN" else InputDrive.SPIKES


def declared_input_shape(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """The channels-last shape of a netx file's ``input`` layer (None when its first layer is not one)."""
    with open_netx(path, values=False) as f:
        first = f["layer"]["0"] if "layer" in f and "0" in f["layer"] else None
        if first is None or _read(first, "type") != "input" or "shape" not in first:
            return None
        return input_layer_shape([f["layer"][str(i)] for i in range(min(2, len(f["layer"])))])


def starts_with_input_block(path: str | os.PathLike[str]) -> bool:
    """Whether the first layer that is not a flatten is an ``input`` layer with a neuron (netx's Input block):
    lava-dl's Network then resets its layers one step earlier."""
    with open_netx(path, values=False) as f:
        layers = (f["layer"][str(i)] for i in range(len(f["layer"])))
        first = next((g for g in layers if _read(g, "type") != "flatten"), None)
        return first is not None and _read(first, "type") == "input" and "neuron" in first


def has_sdnn_input(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with an SDNN ``input`` layer (a Delta encoder of integer inputs)."""
    return default_input_drive(path) is InputDrive.GRADED


def netx_steps(path: str | os.PathLike[str]) -> int | None:
    """The time steps per sample a netx file declares (``simulation/tSample``, written by slayer), or None."""
    with open_netx(path, values=False) as f:
        return int(np.ravel(f["simulation/tSample"][()])[0]) if "simulation/tSample" in f else None


def _scalar(g: h5py.Group, key: str) -> int:
    return int(np.ravel(g[key][()])[0])


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
        cur, flatten, depth = "input", False, 0
        for i, g in enumerate(layers):
            where = f"layer/{i}"
            kind = _read(g, "type")
            if shape is None and kind == "input":
                shape = input_layer_shape(layers)
            if kind == "input" and "neuron" not in g:
                continue
            if kind == "dense" and "neuron" not in g:
                g = _WithNetxDefaultNeuron(g)
            if shape is None:
                if kind not in DENSE_TYPES:
                    raise ArtifactError(
                        path,
                        where,
                        f"the input shape of a '{kind}' layer is unknown: give input_shape (--input-shape H,W,C)",
                    )
                weights = g["weight/real" if "weight/imag" in g else "weight"]  # (out, in) or netx's flat (out * in,)
                shape = (weights.size // int(np.prod(g["shape"][()])),)
            if drive is InputDrive.BIAS and len(shape) == 1:  # an image [N] drives a map (1, 1, N): no flatten needed
                shape = (1, 1, *shape)
            if "input" not in graph.nodes:
                if drive is InputDrive.BIAS and (kind != "input" or "neuron" not in g):
                    raise ArtifactError(
                        path, "layer/0", "input_drive='bias' needs an 'input' layer with a neuron as the first layer"
                    )
                graph.add(Node("input", "input", [], dict(INPUT_ATTRS[drive]), {}, shape))
                if (kind == "input" and _read(g["neuron"], "type") == "SDNN") != (drive is InputDrive.GRADED):
                    raise ArtifactError(
                        path,
                        where,
                        "input_drive='graded' (integers [S, T, *shape] into a Delta encoder) is the input of, and "
                        "only of, a netx SDNN 'input' layer as the first layer"
                        if drive is InputDrive.GRADED
                        else f"a netx SDNN 'input' layer is a Delta encoder that reads integers, not {drive.value}: "
                        "use input_drive='graded' (--input-drive graded) with integers [S, T, *shape]",
                    )
            try:
                if kind == "flatten":
                    flatten = True
                    continue
                _check_supported(g, kind, where)
                if kind == "input" and drive is InputDrive.GRADED:  # netx feeds the Delta's a_in: no synapse
                    delta = graph.add(_delta(g, f"layer{i}.neuron", cur))
                    validate(infer_shapes(graph))
                    cur = delta.name
                    continue
                if kind == "input" and drive is InputDrive.BIAS:
                    syn = graph.add(_bias_drive(g, f"layer{i}.{kind}", cur, graph.nodes[cur].shape))
                elif "weight/imag" in g:  # netx ComplexDense: a real and an imaginary synapse into an RF neuron
                    for part in ("imag", "real"):
                        name = f"layer{i}.{kind}.{part}"
                        syn = graph.add(_synapse(g, kind, name, cur, graph.nodes[cur].shape, flatten, f"weight/{part}"))
                else:
                    syn = graph.add(_synapse(g, kind, f"layer{i}.{kind}", cur, graph.nodes[cur].shape, flatten))
                depth += 1  # every synapse delays one step on Lava
                read_neuron = NEURONS.get(_read(g["neuron"], "type"))
                lif = graph.add(read_neuron(g, f"layer{i}.neuron", syn.name, kind, depth))
                flatten = False
                validate(infer_shapes(graph))
                expected = [int(x) for x in np.ravel(g["shape"][()])]
                if int(np.prod(lif.shape)) != int(np.prod(expected)) or (
                    len(expected) == 3 == len(lif.shape) and torch_shape(lif.shape) != expected
                ):
                    raise ValueError(
                        f"output shape {torch_shape(lif.shape)} (torch order) does not match "
                        f"the file's shape {expected}"
                    )
                cur = lif.name
            except (ConversionError, ValueError, KeyError) as err:
                raise ArtifactError(path, where, str(err)) from None
    if len(graph.nodes) < 2:
        raise ArtifactError(path, "/layer", "has no dense/conv layer")
    try:
        limits.check_graph(graph)
    except ConversionError as err:
        raise ArtifactError(path, "/layer", str(err)) from None
    return graph


def _check_supported(g: h5py.Group, kind: str, where: str) -> None:
    if kind not in ("input", "conv", *DENSE_TYPES):
        raise ValueError(
            f"netx layer type '{kind}' is not supported (spikeport imports input, dense, dense_rec, conv, "
            f"flatten; lava-dl's netx itself implements no pool/convT/unpool/average/concat): import the layers "
            f"before it with num_layers (--num-layers), as lava-dl's own tests load such files"
        )
    rf = "neuron" in g and _read(g["neuron"], "type") in RF_TYPES
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
    if kind == "dense_rec" and ("neuron" not in g or _read(g["neuron"], "type") not in ("CUBA", "LOIHI")):
        raise ValueError(
            "a 'dense_rec' layer is imported with a CUBA neuron group (netx's default, a non-spiking integrator, "
            "would never use its recurrent weights; other neuron types are not supported)"
        )
    if "neuron" not in g:  # a dense layer gets netx's default neuron (_WithNetxDefaultNeuron)
        raise ValueError(f"'{kind}' layer without a neuron group: lava-dl's netx fails on it too (KeyError 'neuron')")
    ntype = _read(g["neuron"], "type")
    if ntype not in NEURONS:
        raise ValueError(f"neuron type '{ntype}' is not supported (spikeport imports {', '.join(NEURONS)})")


def _bias_drive(g: h5py.Group, name: str, src: str, in_shape: tuple[int, ...]) -> Node:
    """The input neuron's bias as a graded input: an identity 1 x 1 conv (the analog-input op) into its LIF."""
    n = g["neuron"]
    if _read(n, "type") not in ("CUBA", "LOIHI") or _scalar(n, "iDecay") != 4096:
        raise ValueError(
            f"a bias-driven input neuron needs a CUBA neuron with iDecay 4096 (the current forgets every step), "
            f"found {_read(n, 'type')} with iDecay {_scalar(n, 'iDecay') if 'iDecay' in n else 'none'}"
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
    return {"netx_transform": tuple(_scalar(g, k) if k in g else d for k, d in (("weight", 64), ("bias", 0)))}


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
            _scalar(g, "groups") if "groups" in g else 1,
            e,
        ),
        {"weight_mant": np.ascontiguousarray(mant.transpose(0, 2, 3, 1))},
    )


def netx_dense_layer_weights(g: h5py.Group, weight: str = "weight") -> list[np.ndarray]:
    """The integers of a dense layer's ``weight`` [out, in] (and ``weight_rec`` [out, out] of a dense_rec layer,
    optimized together: :func:`netx_dense_weights`) as lava-dl's netx and Lava apply them."""
    out = int(np.prod(g["shape"][()]))
    parts = [np.asarray(g[weight][()]).reshape(out, -1)]
    if "weight_rec" in g:
        rec = np.asarray(g["weight_rec"][()])
        if rec.size != out * out:
            raise ValueError(f"'weight_rec' holds {rec.size} weights, expected {out} x {out} (one per neuron pair)")
        parts.append(rec.reshape(out, out))
    return netx_dense_weights(*parts)


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


def _delta(g: h5py.Group, name: str, src: str) -> Node:
    """An SDNN input layer as netx builds it: a Lava Delta (vth, spike_exp 6, state_exp 6) whose a_in the
    network's integers drive directly (netx's Input block keeps the file's weight / bias as a transform it never
    applies, so they are ignored here too)."""
    n = g["neuron"]
    attrs = {"vth": _scalar(n, "vThMant"), "spike_exp": NETX_SPIKE_EXP, "state_exp": NETX_STATE_EXP, "cum_error": 0}
    return Node(name, "delta", [src], attrs, {})


class _WithNetxDefaultNeuron:
    """A dense layer group without a neuron group, read as lava-dl's ``hdf5.create_dense`` reads it: with a CUBA
    neuron of ``iDecay`` 0 (Lava ``du = -1``: ``u`` sums ``a_in << 6`` without loss), ``vDecay`` 4096 (``v = u +
    bias``) and ``vThMant`` ``1 << 18 - 1`` (= ``1 << 17``: never fires), a non-spiking integrator whose result is
    its ``v`` (mnist.net's output layer)."""

    NEURON = {
        "type": np.array(b"CUBA"),
        "iDecay": np.array(0),
        "vDecay": np.array(4096),
        "vThMant": np.array(1 << 18 - 1),  # sic: netx's precedence gives 1 << 17
        "refDelay": np.array(1),
        "gradedSpike": np.array(False),
    }

    def __init__(self, group: h5py.Group) -> None:
        self.group = group

    def __contains__(self, key: str) -> bool:
        return key == "neuron" or key in self.group

    def __getitem__(self, key: str) -> Any:
        return self.NEURON if key == "neuron" else self.group[key]


# --------------------------------------------------------------------------------------- neuron types
NeuronReader = Callable[[h5py.Group, str, str, str, int], Node]  # (layer group, name, source, layer type, depth)
NEURONS: Registry[NeuronReader] = Registry("netx neuron reader")


def _layer_bias(g: h5py.Group, channels: int, use: bool) -> np.ndarray:
    bias = np.asarray(g["bias"][()]).astype(np.int64).ravel() if use and "bias" in g else None
    if bias is None:
        return np.zeros(channels, np.int64)
    if bias.size != channels:
        raise ValueError(f"bias of {bias.size} values for {channels} channels (per-neuron bias maps are not supported)")
    return bias


def _channels(g: h5py.Group) -> int:
    shape = [int(s) for s in np.ravel(g["shape"][()])]
    return shape[0] if len(shape) == 3 else int(np.prod(shape))


@NEURONS.register("CUBA", "LOIHI")
def _cuba(g: h5py.Group, name: str, src: str, kind: str, depth: int) -> Node:
    """The CUBA neuron as netx builds it: a Lava LIF (netx's Input block never applies its file's bias)."""
    n = g["neuron"]
    if "messageBits" in n and _scalar(n, "messageBits") > 0 or "gradedSpike" in n and _scalar(n, "gradedSpike"):
        raise ValueError("graded-spike CUBA neurons are not supported (binary spikes only)")
    bias = _layer_bias(g, _channels(g), use=kind != "input")
    exp = NETX_BIAS_EXP
    while np.abs(bias).max(initial=0) > fx.BIAS_MANT_MAX and exp < fx.BIAS_EXP_MAX and not np.any(bias % 2):
        bias, exp = bias // 2, exp + 1
    dv, vth = _scalar(n, "vDecay"), _scalar(n, "vThMant")
    # tau and v_threshold only document the integers (sigma = 1: v_threshold in units of vth)
    attrs = {
        "tau": 4096 / max(dv, 1),
        "v_threshold": float(max(vth, 1)),
        "du": _scalar(n, "iDecay") - 1,
        "dv": dv,
        "vth": vth,
        "bias_exp": exp,
    }
    if kind == "dense_rec":  # the group also reads its own spikes of the previous step
        mant, e = mantissa_exponent(netx_dense_layer_weights(g)[1], f"{name} (weight_rec)")
        return Node(
            name,
            "recurrent_lif",
            [src],
            {**attrs, "weight_exp": e},
            {"bias_mant": bias.astype(np.int32), "weight_mant": mant},
        )
    return Node(name, "lif", [src], attrs, {"bias_mant": bias.astype(np.int32)})


@NEURONS.register("SDNN")
def _sdnn(g: h5py.Group, name: str, src: str, kind: str, depth: int) -> Node:
    """A hidden SDNN layer as netx builds it: Lava's SigmaDelta (ReLU) with netx's spike_exp 6 and state_exp 6."""
    n = g["neuron"]
    if kind == "input":
        raise ValueError("an SDNN input layer is a Delta encoder: import it with input_drive='graded'")
    if "sigma_output" in n:  # netx builds a Sigma: it sums a_in, without bias, threshold or activation
        return Node(name, "sigma", [src], {"warmup": depth}, {})
    attrs = {
        "vth": _scalar(n, "vThMant"),
        "spike_exp": NETX_SPIKE_EXP,
        "state_exp": NETX_STATE_EXP,
        "cum_error": 0,
        "warmup": depth,
    }
    return Node(name, "sigma_delta", [src], attrs, {"bias": _layer_bias(g, _channels(g), use=True).astype(np.int32)})


RF_TYPES = ("RF", "RF_IZ", "RF_PHASE")
RF_STATE_EXP, RF_DECAY_BITS = 6, 12  # netx get_neuron_params: state_exp 6, decay_bits 12 for RF neurons


def rf_decays(sin_decay: float, cos_decay: float) -> tuple[int, int]:
    """The integer (sin_decay, cos_decay) Lava's RF ends up with for a netx file's sinDecay / cosDecay: netx
    turns them into (period, alpha) (slayer.neuron.rf.neuron_params) and Lava's RF process back into
    ``int32((1 - alpha) * sin|cos(2 pi / period) * 2**12)``; the same float steps, so the same truncation."""
    s, c = sin_decay / (1 << RF_DECAY_BITS), cos_decay / (1 << RF_DECAY_BITS)
    alpha = 1 - np.sqrt(s**2 + c**2)
    period = 1 / (np.arctan2(s, c) / 2 / np.pi)
    return (
        int(np.int32((1 - alpha) * np.sin(np.pi * 2 * 1 / period) * (1 << RF_DECAY_BITS))),
        int(np.int32((1 - alpha) * np.cos(np.pi * 2 * 1 / period) * (1 << RF_DECAY_BITS))),
    )


@NEURONS.register(*RF_TYPES)
def _rf(g: h5py.Group, name: str, src: str, kind: str, depth: int) -> Node:
    """An RF neuron as netx builds it: Lava RF for RF_PHASE, RF_IZ otherwise (netx: 'PHASE' in the type),
    fed by the layer's real and imaginary synapses; netx's ComplexDense applies no bias."""
    n = g["neuron"]
    if "gradedSpike" in n and _scalar(n, "gradedSpike"):
        raise ValueError("graded-spike RF neurons are not supported (binary spikes only)")
    sin_decay, cos_decay = rf_decays(float(np.ravel(n["sinDecay"][()])[0]), float(np.ravel(n["cosDecay"][()])[0]))
    attrs = {
        "sin_decay": sin_decay,
        "cos_decay": cos_decay,
        "decay_bits": RF_DECAY_BITS,
        "state_exp": RF_STATE_EXP,
        "vth": int(float(np.ravel(n["vThMant"][()])[0]) * (1 << RF_STATE_EXP)),  # Lava RF: int(vth << state_exp)
        "iz": int("PHASE" not in _read(n, "type")),
    }
    real = src.removesuffix(".real")
    return Node(name, "rf", [f"{real}.real", f"{real}.imag"], attrs, {})
