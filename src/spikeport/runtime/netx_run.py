"""Run lava-dl netx files: through spikeport's executors (same reports as artifacts) and through lava-dl's
own ``netx.hdf5.Network`` (the parity target).

Spike inputs are ``[S, T, *input_shape]`` with ``input_shape`` channels-last ((H, W, C) or (N,)), the
layout of ``spikeport run --inputs``; bias-driven networks take integer images ``[S, H, W, C]``; networks with an
SDNN input layer (a Delta encoder) take integers ``[S, T, *input_shape]`` (``input_drive='graded'``) and report
their Sigma decoder's sums (``report['netx']['output']``).
:func:`to_spikeport_layout` converts slayer's and lava-dl netx's own layouts (``--input-layout``). A netx
network has no readout: the prediction is the output layer's most active neuron (spike count over the
sample), lava-dl's rate-classifier convention.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from spikeport.atomic import run_temp_dir
from spikeport.errors import ConfigError, DataError
from spikeport.ir.graph import Graph
from spikeport.ir.netx import default_input_drive, graph_from_netx, input_layer_shape, is_netx_file
from spikeport.runtime.lava import backend as LB, compat
from spikeport.runtime.lava.run import Spikes, recorded, reference_spikes, run_lava, sim_config, v_key

INPUT_LAYOUTS = ("spikeport", "slayer", "netx")
GRADED_INPUT_MAX = 2**11 - 1  # x << 12 within Loihi's signed 24 bits


def from_slayer_layout(x: np.ndarray) -> np.ndarray:
    """slayer's [S, C, H, W, T] or [S, N, T] -> spikeport's [S, T, H, W, C] / [S, T, N]."""
    x = np.asarray(x)
    return np.moveaxis(x, -1, 1) if x.ndim == 3 else np.ascontiguousarray(x.transpose(0, 4, 2, 3, 1))


def from_netx_layout(x: np.ndarray) -> np.ndarray:
    """lava-dl netx's RingBuffer data (x, y, f, t) = (W, H, C, T) or (N, T), one sample or a batch
    [S, W, H, C, T] / [S, N, T] -> spikeport's [S, T, H, W, C] / [S, T, N]."""
    x = np.asarray(x)
    if x.ndim in (2, 4):  # one sample, as lava-dl's gts files hold it
        x = x[None]
    return np.moveaxis(x, -1, 1) if x.ndim == 3 else np.ascontiguousarray(x.transpose(0, 4, 2, 1, 3))


def to_spikeport_layout(x: np.ndarray, input_drive: str = "spikes", layout: str = "spikeport") -> np.ndarray:
    """Inputs in ``layout`` -> spikeport's channels-last batch: spikes [S, T, *input_shape], bias images
    [S, H, W, C]. Layouts: ``spikeport`` (that), ``slayer`` (spikes [S, C, H, W, T] / [S, N, T], images
    [S, C, H, W]), ``netx`` (lava-dl's (x, y, f) order: spikes [S,] W, H, C, T or [S,] N, T; images
    [S,] W, H, C; the sample axis may be left out for one sample)."""
    if layout not in INPUT_LAYOUTS:
        raise ConfigError(f"unknown input layout {layout!r}; valid choices: {', '.join(INPUT_LAYOUTS)}")
    x = np.asarray(x)
    if input_drive in ("spikes", "graded"):
        if layout == "slayer":
            return from_slayer_layout(x)
        return from_netx_layout(x) if layout == "netx" else x
    if input_drive != "bias":
        raise ConfigError(f"unknown netx input drive {input_drive!r}; valid choices: spikes, bias, graded")
    if x.ndim == 3:  # one image
        x = x[None]
    if x.ndim != 4:
        return x  # the caller names the expected shape
    if layout == "slayer":
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    return np.ascontiguousarray(x.transpose(0, 2, 1, 3)) if layout == "netx" else x


