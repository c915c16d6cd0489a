"""One mapper per NIR primitive (``PRIMITIVES``): a flattened NIR graph -> a float spikeport graph (``graph_from_nir``).

The graph comes out in the form the quantizer plans (``convert.quantize.plan``): channels-last, each neuron's
time constants already folded into its synapses (``meta["tau_folded"]``), the synapse biases moved into the
neuron. Vectors are ``(1, 1, N)`` maps (one token), so the first synapse on analog samples is a 1 x 1 conv (the op
that reads analog values and counts MACs). What maps onto what:

    Input                     the ``input`` node (analog samples, every step the same)
    Affine / Linear           ``dense`` on spikes; a 1 x 1 ``conv`` on the analog input; after a Flatten of a map,
                              a ``conv`` whose kernel is the whole map (torch's C-major flatten order)
    Conv2d / Conv1d           ``conv`` (Conv1d: a 1 x N map)
    Flatten                   nothing (a view); read by an Affine as above
    SumPool2d / AvgPool2d     read by a neuron: a depthwise ``conv`` of ones (1 / k^2); read through a Flatten by an
                              Affine: folded into that Affine's kernel (non-overlapping windows)
    Scale                     folded into the rows of the synapse before it
    LIF / CubaLIF / IF / Threshold   ``lif`` (``neurons.py``: decays, thresholds, gains)
    LI / I before the Output  the host ``readout`` (logits summed over the steps)
    Output                    the ``readout``: spike counts of a neuron vector, or the sums of an Affine

A NIR node with several inputs sums them: a neuron sums its synapses (Loihi's a_in), a synapse reads an ``add``.
Anything else is refused in one line naming the node, its primitive and the supported ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport.errors import ConversionError
from spikeport.fixedpoint import conv_out_size
from spikeport.ir.graph import Graph, Node
from spikeport.ir.ops import infer_shapes, validate
from spikeport.ir.registry import Registry
from spikeport.nir_import.graphs import FlatGraph, primitive, recurrent_edges, topological
from spikeport.nir_import.neurons import INTEGRATORS, NEURONS, Dynamics, Where, per_channel

ANALOG, SPIKES, CURRENT, READOUT = "analog", "spikes", "current", "readout"  # what a NIR node's output is here


@dataclass(frozen=True)
class Pool:
    """A sum / average pooling its reader applies: ``src_shape`` is the IR shape of the map it pools."""

    name: str
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    average: bool
    src_shape: tuple[int, ...]


@dataclass
class Value:
    """A NIR node's output in the graph being built: the IR node that carries it, its IR shape (channels-last),
    what it is, its NIR shape (torch layout); ``flat_of``: a Flatten's map (its NIR shape); ``pool``: a pending
    pooling of ``node``'s map."""

    node: str
    shape: tuple[int, ...]
    kind: str
    nir_shape: tuple[int, ...]
    flat_of: tuple[int, ...] | None = None
    pool: Pool | None = None


@dataclass
class Build:
    """The state of one mapping: the IR graph, each NIR node's value, each neuron layer's dynamics, the report."""

    graph: Graph
    flat: FlatGraph
    dt: float
    values: dict[str, Value] = field(default_factory=dict)
    dynamics: dict[str, Dynamics] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)  # synapse nodes a neuron or the readout already reads
    readout: bool = True  # False: a part read back for its float outputs (no readout: ``outputs`` names them)
    outputs: list[str] = field(default_factory=list)  # the IR nodes the Output sums (``readout=False``)

    def emit(self, node: Node) -> str:
        self.graph.add(node)
        return node.name

    def fail(self, name: str, problem: str) -> ConversionError:
        return ConversionError(f"NIR node '{name}' ({primitive(self.flat.nodes[name])}): {problem}")


Mapper = Callable[[Build, str, Any, list[Value]], Value]
PRIMITIVES: Registry[Mapper] = Registry("NIR primitive mapping")


def supported() -> list[str]:
    return list(PRIMITIVES) + ["NIRGraph (inlined; a neuron fed back through one Affine / Linear is recurrent)"]


def ir_shape(nir_shape: tuple[int, ...]) -> tuple[int, ...]:
    """NIR's torch layout -> spikeport's channels-last: (N,) -> (1, 1, N), (C, N) -> (1, N, C), (C, H, W) -> (H, W,
    C)."""
    if len(nir_shape) == 1:
        return (1, 1, nir_shape[0])
    if len(nir_shape) == 2:
        return (1, nir_shape[1], nir_shape[0])
    if len(nir_shape) == 3:
        return (nir_shape[1], nir_shape[2], nir_shape[0])
    raise ConversionError(f"a NIR value of shape {nir_shape}: expected (N,), (C, N) or (C, H, W)")


