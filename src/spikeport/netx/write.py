"""Export the netx-expressible chain of a converted network as a lava-dl netx HDF5 file.

The chain starts at the first spike-driven layer (spikeport's first conv reads graded pixels with a
flooring exponent that netx cannot carry: its neuron's spikes become the netx input) and follows
synapse -> LIF blocks while each has one synapse, one LIF and an exponent netx can express; it stops at
the first fork (q/k/v), residual sum, maxpool, attention or readout. Conversions: see ``read.py``. The
returned :class:`NetxExport` lists what was written, the bias rounding error per layer (netx's fixed
``bias_exp = 6``) and every node left out, with the reason.

What each IR op becomes in a netx file is its entry in ``NETX`` (``spikeport.ir.registry``): a block's
synapse (how it writes its layer's geometry and weights), a block's neuron (how it writes the neuron and
the bias), or why it has no netx form.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from spikeport.atomic import write_hdf5
from spikeport.brief import brief_repr
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import value_kind
from spikeport.ir.ops import validate
from spikeport.ir.registry import Registry
from spikeport.netx.neurons import NETX_BIAS_EXP
from spikeport.netx.read import NETX_FLATTENED_DENSE, NETX_INPUT_BLOCK, SPIKE_INPUT, torch_shape
from spikeport.netx.weights import netx_dense_weights
from spikeport.value_kinds import SPIKES


@dataclass(frozen=True)
class NetxSynapse:
    """A block's synapse. ``layer_type(graph, node)``: its netx layer type, "dense" or "conv";
    ``write(group, node, weights, layer type)``: its geometry datasets and ``weight`` (mant << weight_exp)."""

    layer_type: Callable[[Graph, Node], str]
    write: Callable[[h5py.Group, Node, np.ndarray, str], None]


@dataclass(frozen=True)
class NetxMapping:
    """What one IR op is in a netx file: a block's ``synapse``, a block's ``neuron`` (``neuron(layer group,
    node)`` writes the bias and the neuron group and returns the bias rounding (inexact neurons, max error)),
    or nothing, with the reason it has ``no_form``. ``reads_input``: a neuron the network's input drives
    without a synapse (an SDNN Delta encoder), written back as netx's ``input`` layer. ``recurrent(node)``: a
    neuron group's own recurrent weights (integers [C, C]): its block is written as a ``dense_rec`` layer, the
    weights in ``weight_rec`` (netx optimizes them together with the synapse's)."""

    synapse: NetxSynapse | None = None
    neuron: Callable[[h5py.Group, Node], tuple[int, int]] | None = None
    no_form: str = ""
    reads_input: bool = False
    recurrent: Callable[[Node], np.ndarray] | None = None


NETX: Registry[NetxMapping] = Registry("netx mapping")
# one netx layer: (synapse, neuron, netx layer type); an SDNN input layer has no synapse (the input feeds its Delta)
Block = tuple[Node | None, Node, str]


def _mapping(node: Node) -> NetxMapping:
    return NETX.find(node.op) or NetxMapping()


def _is_synapse(node: Node) -> bool:
    return _mapping(node).synapse is not None


def _synapse_form(node: Node) -> NetxSynapse:
    """The netx form of a node that ``_is_synapse`` admitted."""
    synapse = _mapping(node).synapse
    assert synapse is not None, node.name
    return synapse


def _is_neuron(node: Node) -> bool:
    return _mapping(node).neuron is not None


@dataclass
class NetxLayerInfo:
    index: int  # layer/<index> in the file
    type: str  # conv | dense | dense_rec
    synapse: str  # spikeport node names
    neuron: str
    shape: list[int]  # as written: torch order (C, H, W) or (N,)
    weight_range: list[int]
    bias_inexact: int  # neurons whose bias is not a multiple of 2**6 (netx's bias_exp)
    bias_max_error: int  # max |netx bias - spikeport bias| in LSBs of v (vth is vThMant << 6)
    also_feeds: list[str] = field(default_factory=list)  # consumers of the neuron outside the export


@dataclass
class NetxExport:
    path: str
    source: str  # spikeport node whose spikes are the netx network's input
    input_shape: list[int]  # channels-last shape of those spikes
    layers: list[NetxLayerInfo]
    left_out: list[dict[str, str]]  # {"name", "op", "reason"}

    __repr__ = brief_repr  # print(export): the file and the counts of layers and of nodes left out

    @property
    def exact(self) -> bool:
        return all(layer.bias_inexact == 0 for layer in self.layers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source": self.source,
            "input_shape": self.input_shape,
            "exact": self.exact,
            "layers": [asdict(layer) for layer in self.layers],
            "left_out": self.left_out,
            "usage": f"lava.lib.dl.netx.hdf5.Network(net_config='{self.path}'): feed binary spikes of "
            f"'{self.source}' (netx order (x, y, f) = spikeport (H, W, C)); every layer adds "
            f"one time step of latency",
        }


def _next_block(graph: Graph, cur: str) -> tuple[Block | None, str]:
    """(synapse, lif, netx type) of the block that reads ``cur``, or (None, reason the chain ends)."""
    syn = [c for c in graph.consumers(cur) if _is_synapse(c)]
    if not syn:
        return None, f"'{cur}' feeds no conv/dense synapse"
    if len(syn) > 1:
        return None, f"'{cur}' fans out to {[s.name for s in syn]}: a netx network is a single chain"
    s = syn[0]
    after = graph.consumers(s.name)
    if len(after) != 1 or not _is_neuron(after[0]):
        return None, f"'{s.name}' does not feed exactly one LIF"
    lif = after[0]
    if len(lif.inputs) != 1:
        return None, f"'{lif.name}' sums {len(lif.inputs)} synaptic inputs (a netx block has one synapse)"
    e = s.attrs["weight_exp"]
    if e < 0:
        return None, (
            f"'{s.name}' has weight_exp {e}: the flooring shift has no exact netx form "
            f"(netx files carry no weight exponent)"
        )
    w = s.params["weight_mant"].astype(np.int64) << e
    kind = _synapse_form(s).layer_type(graph, s)
    recurrent = _mapping(lif).recurrent
    if recurrent is not None and kind != "dense":
        return None, f"'{lif.name}' reads its own spikes and '{s.name}' is a {kind}: netx's dense_rec is a dense layer"
    if kind == "dense":
        try:
            weights = [_netx_dense_matrix(s, w)] + ([recurrent(lif)] if recurrent is not None else [])
            ok = all(np.array_equal(a, b) for a, b in zip(netx_dense_weights(*weights), weights, strict=True))
        except ValueError:
            ok = False
        if not ok:
            return None, f"'{s.name}': weights mant << {e} do not survive netx's optimize_weight_bits exactly" + (
                f" (optimized with '{lif.name}''s recurrent weights)" if recurrent is not None else ""
            )
    return (s, lif, kind), ""


def plan_export(graph: Graph) -> tuple[str, list[Block], dict[str, str]]:
    """(source node, [(synapse, lif, netx type)], {left-out node: reason}) for a quantized graph."""
    (inp,) = [n for n in graph.nodes.values() if not n.inputs]  # the input: the one node that reads nothing
    reasons: dict[str, str] = {}
    blocks: list[Block] = []
    source, cur = inp.name, inp.name
    input_block = _imported_input_block(graph, inp)
    if input_block is not None:  # a netx file's own input layer: its input is the file's input
        blocks, cur = [input_block], input_block[1].name
    elif value_kind(graph, inp.name) != SPIKES:
        first, why = _next_block_analog(graph, inp)
        if first is None:
            return inp.name, [], {n: why for n in graph.order}
        syn, lif = first
        reasons[inp.name] = "analog pixel input (graded, 16-bit): stays on the host"
        reasons[syn.name] = (
            f"reads graded pixels with weight_exp {syn.attrs['weight_exp']} (flooring shift): "
            f"no exact netx form; the export starts at the spikes of '{lif.name}'"
        )
        reasons[lif.name] = "neuron of the analog first layer: its spikes are the netx network's input"
        source = cur = lif.name
    while True:
        block, stop = _next_block(graph, cur)
        if block is None:
            break
        blocks.append(block)
        cur = block[1].name
    exported = _block_nodes(blocks)
    for name in graph.order:
        if name in exported or name in reasons or name == source:
            continue
        reasons[name] = _mapping(graph.nodes[name]).no_form or f"after the end of the netx chain ({stop})"
    return source, blocks, reasons


def _block_nodes(blocks: list[Block]) -> set[str]:
    return {node.name for syn, lif, _ in blocks for node in (syn, lif) if node is not None}


def _imported_input_block(graph: Graph, inp: Node) -> Block | None:
    """(identity synapse, input LIF, "input") where the graph came from a netx file with an Input block
    (``graph_from_netx``): written back as that ``input`` layer, whichever drive (spikes, bias) it was read with.
    An SDNN input layer is a Delta the input feeds directly: (None, delta, "input")."""
    syn = graph.consumers(inp.name)
    if len(syn) == 1 and _mapping(syn[0]).reads_input:
        return None, syn[0], "input"
    if len(syn) != 1 or syn[0].attrs.get("netx_type") != NETX_INPUT_BLOCK:
        return None
    lifs = graph.consumers(syn[0].name)
    if len(lifs) != 1 or not _is_neuron(lifs[0]):
        return None
    return syn[0], lifs[0], "input"


def _next_block_analog(graph: Graph, inp: Node) -> tuple[tuple[Node, Node] | None, str]:
    syn = graph.consumers(inp.name)
    if len(syn) != 1 or not _is_synapse(syn[0]):
        return None, "the analog input does not feed a single conv"
    lifs = graph.consumers(syn[0].name)
    if len(lifs) != 1 or not _is_neuron(lifs[0]):
        return None, f"'{syn[0].name}' does not feed a single LIF"
    return (syn[0], lifs[0]), ""


def export_netx(graph: Graph, path: str | os.PathLike[str]) -> NetxExport:
    """Write the netx-expressible chain of ``graph`` as a netx HDF5 file (atomically); see the module doc."""
    if not graph.quantized:
        raise ConversionError("export_netx needs a quantized graph (an artifact)")
    source, blocks, reasons = plan_export(graph)
    if not blocks:
        raise ConversionError(f"no netx-expressible layer: {reasons.get(graph.order[-1], 'empty graph')}")
    path = Path(path)
    infos: list[NetxLayerInfo] = []
    exported = _block_nodes(blocks)

    def fill(f: h5py.File) -> None:
        layer = f.create_group("layer")
        i, map_out = 0, True  # netx flattens a map (an input or conv layer's output) before a dense layer
        if blocks[0][2] != "input":
            _string(layer.create_group("0"), "type", "input", fixed=True)
            layer["0"].create_dataset("shape", data=np.array(torch_shape(graph.nodes[source].shape)))
            i, map_out = 1, len(graph.nodes[source].shape) == 3
        for syn, lif, kind in blocks:
            if kind == "dense" and syn is not None and map_out and len(graph.nodes[syn.inputs[0]].shape) == 3:
                flat = layer.create_group(str(i))
                _string(flat, "type", "flatten", fixed=True)
                flat.create_dataset("shape", data=np.array([int(np.prod(graph.nodes[syn.inputs[0]].shape)), 1, 1]))
                i += 1
            infos.append(_write_block(layer.create_group(str(i)), i, graph, syn, lif, kind))
            infos[-1].also_feeds = [c.name for c in graph.consumers(lif.name) if c.name not in exported]
            i, map_out = i + 1, kind != "dense"
        sim = f.create_group("simulation")  # slayer's fields: step length and steps per sample
        sim.create_dataset("Ts", data=1)
        sim.create_dataset("tSample", data=graph.T)
        f.attrs["spikeport_export"] = json.dumps({"source": source, "nodes": sorted(exported)})

    write_hdf5(path, fill)  # built in memory: HDF5 crashes writing to a disk that fills up
    left = [{"name": n, "op": graph.nodes[n].op, "reason": reasons[n]} for n in graph.order if n in reasons]
    return NetxExport(str(path), source, list(graph.nodes[source].shape), infos, left)


def _string(group: h5py.Group, key: str, value: str, fixed: bool = False) -> None:
    if fixed:  # slayer writes layer types as a fixed-length (1,) array, neuron types as a scalar
        group.create_dataset(key, (1,), "S10", [value.encode("ascii")])
    else:
        group.create_dataset(key, data=value)


def _write_block(g: h5py.Group, index: int, graph: Graph, syn: Node | None, lif: Node, kind: str) -> NetxLayerInfo:
    w = (
        np.zeros((0,), np.int64)
        if syn is None
        else syn.params["weight_mant"].astype(np.int64) << syn.attrs["weight_exp"]
    )
    recurrent = _mapping(lif).recurrent
    layer_type = "dense_rec" if recurrent is not None else kind
    _string(g, "type", layer_type, fixed=True)
    g.create_dataset("shape", data=np.array(torch_shape(lif.shape)))
    if kind != "input":  # an Input block has no synapse: its identity was the importer's
        assert syn is not None  # conv and dense blocks have one (plan_export)
        _synapse_form(syn).write(g, syn, w, kind)
    elif syn is not None and "netx_transform" in syn.attrs:
        for key, value in zip(("weight", "bias"), syn.attrs["netx_transform"], strict=True):
            g.create_dataset(key, data=np.array([value], np.float32))
    if recurrent is not None:
        g.create_dataset("weight_rec", data=recurrent(lif).astype(np.float32))
    neuron = _mapping(lif).neuron
    assert neuron is not None  # plan_export builds blocks around neurons with a netx form
    inexact, max_error = neuron(g, lif)
    return NetxLayerInfo(
        index,
        layer_type,
        "" if syn is None else syn.name,
        lif.name,
        torch_shape(lif.shape),
        [int(w.min(initial=0)), int(w.max(initial=0))],
        inexact,
        max_error,
    )


def _write_conv(
    g: h5py.Group,
    w: np.ndarray,
    cin: int,
    cout: int,
    groups: int,
    k: Sequence[int],
    stride: Sequence[int],
    pad: Sequence[int],
    dil: Sequence[int],
) -> None:
    for key, value in (
        ("inChannels", cin),
        ("outChannels", cout),
        ("kernelSize", k),
        ("stride", stride),
        ("padding", pad),
        ("dilation", dil),
        ("groups", groups),
    ):
        g.create_dataset(key, data=np.array(value))
    g.create_dataset("weight", data=w.transpose(0, 3, 1, 2).astype(np.float32))  # (out, in, kH, kW)


def _conv_layer_type(graph: Graph, syn: Node) -> str:
    return "dense" if syn.attrs.get("netx_type") == NETX_FLATTENED_DENSE else "conv"


def _netx_dense_matrix(syn: Node, w: np.ndarray) -> np.ndarray:
    """A dense layer's [out, in] weights; for a full-map conv from netx's flatten, its inputs in netx's (C, H, W)
    order (``graph_from_netx`` turned ``w[o, c*H*W + h*W + x]`` into ``kernel[o, h, x, c]``)."""
    return w.transpose(0, 3, 1, 2).reshape(len(w), -1) if w.ndim == 4 else w


def _conv_layer(g: h5py.Group, syn: Node, w: np.ndarray, kind: str) -> None:
    a = syn.attrs
    if kind == "dense":
        g.create_dataset("inFeatures", data=int(np.prod(w.shape[1:])))
        g.create_dataset("outFeatures", data=a["out_channels"])
        g.create_dataset("weight", data=_netx_dense_matrix(syn, w).astype(np.float32))
        return
    _write_conv(
        g, w, a["in_channels"], a["out_channels"], a["groups"], a["kernel"], a["stride"], a["padding"], a["dilation"]
    )


def _dense_layer_type(graph: Graph, syn: Node) -> str:
    return "dense" if len(graph.nodes[syn.inputs[0]].shape) == 1 else "conv"


def _dense_layer(g: h5py.Group, syn: Node, w: np.ndarray, kind: str) -> None:
    a = syn.attrs
    if kind == "dense":
        g.create_dataset("inFeatures", data=a["in_features"])
        g.create_dataset("outFeatures", data=a["out_features"])
        g.create_dataset("weight", data=w.astype(np.float32))
        if "delay" in syn.params:  # netx reads a full [out, in] matrix as is
            g.create_dataset("delay", data=syn.params["delay"].astype(np.float32))
    else:  # a token-wise dense on a map is a 1x1 convolution
        _write_conv(g, w[:, None, None, :], a["in_features"], a["out_features"], 1, (1, 1), (1, 1), (0, 0), (1, 1))


def _cuba_neuron(g: h5py.Group, lif: Node) -> tuple[int, int]:
    """netx's CUBA neuron and the bias in netx's fixed bias_exp; returns the bias rounding of the file."""
    la = lif.attrs
    bias = lif.params["bias_mant"].astype(np.int64) << la["bias_exp"]
    netx_bias = np.floor(bias / 2**NETX_BIAS_EXP + 0.5).astype(np.int64)
    error = np.abs((netx_bias << NETX_BIAS_EXP) - bias)
    if netx_bias.any():
        g.create_dataset("bias", data=netx_bias.astype(np.float32))
    neuron = g.create_group("neuron")
    _string(neuron, "type", "CUBA")
    for key, value in (
        ("iDecay", la["du"] + 1),
        ("vDecay", la["dv"]),
        ("vThMant", la["vth"]),
        ("refDelay", 1),
        ("gradedSpike", False),
    ):  # refDelay: slayer's default, Lava ignores it
        neuron.create_dataset(key, data=value)
    return int(np.count_nonzero(error)), int(error.max()) if error.size else 0


NETX.add("conv", NetxMapping(synapse=NetxSynapse(_conv_layer_type, _conv_layer)))
NETX.add("dense", NetxMapping(synapse=NetxSynapse(_dense_layer_type, _dense_layer)))
NETX.add("lif", NetxMapping(neuron=_cuba_neuron))


def _recurrent_weights(node: Node) -> np.ndarray:
    if node.attrs["weight_exp"] < 0:
        raise ValueError(f"'{node.name}': recurrent weight_exp {node.attrs['weight_exp']} (a flooring shift)")
    weights: np.ndarray = node.params["weight_mant"].astype(np.int64) << node.attrs["weight_exp"]
    return weights


NETX.add("recurrent_lif", NetxMapping(neuron=_cuba_neuron, recurrent=_recurrent_weights))


def _sdnn_neuron(g: h5py.Group, node: Node, **fields: object) -> None:
    neuron = g.create_group("neuron")
    _string(neuron, "type", "SDNN")
    _string(neuron, "activation", "relu")
    for key, value in fields.items():
        neuron.create_dataset(key, data=value)


def _delta_neuron(g: h5py.Group, node: Node) -> tuple[int, int]:
    """netx's SDNN input layer (a Lava Delta); netx's spike_exp / state_exp are constructor defaults (6)."""
    _sdnn_neuron(g, node, vThMant=node.attrs["vth"])
    return 0, 0


def _sigma_delta_neuron(g: h5py.Group, node: Node) -> tuple[int, int]:
    if node.params["bias"].any():
        g.create_dataset("bias", data=node.params["bias"].astype(np.float32))
    _sdnn_neuron(g, node, vThMant=node.attrs["vth"])
    return 0, 0


def _sigma_neuron(g: h5py.Group, node: Node) -> tuple[int, int]:
    _sdnn_neuron(g, node, vThMant=0, sigma_output=True)  # a Sigma has no threshold: netx ignores vThMant here
    return 0, 0


NETX.add("delta", NetxMapping(neuron=_delta_neuron, reads_input=True))
NETX.add("sigma_delta", NetxMapping(neuron=_sigma_delta_neuron))
NETX.add("sigma", NetxMapping(neuron=_sigma_neuron))
NETX.add(
    "rf",
    NetxMapping(
        no_form="RF neuron: netx derives its integer decays from float period / alpha fields; spikeport writes no "
        "inverse of that round trip yet"
    ),
)
NETX.add("add", NetxMapping(no_form="residual sum: netx has no add/residual layer (a netx network is a single chain)"))
NETX.add("maxpool", NetxMapping(no_form="netx 'pool' layers raise NotImplementedError in lava-dl 0.6"))
NETX.add("attention", NetxMapping(no_form="spiking self-attention has no netx form"))
NETX.add("dendritic", NetxMapping(no_form="dendritic attention has no netx form"))
NETX.add("readout", NetxMapping(no_form="host readout (integer head on the summed residual stream): no netx form"))


def chain_graph(graph: Graph, export: NetxExport) -> Graph:
    """The exported layers as spikeport computes them (its own biases), fed by spikes of ``export.source``:
    what the netx file approximates. ``graph_from_netx(export.path)`` is what the file really computes."""
    nodes = {"input": Node("input", "input", [], dict(SPIKE_INPUT), {}, graph.nodes[export.source].shape)}
    prev = "input"
    for layer in export.layers:
        for name in (layer.synapse, layer.neuron):
            n = graph.nodes[name]
            nodes[name] = Node(name, n.op, [prev], dict(n.attrs), dict(n.params), n.shape)
            prev = name
    chain = Graph(nodes, graph.T, meta={"layout": graph.meta.get("layout", "channels_last")}, quantized=True)
    validate(chain)
    return chain