def load_inputs(
    path: str | os.PathLike[str],
    input_drive: str = "spikes",
    input_shape: tuple[int, ...] | None = None,
    samples: int | None = None,
    layout: str = "spikeport",
) -> np.ndarray:
    """An .npy of inputs for ``input_drive`` in ``layout`` (:func:`to_spikeport_layout`) -> spikes int8
    [S, T, *input_shape] or bias images int32 [S, H, W, C]; DataError naming the file on anything else."""
    if input_drive == "bias":
        return load_bias_inputs(path, input_shape, samples, layout)
    if input_drive == "graded":
        return load_graded_inputs(path, input_shape, samples, layout)
    if input_drive != "spikes":
        raise ConfigError(f"unknown netx input drive {input_drive!r}; valid choices: spikes, bias, graded")
    return load_spike_inputs(path, input_shape, samples, layout)


def _load_npy(path: str | os.PathLike[str], what: str) -> tuple[Path, np.ndarray]:
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: input file not found (an .npy of {what})")
    try:
        x = np.load(path, mmap_mode="r")
    except ValueError as err:
        raise DataError(f"{path}: not a readable .npy file: {err}") from None
    if x.dtype.kind not in "biuf":
        raise DataError(f"{path}: dtype {x.dtype}, expected numbers ({what})")
    return path, x


def load_spike_inputs(
    path: str | os.PathLike[str],
    input_shape: tuple[int, ...] | None = None,
    samples: int | None = None,
    layout: str = "spikeport",
) -> np.ndarray:
    """An .npy of binary spikes -> int8 [S, T, *input_shape]; DataError naming the file on anything else."""
    path, x = _load_npy(path, "spikes [S, T, *input_shape]")
    x = to_spikeport_layout(x, "spikes", layout)
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
    x = to_spikeport_layout(x, "graded", layout)
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
    x = np.atleast_2d(x) if flat else to_spikeport_layout(x, "bias", layout)
    if x.ndim != (2 if flat else 4) or (input_shape is not None and tuple(x.shape[1:]) != tuple(input_shape)):
        hint = " (this looks like spikes with a time axis: use input_drive='spikes')" if len(raw) == 5 else ""
        raise DataError(
            f"{path}: bias inputs of shape {raw} in layout {layout!r}, expected one image or a batch of "
            f"images [S, {', '.join(map(str, input_shape or ('H', 'W', 'C')))}] in spikeport's channels-last "
            f"order{hint}"
        )
    x = np.asarray(x[:samples] if samples else x)
    if (x != np.rint(x)).any() or x.min(initial=0) < -4096 or x.max(initial=0) > 4095:
        raise DataError(f"{path}: bias inputs must be integers in -4096..4095 (the input neuron's bias_mant)")
    return x.astype(np.int32)


def class_scores(graph: Graph) -> bool:
    """Whether the last neuron layer is a vector of at least two neurons (class scores). A feature map (a
    stem-only file) or a single output neuron (PilotNet's steering) has no class to predict."""
    return sum(d > 1 for d in graph.nodes[recorded(graph)[-1]].shape) == 1


def output_predictions(
    graph: Graph, spikes: Spikes, labels: np.ndarray | None = None
) -> tuple[list[int], float | None]:
    """argmax of the last neuron layer's spike counts per sample, or of its final ``v`` where it is a non-spiking
    integrator (mnist.net's output layer); and the accuracy if labels are given. None ([], None) where the last
    layer holds no class scores (:func:`class_scores`)."""
    if not class_scores(graph):
        return [], None
    last = recorded(graph)[-1]
    if v_key(last) in spikes:
        v = spikes[v_key(last)]
        preds = np.argmax(v[:, -1].reshape(len(v), -1), axis=-1)
    else:
        counts = spikes[last].reshape(len(spikes[last]), spikes[last].shape[1], -1).sum(axis=1)
        preds = np.argmax(counts, axis=-1)
    acc = float(np.mean(preds == np.asarray(labels))) if labels is not None and len(preds) else None
    return [int(p) for p in preds], acc


