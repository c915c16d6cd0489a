"""A graph checked against its ops' records (``validate``) and its shapes filled in (``infer_shapes``).

The records live in ``ir/kernels/`` (one per op); the graph itself (``ir/graph.py``) is data and knows no
op. Shapes are per sample and time step, channels-last: maps and token grids are both ``(H, W, C)``, the
tokens of a transformer block are the grid positions in raster order, so no reshape node is needed. Value
kinds say what travels on an edge (``spikeport.value_kinds``: analog, spikes, integer, graded, activation,
logits). The table of ops with their equations is docs/ops.md (a test keeps it in step with the records).
"""

from __future__ import annotations

import math

import numpy as np

from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS, spec, value_kind
from spikeport.ir.kernels.base import Attr, Shape
from spikeport.value_kinds import ACTIVATION


def validate(graph: Graph) -> None:
    """Check ``graph`` against its ops' records, changing nothing: the connectivity, every node (its op, its
    inputs and their value kinds, attributes, parameters with their integer ranges and shapes) and every
    node's shape, which must be the one its op's rule infers from its inputs (``infer_shapes`` fills them
    in). Raises a ConversionError naming the node."""
    readers = _check_connectivity(graph)
    for name in graph.order:  # raises ConversionError on a cycle, before any node is checked
        node = graph.nodes[name]
        _check_signature(graph, node)
        _check_attrs(graph, node)
        op_spec = spec(node.op)
        problem = op_spec.check(node, _input_shapes(graph, node)) if op_spec.check else None
        if problem:
            raise ConversionError(f"node '{node.name}' ({node.op}): {problem}")
        _check_params(graph, node)
        inferred = _inferred_shape(graph, node)
        if inferred is not None and inferred != node.shape:
            raise _shape_mismatch(node, inferred)
        _check_param_shapes(node, graph.meta.get("layout", "channels_last"))
    for src, names in readers.items():
        if len(names) > 1 and value_kind(graph, src) == ACTIVATION:  # synaptic current into one neuron's a_in
            raise ConversionError(
                f"node '{src}' is a synaptic input (activation) and feeds one neuron group, not {len(names)}: "
                f"{', '.join(names)}"
            )


def infer_shapes(graph: Graph) -> Graph:
    """Set every node's shape to the one its op's rule infers from its inputs and attributes, in topological
    order, and return ``graph``; a shape already set must agree. What the rules read is checked first (the
    connectivity, each node's op, inputs and attributes); ``validate`` checks the rest."""
    _check_connectivity(graph)
    for name in graph.order:
        node = graph.nodes[name]
        _check_signature(graph, node)
        _check_attrs(graph, node)
        inferred = _inferred_shape(graph, node)
        if inferred is None:
            continue
        if node.shape and inferred != node.shape:
            raise _shape_mismatch(node, inferred)
        node.shape = inferred
    return graph


def _check_connectivity(graph: Graph) -> dict[str, list[str]]:
    """Every input names a node, once; returns each node's readers."""
    readers: dict[str, list[str]] = {}
    for node in graph.nodes.values():
        for src in node.inputs:
            if src not in graph.nodes:
                raise ConversionError(f"node '{node.name}' reads unknown node '{src}'")
            if node.inputs.count(src) > 1:  # Lava connects a port pair once
                raise ConversionError(f"node '{node.name}' reads node '{src}' twice")
            readers.setdefault(src, []).append(node.name)
    return readers


def _check_signature(graph: Graph, node: Node) -> None:
    """A known op, its number of inputs and their value kinds."""
    if node.op not in KERNELS:
        raise ConversionError(f"node '{node.name}': unknown op '{node.op}'; known ops: {', '.join(KERNELS)}")
    op_spec = spec(node.op)
    lo, hi = op_spec.n_inputs
    if not lo <= len(node.inputs) <= hi:
        raise ConversionError(f"node '{node.name}' ({node.op}): {len(node.inputs)} inputs, expected {lo}..{hi}")
    for src in node.inputs:
        kind = value_kind(graph, src)
        if kind not in op_spec.input_kinds:
            raise ConversionError(
                f"node '{node.name}' ({node.op}) cannot read '{src}' of kind {kind}; "
                f"expected {'|'.join(op_spec.input_kinds)}"
            )