def graph_from_nir(flat: FlatGraph, dt: float, T: int, meta: dict[str, Any], readout: bool = True) -> Build:
    """The float spikeport graph of ``flat`` with Euler steps of ``dt`` seconds, ``T`` steps per sample (validated,
    shapes inferred); the Build holds the dynamics per neuron layer and the mapping's report rows. ``readout=False``
    maps a graph whose Output is no class score (a part of spikeport's own NIR export: a map, a residual sum) for
    its float outputs only: the Output's inputs are listed in ``Build.outputs``, no readout node is made."""
    graph = Graph(nodes={}, T=T, meta={"layout": "channels_last", "tau_folded": True, **meta})
    build = Build(graph, flat, dt, readout=readout)
    back = recurrent_edges(flat)
    for w, n in sorted(back):
        raise ConversionError(
            f"NIR node '{n}' ({primitive(flat.nodes[n])}) reads its own spikes through '{w}' "
            f"({primitive(flat.nodes[w])}): recurrent layers are not supported yet (feed-forward graphs are)"
        )
    order = topological(flat, back)
    if sum(primitive(flat.nodes[n]) == "Input" for n in order) != 1:
        raise ConversionError("the NIR graph must have exactly one Input node (spikeport's artifacts read one input)")
    for name in order:
        node = flat.nodes[name]
        prim = primitive(node)
        mapper = PRIMITIVES.find(prim)
        if mapper is None:
            raise build.fail(name, f"this primitive is not supported; supported: {', '.join(supported())}")
        ins = [build.values[s] for s in flat.inputs_of(name)]
        if prim != "Input" and not ins:
            raise build.fail(name, "has no input edge")
        before = set(build.graph.nodes)
        build.values[name] = mapper(build, name, node, ins)
        build.rows.append(
            {"nir_node": name, "primitive": prim, "nodes": [n for n in build.graph.nodes if n not in before]}
        )
    outputs = [n for n in order if primitive(flat.nodes[n]) == "Output"]
    if len(outputs) != 1:
        raise ConversionError(f"the NIR graph has {len(outputs)} Output nodes; spikeport's artifacts have one readout")
    validate(infer_shapes(build.graph))
    return build


def one_input(b: Build, name: str, ins: list[Value]) -> Value:
    """The value a single-input node reads; several in-edges are summed (NIR's rule) with an ``add`` of spikes."""
    if len(ins) == 1:
        return ins[0]
    if any(v.kind != SPIKES or v.pool or v.flat_of for v in ins) or len({v.shape for v in ins}) > 1:
        raise b.fail(name, "sums several inputs that are not spike maps of one shape (supported: spikes + spikes)")
    added = b.emit(Node(f"{name}.sum", "add", [v.node for v in ins]))
    return Value(added, ins[0].shape, "integer", ins[0].nir_shape)