def run_netx(
    path: str | os.PathLike[str],
    inputs: np.ndarray,
    backend: str = "reference",
    labels: np.ndarray | None = None,
    input_shape: tuple[int, ...] | None = None,
    batch_size: int = 128,
    progress: bool = False,
    input_drive: str | None = None,
    steps: int | None = None,
    num_layers: int | None = None,
) -> tuple[dict[str, Any], Spikes]:
    """(run report, {node: spikes [S, T, *shape]}) of a netx file, or of an artifact converted from one
    (``spikeport convert net.net``), on ``reference``, ``lava`` or ``loihi2``. ``input_drive`` None: the file's
    own (:func:`netx_input_drive`).
    ``input_drive='spikes'``: ``inputs`` are spikes [S, T, *input_shape]. ``input_drive='bias'``: ``inputs`` are
    integer images [S, *input_shape], the input neuron's bias for ``steps`` steps (``graph_from_netx``).
    ``input_drive='graded'``: ``inputs`` are integers [S, T, *input_shape] into the SDNN input layer's Delta;
    ``report['netx']['output']`` holds the output layer's values [S, T, *shape] (a Sigma decoder's sums)."""
    input_drive = netx_input_drive(path, input_drive)
    bias = input_drive == "bias"
    inputs = np.asarray(inputs)
    if bias and not steps:
        raise ConfigError("input_drive='bias' needs the number of steps per sample (steps=T)")
    per_step = tuple(inputs.shape[1:] if bias else inputs.shape[2:])
    T = int(steps) if bias and steps else int(inputs.shape[1])
    graph = netx_graph(path, input_shape or declared_input_shape(path) or per_step, T, input_drive, num_layers)
    if bias and len(per_step) == 1 and graph.nodes["input"].shape == (1, 1, *per_step):  # 1-D images [S, N]
        inputs, per_step = inputs.reshape(len(inputs), 1, 1, -1), (1, 1, *per_step)
    if per_step != graph.nodes["input"].shape:
        raise DataError(
            f"inputs have shape {per_step} per {'sample' if bias else 'step'} (input_drive={input_drive!r}), "
            f"{path} reads {graph.nodes['input'].shape} (channels-last; --input-layout reads other axis orders)"
        )
    if bias and ((inputs != np.rint(inputs)).any() or inputs.min(initial=0) < -4096 or inputs.max(initial=0) > 4095):
        raise DataError("bias-driven inputs must be integers in -4096..4095 (the input neuron's bias_mant)")
    if input_drive == "graded":
        check_graded_inputs(inputs, "inputs")
    if backend == "reference":
        report, spikes = reference_spikes(graph, inputs, batch_size)
    elif backend == "lava":
        report, spikes = run_lava(graph, inputs, progress=progress)
    elif backend == "loihi2":
        from spikeport.runtime.loihi2.backend import run_loihi2

        report, spikes = run_loihi2(graph, inputs)
    else:
        raise ConfigError(f"unknown backend {backend!r}; valid choices: reference, lava, loihi2")
    report["samples"] = int(len(inputs))  # build_report counts predictions; a netx file has no readout
    last = recorded(graph)[-1]
    report["netx"] = {
        "file": str(path),
        "input_shape": list(graph.nodes["input"].shape),
        "input_drive": input_drive,
        "prediction": "argmax of the last layer's spike counts",
    }
    report["predictions"], acc = output_predictions(graph, spikes, labels)
    if acc is not None:
        report["accuracy"] = acc
    if not class_scores(graph):
        report["netx"]["prediction"] = (
            f"none: the last layer '{last}' is {list(graph.nodes[last].shape)}, not a vector of class scores "
            "(the file has no classifier readout)"
        )
    if v_key(last) in spikes:  # a non-spiking integrator: its v is the result (recorded from Lava's LIF on Lava)
        report["netx"]["prediction"] = "argmax of the output integrator's v at the last step"
        report["netx"]["output_v"] = np.asarray(spikes[v_key(last)])[:, -1].reshape(len(inputs), -1).tolist()
        report["netx"]["output_layer"] = last
    if input_drive == "graded":  # an SDNN network's result is its output layer's values, not a class
        last = recorded(graph)[-1]
        report["netx"]["output"] = np.asarray(spikes[last]).reshape(len(inputs), T, -1).tolist()
        report["netx"]["output_layer"] = last
    report["artifact"] = str(path)
    return report, spikes