def _check_attrs(graph: Graph, node: Node) -> None:
    op_spec = spec(node.op)
    if graph.quantized:  # an artifact holds what its op's record knows and nothing else
        unknown = sorted(set(node.attrs) - {attr.name for attr in op_spec.attrs})
        if unknown:
            raise ConversionError(f"node '{node.name}' ({node.op}): unknown attribute '{unknown[0]}'")
    for attr in op_spec.attrs:
        if attr.quantized_only and not graph.quantized:
            continue
        if attr.name not in node.attrs:
            if attr.optional:
                continue
            raise ConversionError(f"node '{node.name}' ({node.op}): missing attribute '{attr.name}'")
        _check_attr(node, attr, node.attrs[attr.name])


def _check_params(graph: Graph, node: Node) -> None:
    """Every parameter the op needs in this form (float or integer), integers in their ranges."""
    for p in spec(node.op).params:
        key = p.qname if graph.quantized else p.name
        if key is None:  # float-only: folded into other parameters by quantization
            continue
        if key not in node.params and not (p.optional or p.float_optional and not graph.quantized):
            raise ConversionError(f"node '{node.name}' ({node.op}): missing parameter '{key}'")
        arr = node.params.get(key)
        if arr is not None and graph.quantized and p.qrange is not None:
            if not np.issubdtype(arr.dtype, np.integer):
                raise ConversionError(f"node '{node.name}': parameter '{key}' has dtype {arr.dtype}, expected integers")
            if arr.size and (arr.min() < p.qrange[0] or arr.max() > p.qrange[1]):
                raise ConversionError(
                    f"node '{node.name}': parameter '{key}' has values in "
                    f"[{arr.min()}, {arr.max()}], allowed {list(p.qrange)}"
                )


def _shape_mismatch(node: Node, inferred: Shape) -> ConversionError:
    return ConversionError(
        f"node '{node.name}': shape {node.shape} does not match the shape {inferred} inferred from its inputs "
        "and attributes"
    )


def _input_shapes(graph: Graph, node: Node) -> list[Shape]:
    return [graph.nodes[s].shape for s in node.inputs]


def _inferred_shape(graph: Graph, node: Node) -> Shape | None:
    """The shape the op's rule gives the node (None: the op has no rule)."""
    rule = spec(node.op).infer_shape
    return None if rule is None else tuple(int(x) for x in rule(node, _input_shapes(graph, node)))


def _check_attr(node: Node, attr: Attr, value: object) -> None:
    """Strict types (no bool for int, no string for a number, integers inside tuples, finite floats), then the
    attribute's own rule."""
    kinds = attr.kind if isinstance(attr.kind, tuple) else (attr.kind,)
    if attr.kind is float and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = float(value) if abs(value) < 2**1000 else math.inf  # float(10**400) overflows
    wrong = not isinstance(value, kinds) or (attr.kind is int and isinstance(value, bool))
    if isinstance(value, float) and not math.isfinite(value):
        wrong = True
    if isinstance(value, tuple) and not all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in value):
        wrong = True  # every tuple attribute is integers: kernel sizes, strides, per-head exponents
    if wrong:
        names = {tuple: "a tuple of ints", float: "a finite float", int: "an int", str: "a string"}
        what = "/".join(names.get(k, k.__name__) for k in kinds)
        raise ConversionError(f"node '{node.name}': attribute '{attr.name}' = {value!r} is not {what}")
    problem = attr.check(value) if attr.check else None
    if problem:
        raise ConversionError(f"node '{node.name}': attribute '{attr.name}' = {value!r} {problem}")


def _check_param_shapes(node: Node, layout: str) -> None:
    shapes = spec(node.op).param_shapes
    if shapes is None:
        return
    qnames = {p.name: p.qname for p in spec(node.op).params}
    for key, expected in shapes(node, layout).items():
        for name in (key, qnames[key]):
            if name is not None and name in node.params and tuple(node.params[name].shape) != tuple(expected):
                raise ConversionError(
                    f"node '{node.name}': parameter '{name}' has shape "
                    f"{tuple(node.params[name].shape)}, expected {tuple(expected)}"
                )