# ------------------------------------------------------------------------------------------- Input / Output
@PRIMITIVES.register("Input")
def _input(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    shape = tuple(int(s) for s in np.ravel(node.input_type["input"]))
    if not shape or min(shape) < 1:
        raise b.fail(name, f"input shape {shape}: expected (N,), (C, N) or (C, H, W) with positive sizes")
    b.emit(Node("input", "input", [], {}, shape=ir_shape(shape)))
    return Value("input", ir_shape(shape), ANALOG, shape)


@PRIMITIVES.register("Output")
def _output(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    if not b.readout:  # the float outputs of a part: the sum of what the Output reads
        b.outputs = [v.node for v in ins]
        return ins[0]
    x = one_input(b, name, ins)
    if x.kind == READOUT:
        return x
    if x.kind == CURRENT:  # an Affine read by nobody else: the host sums it over the steps
        return _readout_of_synapse(b, name, x, np.ones(x.shape[-1]), np.zeros(x.shape[-1]))
    if x.kind != SPIKES or len(x.nir_shape) != 1 or x.flat_of:
        raise b.fail(
            name,
            f"reads a {x.kind} value of shape {x.nir_shape}; an artifact ends in class scores: the Output must read "
            "a neuron vector (spike counts), an Affine / Linear, or an LI / I after one",
        )
    n = x.shape[-1]
    params = {"weight": np.eye(n), "bias": np.zeros(n)}  # the spike counts are the logits
    b.emit(Node(name, "readout", [x.node], {"classes": n}, params))
    return Value(name, (n,), READOUT, (n,))


def _readout_of_synapse(b: Build, name: str, x: Value, scale: np.ndarray, bias: np.ndarray) -> Value:
    """The readout that replaces the dense synapse carrying ``x``: logits = sum_t (scale (W s + b) + bias)."""
    syn = b.graph.nodes[x.node]
    if "in_features" not in syn.attrs or x.node in b.claimed:  # a dense synapse: the one a readout can take over
        raise b.fail(name, "reads an Affine / Linear that reads no spike vector; put a neuron layer before it")
    del b.graph.nodes[x.node]
    weight = syn.params["weight"] * scale[:, None]
    total_bias = syn.params.get("bias", np.zeros(len(scale))) * scale + bias
    n = int(weight.shape[0])
    b.emit(Node(name, "readout", syn.inputs, {"classes": n}, {"weight": weight, "bias": total_bias}))
    return Value(name, (n,), READOUT, (n,))


@PRIMITIVES.register(*INTEGRATORS)
def _integrator(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    x = one_input(b, name, ins)
    readers = [primitive(b.flat.nodes[r]) for r in b.flat.readers_of(name)]
    if readers != ["Output"]:
        raise b.fail(name, f"is read by {readers or 'nothing'}; an LI / I is mapped as the readout before the Output")
    if x.kind == SPIKES and len(x.nir_shape) == 1:
        x = _identity_synapse(b, f"{name}.in", x)
    if x.kind != CURRENT:
        raise b.fail(name, f"reads a {x.kind} value; an LI / I readout reads an Affine / Linear or a neuron vector")
    where = Where(name, primitive(node), x.shape[-1], b.dt)
    integration = INTEGRATORS.get(primitive(node), name)(where, node)
    b.graph.meta.setdefault("nir_approximations", []).append({"node": name, "what": integration.note})
    return _readout_of_synapse(b, name, x, integration.scale, integration.bias)


# ------------------------------------------------------------------------------------------------ synapses
def _conv_node(b: Build, name: str, src: str, weight: np.ndarray, bias: np.ndarray, geometry: dict[str, Any]) -> Node:
    """A conv node; ``weight`` in torch layout (out, in / groups, kH, kW), stored channels-last."""
    attrs = {"in_channels": geometry["in_channels"], "out_channels": int(weight.shape[0]), **geometry}
    params = {"weight": np.ascontiguousarray(np.asarray(weight, np.float64).transpose(0, 2, 3, 1))}
    params["bias"] = np.asarray(bias, np.float64)
    return Node(name, "conv", [src], attrs, params)


def _geometry(cin: int, kernel: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: int = 1) -> dict:
    def pair(v: Any) -> tuple[int, int]:
        flat = [int(x) for x in np.ravel(v)]
        return (flat[0], flat[0]) if len(flat) == 1 else (flat[0], flat[1])

    return {
        "in_channels": cin,
        "kernel": pair(kernel),
        "stride": pair(stride),
        "padding": pair(padding),
        "dilation": pair(dilation),
        "groups": int(groups),
    }


def _identity_synapse(b: Build, name: str, x: Value) -> Value:
    """A neuron or readout that reads spikes or the input directly: an identity synapse in front of it."""
    c = x.shape[-1]
    if x.kind == SPIKES and len(x.nir_shape) == 1:
        b.emit(Node(name, "dense", [x.node], {"in_features": c, "out_features": c}, {"weight": np.eye(c)}))
    else:  # a map, or the analog input: a depthwise 1 x 1 conv of ones
        b.emit(_conv_node(b, name, x.node, np.ones((c, 1, 1, 1)), np.zeros(c), _geometry(c, 1, groups=c)))
    return Value(name, x.shape, CURRENT, x.nir_shape)


def _pool_synapse(b: Build, x: Value) -> Value:
    """A pooling a neuron reads: a depthwise conv of ones (1 / k^2 for an average)."""
    pool = x.pool
    assert pool is not None
    c = pool.src_shape[-1]
    weight = np.full((c, 1, *pool.kernel), 1.0 / (np.prod(pool.kernel) if pool.average else 1.0))
    geometry = _geometry(c, pool.kernel, pool.stride, pool.padding, groups=c)
    b.emit(_conv_node(b, pool.name, x.node, weight, np.zeros(c), geometry))
    return Value(pool.name, x.shape, CURRENT, x.nir_shape)


def _affine_bias(node: Any, out: int) -> np.ndarray:
    bias = getattr(node, "bias", None)
    return np.zeros(out) if bias is None else np.asarray(bias, np.float64).reshape(out)


@PRIMITIVES.register("Affine", "Linear")
def _affine(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    x = one_input(b, name, ins)
    weight = np.asarray(node.weight, np.float64)
    if weight.ndim != 2:
        raise b.fail(name, f"weight of shape {weight.shape}: expected (out, in)")
    out, n_in = weight.shape
    bias = _affine_bias(node, out)
    if x.kind == CURRENT:
        raise b.fail(name, "reads another synapse's sum; put a neuron layer between two Affine / Conv layers")
    if x.flat_of is not None:  # a flattened map: a conv whose kernel is the whole (pooled) map
        c, *spatial = x.flat_of
        if c * int(np.prod(spatial)) != n_in:
            raise b.fail(name, f"has {n_in} inputs, the flattened map {x.flat_of} has {int(np.prod(x.flat_of))}")
        kernel = weight.reshape(out, c, *([1] * (2 - len(spatial)) + spatial))
        src_shape = x.shape
        if x.pool is not None:
            kernel, src_shape = _unpool(b, name, kernel, x.pool), x.pool.src_shape
        geometry = _geometry(c, kernel.shape[2:])
        b.emit(_conv_node(b, name, x.node, kernel, bias, geometry))
        if conv_out_size(src_shape[0], kernel.shape[2], 1, 0, 1) != 1:  # pragma: no cover - shapes agree above
            raise b.fail(name, "the flattened map does not fit the kernel")
        return Value(name, (1, 1, out), CURRENT, (out,))
    if len(x.nir_shape) != 1 or x.pool is not None:
        raise b.fail(name, f"reads a map of shape {x.nir_shape}; flatten it first (a Flatten node)")
    if x.nir_shape[0] != n_in:
        raise b.fail(name, f"has {n_in} inputs, its input has {x.nir_shape[0]} values")
    if x.kind == ANALOG:  # the op that reads analog samples: a 1 x 1 conv over the (1, 1, N) input
        b.emit(_conv_node(b, name, x.node, weight[:, :, None, None], bias, _geometry(n_in, 1)))
    else:
        attrs = {"in_features": n_in, "out_features": out}
        b.emit(Node(name, "dense", [x.node], attrs, {"weight": weight, "bias": bias}))
    return Value(name, (1, 1, out), CURRENT, (out,))


def _unpool(b: Build, name: str, kernel: np.ndarray, pool: Pool) -> np.ndarray:
    """An Affine over a pooled, flattened map folded onto the map before the pooling (windows that do not overlap
    and no padding: each pooled position is the sum, or mean, of its own window)."""
    if pool.kernel != pool.stride or any(pool.padding):
        raise b.fail(name, f"reads pooling '{pool.name}' with overlapping windows or padding through a Flatten")
    h, w = pool.src_shape[:2]
    kh, kw = pool.kernel
    full = np.zeros((*kernel.shape[:2], h, w))
    ph, pw = kernel.shape[2:]
    full[:, :, : ph * kh, : pw * kw] = np.repeat(np.repeat(kernel, kh, axis=2), kw, axis=3)
    return full / (kh * kw) if pool.average else full


def _conv_padding(b: Build, name: str, node: Any, kernel: tuple[int, ...], dilation: tuple[int, ...]) -> Any:
    padding = node.padding
    if isinstance(padding, bytes):
        padding = padding.decode()
    if isinstance(padding, str):
        if padding == "valid":
            return 0
        total = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
        if any(t % 2 for t in total):
            raise b.fail(name, "padding 'same' with an even kernel pads unevenly; give integer padding")
        return [t // 2 for t in total]
    return padding


@PRIMITIVES.register("Conv2d", "Conv1d")
def _conv(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    x = one_input(b, name, ins)
    one_d = primitive(node) == "Conv1d"
    if x.kind == CURRENT or x.pool is not None or x.flat_of is not None or len(x.nir_shape) != (2 if one_d else 3):
        raise b.fail(name, f"reads a {x.kind} value of shape {x.nir_shape}; a conv reads a spike map or the input")
    weight = np.asarray(node.weight, np.float64)
    stride, dilation = node.stride, node.dilation
    if one_d:  # (out, in, k) over a (C, N) signal: a 1 x k conv over a 1 x N map
        weight = weight[:, :, None, :]
        stride, dilation = (1, int(np.ravel(stride)[0])), (1, int(np.ravel(dilation)[0]))
    pairs = _geometry(1, weight.shape[2:], stride, 0, dilation)
    padding = _conv_padding(b, name, node, weight.shape[2:], pairs["dilation"])
    if one_d:
        padding = (0, int(np.ravel(padding)[-1]))
    geometry = _geometry(x.shape[-1], weight.shape[2:], stride, padding, dilation, int(node.groups))
    if weight.shape[1] * geometry["groups"] != x.shape[-1]:
        raise b.fail(name, f"weight of shape {weight.shape} reads {x.shape[-1]} channels in {node.groups} groups")
    node_ir = b.emit(_conv_node(b, name, x.node, weight, _affine_bias(node, weight.shape[0]), geometry))
    h, w = (conv_out_size(x.shape[i], weight.shape[2 + i], geometry["stride"][i], geometry["padding"][i],
                          geometry["dilation"][i]) for i in (0, 1))  # fmt: skip
    out = int(weight.shape[0])
    return Value(node_ir, (h, w, out), CURRENT, (out, w) if one_d else (out, h, w))


@PRIMITIVES.register("Flatten")
def _flatten(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    x = one_input(b, name, ins)
    size = int(np.prod(x.nir_shape))
    if len(x.nir_shape) == 1:
        return x
    out = np.ravel(node.output_type.get("output")) if node.output_type.get("output") is not None else [size]
    if len(out) != 1:
        raise b.fail(name, f"flattens {x.nir_shape} to {tuple(out)}; supported: every axis into one vector")
    return Value(x.node, x.shape, x.kind, (size,), flat_of=x.flat_of or x.nir_shape, pool=x.pool)


@PRIMITIVES.register("SumPool2d", "AvgPool2d")
def _pool(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    x = one_input(b, name, ins)
    if x.kind == CURRENT or x.pool is not None or x.flat_of is not None or len(x.nir_shape) != 3:
        raise b.fail(name, f"pools a {x.kind} value of shape {x.nir_shape}; supported: a spike map (C, H, W)")
    g = _geometry(x.shape[-1], node.kernel_size, node.stride, node.padding)
    pool = Pool(name, g["kernel"], g["stride"], g["padding"], primitive(node) == "AvgPool2d", x.shape)
    h, w = (conv_out_size(x.shape[i], g["kernel"][i], g["stride"][i], g["padding"][i], 1) for i in (0, 1))
    return Value(x.node, (h, w, x.shape[-1]), x.kind, (x.nir_shape[0], h, w), pool=pool)


@PRIMITIVES.register("Scale")
def _scale(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    x = one_input(b, name, ins)
    if x.kind != CURRENT or x.node in b.claimed:
        raise b.fail(name, "scales a value that is not a synapse's sum; supported: a Scale right after Affine / Conv")
    syn = b.graph.nodes[x.node]
    c = syn.params["weight"].shape[0]
    scale = Where(name, "Scale", c, b.dt)

    s = per_channel(scale, "scale", node.scale)
    syn.params["weight"] = syn.params["weight"] * s.reshape(-1, *([1] * (syn.params["weight"].ndim - 1)))
    syn.params["bias"] = syn.params["bias"] * s
    return x


# ------------------------------------------------------------------------------------------------- neurons
def _synapse_of(b: Build, name: str, x: Value) -> str:
    """The synapse node a neuron reads for the value ``x`` (made where ``x`` is no synapse's sum), claimed."""
    if x.pool is not None:
        x = _pool_synapse(b, x)
    elif x.kind in (SPIKES, ANALOG, "integer"):
        x = _identity_synapse(b, f"{name}.in.{x.node}", x)
    if x.node in b.claimed:
        raise b.fail(name, f"reads '{x.node}', which already feeds another neuron; a synapse feeds one neuron layer")
    b.claimed.add(x.node)
    return x.node


@PRIMITIVES.register(*NEURONS)
def _neuron(b: Build, name: str, node: Any, ins: list[Value]) -> Value:
    shapes = {v.shape for v in ins}
    if len(shapes) != 1:
        raise b.fail(name, f"sums inputs of different shapes {sorted(shapes)}")
    x = ins[0]
    channels = int(x.shape[-1])
    dyn = NEURONS.get(primitive(node), name)(Where(name, primitive(node), channels, b.dt), node)
    bias = dyn.bias.copy()
    synapses = [_synapse_of(b, name, v) for v in ins]
    for syn_name in synapses:
        params = b.graph.nodes[syn_name].params
        w = params["weight"]
        params["weight"] = w * dyn.gain.reshape(-1, *([1] * (w.ndim - 1)))
        bias += params.pop("bias", np.zeros(channels)) * dyn.bias_gain
    attrs = {"tau": dyn.tau_steps, "v_threshold": dyn.threshold, "du": dyn.du, "dv": dyn.dv}
    b.emit(Node(name, "lif", synapses, attrs, {"bias": bias}))
    b.dynamics[name] = dyn
    return Value(name, x.shape, SPIKES, x.nir_shape if not x.flat_of else x.nir_shape)