def run_lavadl_netx(
    path: str | os.PathLike[str], inputs: np.ndarray, run_cfg: Any = None, fast: bool = False
) -> list[np.ndarray]:
    """lava-dl's ``netx.hdf5.Network`` on Lava (fixed_pt): spikes of every netx layer, ``[S, T, *shape]``
    channels-last, for spike inputs ``[S, T, *shape]`` streamed one sample every R = 2**ceil(log2 T) steps
    with netx's own reset (``reset_interval=R``). A network with an SDNN input layer takes one sample of
    integers [1, T, *shape] on its Delta's a_in (no reset) and gives graded outputs (the Sigma's sums).
    ``fast`` swaps in spikeport's bit-exact CPU models of Lava's Conv/Sparse (the processes stay lava-dl's)."""
    compat.import_lava()
    from lava.lib.dl.netx.blocks.process import Input

    Network = compat.netx_network()  # lava-dl's, numpy-2 safe
    from lava.proc.io.source import RingBuffer

    from spikeport.runtime.lava.procs.processes import SpikeRecorder
    from spikeport.runtime.lava.session import LavaSession

    S, T = inputs.shape[:2]
    R = LB.reset_interval(T)
    starts_with_input = _starts_with_input_block(path)
    sdnn = _sdnn_input(path)
    if sdnn and S != 1:
        raise ConfigError(f"{path}: netx's SDNN neurons have no reset: run one sample (one stream) per call")
    # netx resets layer k at step offset + 1 + k: right when the sample's first input reaches it if the
    # network starts with an Input block (no synapse); one step later otherwise.
    xyz = tuple(int(n) for n in _to_xyz(np.asarray(inputs[:1, :1])).shape[2:])
    net = Network(
        net_config=str(path),
        input_shape=xyz if len(xyz) == 3 else None,
        reset_interval=None if sdnn else R,
        reset_offset=0 if starts_with_input else 1,
    )
    depth = np.cumsum([0 if isinstance(layer, Input) else 1 for layer in net.layers])
    total = S * R + int(depth[-1]) + 1
    x = _to_xyz(np.asarray(inputs))
    data = np.zeros((*x.shape[2:], total), np.int32)
    for s in range(S):
        data[..., s * R : s * R + T] = np.moveaxis(x[s], 0, -1)
    src = RingBuffer(data=data)
    # an SDNN input layer's Delta is fed on its a_in, as lava-dl's test_pilotnet_sdnn does (netx's Input block
    # port is not connected to its neuron)
    src.s_out.connect(net.in_layer.neuron.a_in if sdnn else net.inp)
    with run_temp_dir("netx") as tmp:
        paths = []
        for k, layer in enumerate(net.layers):
            paths.append(os.path.join(tmp, f"{k}.npy"))
            shape = tuple(int(n) for n in layer.out.shape)  # netx's shapes hold numpy ints
            np.lib.format.open_memmap(paths[-1], mode="w+", dtype=np.int32, shape=(total, *shape)).flush()
            rec = SpikeRecorder(shape=shape, path=paths[-1])
            layer.out.connect(rec.s_in)
        with LavaSession(src, run_cfg or sim_config(fast=fast)) as session:
            session.run(total)
        out = []
        for k, p in enumerate(paths):
            rec = np.load(p)
            idx = (np.arange(S)[:, None] * R + np.arange(T)[None, :] + int(depth[k])).reshape(-1)
            out.append(_from_xyz(rec[idx].reshape(S, T, *rec.shape[1:])))
    return out


def netx_input_drive(path: str | os.PathLike[str], asked: str | None = None) -> str:
    """The input drive to run ``path`` with: ``asked``, else the netx file's own (``graded`` for an SDNN input
    layer, else ``spikes``); an artifact converted from a netx file runs only with the drive it was made with."""
    if is_netx_file(path):
        return asked or default_input_drive(path)
    from spikeport.ir.artifact import read_meta

    made_with = str(read_meta(path).get("input_drive", "spikes"))
    if asked not in (None, made_with):
        raise ConfigError(
            f"{path} was converted from a netx file with input_drive={made_with!r}; it cannot run with "
            f"{asked!r} (convert the netx file again with --input-drive {asked})"
        )
    return made_with


def netx_graph(
    path: str | os.PathLike[str],
    input_shape: tuple[int, ...] | None,
    T: int,
    input_drive: str | None,
    num_layers: int | None = None,
) -> Graph:
    """The graph of a netx file for ``T`` steps (its first ``num_layers`` layers), or of an artifact converted from
    one (its integers as written; its input drive and layers are fixed at conversion)."""
    if is_netx_file(path):
        return graph_from_netx(path, input_shape, T=T, input_drive=input_drive, num_layers=num_layers)
    netx_input_drive(path, input_drive)
    graph = _netx_artifact(path)
    graph.T = T
    return graph


def _netx_artifact(path: str | os.PathLike[str]) -> Graph:
    from spikeport.ir import artifact

    graph = artifact.read(path)
    if graph.meta.get("source") != "netx":
        raise ConfigError(f"{path}: not a netx file nor an artifact converted from one (spikeport convert net.net)")
    return graph


def declared_input_shape(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """The channels-last shape of a netx file's ``input`` layer (``None`` when it has none, or for an artifact)."""
    import h5py

    if not is_netx_file(path):
        return None

    from spikeport.ir.netx import _read

    with h5py.File(path, "r") as f:
        first = f["layer"]["0"] if "layer" in f and "0" in f["layer"] else None
        if first is None or _read(first, "type") != "input" or "shape" not in first:
            return None
        return input_layer_shape([f["layer"][str(i)] for i in range(min(2, len(f["layer"])))])


def _starts_with_input_block(path: str | os.PathLike[str]) -> bool:
    import h5py

    from spikeport.ir.netx import _read

    with h5py.File(path, "r") as f:
        first = next(
            (f["layer"][str(i)] for i in range(len(f["layer"])) if _read(f["layer"][str(i)], "type") != "flatten"), None
        )
        return first is not None and _read(first, "type") == "input" and "neuron" in first


def _sdnn_input(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with an SDNN ``input`` layer (a Delta encoder of integer inputs)."""
    import h5py

    from spikeport.ir.netx import _read

    with h5py.File(path, "r") as f:
        first = f["layer"]["0"] if "layer" in f and "0" in f["layer"] else None
        return (
            first is not None
            and _read(first, "type") == "input"
            and "neuron" in first
            and _read(first["neuron"], "type") == "SDNN"
        )


def _to_xyz(x: np.ndarray) -> np.ndarray:
    """[S, T, H, W, C] -> netx's (x, y, f) = (W, H, C) per step; 1-D inputs unchanged."""
    return x.transpose(0, 1, 3, 2, 4) if x.ndim == 5 else x


def _from_xyz(x: np.ndarray) -> np.ndarray:
    return x.transpose(0, 1, 3, 2, 4) if x.ndim == 5 else x


def compare_layers(graph: Graph, netx_spikes: list[np.ndarray], spikes: Spikes) -> list[dict[str, Any]]:
    """Per imported netx layer: spikes in both runs and the number of (sample, step, neuron) mismatches."""
    rows = []
    for name, theirs in zip(recorded(graph), netx_spikes, strict=True):  # one neuron layer per netx layer
        ours = spikes[name].reshape(theirs.shape)
        rows.append(
            {
                "layer": name,
                "spikes": int(ours.sum()),
                "netx_spikes": int(theirs.sum()),
                "mismatches": int(np.count_nonzero(ours != theirs)),
            }
        )
    return rows
