"""The table of IR node types: attributes, parameters, inputs, output shape and value kind.

Shapes are per sample and time step, channels-last. Maps and token grids are both ``(H, W, C)``: the tokens
of a transformer block are the H x W grid positions in raster order, so no reshape node is needed.
Value kinds say what travels on an edge: ``analog`` (quantized pixels), ``spikes`` (0/1), ``integer``
(residual sums of spikes, small non-negative integers), ``activation`` (a synaptic input ``a_in`` that only
a ``lif`` consumes, summed over all its inputs as Lava sums connections on ``a_in``), ``logits``.

op          inputs                 output      equation (quantized graph; see fixedpoint.py)
input       -                      analog      x = clip(round(pixel * 2**frac_bits), +-(2**(bits-1) - 1)), every t
                                               (a graded-spike payload; 16 bits by default); with attribute
                                               kind='spikes' (netx imports): 0/1 spikes [B, T, ...] per t
conv        analog|spikes|integer  activation  a = conv2d(x, W) << weight_exp   (floor shift if < 0)
dense       spikes|integer         activation  a = (x W^T) << weight_exp         (per token)
attention   q, k, v spikes         activation  a = core(q, k, v) * out_mant << out_exp, core = Q(K^T V) |
                                               causal running sum (variant)
dendritic   q, k, v spikes         activation  a = q * g(k * v) * out_mant << out_exp, g from the
                                               dendritic recursion over tokens (DendriticParams)
lif         activation (1 or more) spikes      Loihi LIF on a_in = sum of inputs (LifParams)
maxpool     spikes                 spikes      max over the window (= OR on spikes)
add         spikes|integer (>= 2)  integer     elementwise sum (SEW residual)
readout     spikes|integer         logits      sum_t (sum_tokens(x) W^T << weight_exp + bias)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.errors import ConversionError


@dataclass(frozen=True)
class Attr:
    name: str
    kind: type | tuple                    # int, float, str, tuple (of ints)
    quantized_only: bool = False          # present only after the quantize pass
    check: Callable | None = None         # value -> error text or None


@dataclass(frozen=True)
class Param:
    name: str                             # float name before quantization
    qname: str                            # integer name after quantization
    qrange: tuple[int, int] | None = None # allowed integer range after quantization
    float_optional: bool = False          # may be absent before quantization (added by a pass)


@dataclass(frozen=True)
class OpSpec:
    op: str
    input_kinds: tuple[str, ...]          # accepted kinds of every input
    n_inputs: tuple[int, int]             # min, max
    out_kind: str
    attrs: tuple[Attr, ...] = ()
    params: tuple[Param, ...] = ()
    infer_shape: Callable | None = None   # (node, input shapes) -> shape
    doc: str = ""


def _between(lo, hi):
    return lambda v: None if lo <= v <= hi else f"must be in [{lo}, {hi}]"


def _positive(v):
    return None if (all(x > 0 for x in v) if isinstance(v, tuple) else v > 0) else "must be > 0"


def _pair(v):
    return None if len(v) == 2 and all(x >= 0 for x in v) else "must be two non-negative ints"


def _conv_shape(node, shapes):
    (h, w, c), a = shapes[0], node.attrs
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = a["kernel"], a["stride"], a["padding"], a["dilation"]
    if c != a["in_channels"]:
        raise ConversionError(f"node '{node.name}': input has {c} channels, in_channels={a['in_channels']}")
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return ho, wo, a["out_channels"]


def _dense_shape(node, shapes):
    if shapes[0][-1] != node.attrs["in_features"]:
        raise ConversionError(f"node '{node.name}': input has {shapes[0][-1]} features, "
                              f"in_features={node.attrs['in_features']}")
    return shapes[0][:-1] + (node.attrs["out_features"],)


def _same_shape(node, shapes):
    if any(s != shapes[0] for s in shapes):
        raise ConversionError(f"node '{node.name}': inputs have different shapes {shapes}")
    return shapes[0]


def _pool_shape(node, shapes):
    h, w, c = shapes[0]
    k, s, p = node.attrs["kernel"], node.attrs["stride"], node.attrs["padding"]
    return (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1, c


def _heads_shape(node, shapes):
    shape = _same_shape(node, shapes)
    if shape[-1] % node.attrs["heads"]:
        raise ConversionError(f"node '{node.name}': {shape[-1]} channels not divisible by heads")
    return shape


W8 = (fx.WEIGHT_MIN, fx.WEIGHT_MAX)
EXP = Attr("weight_exp", int, True, _between(-16, 16))

OPS: dict[str, OpSpec] = {s.op: s for s in (
    OpSpec("input", (), (0, 0), "analog",
           (Attr("frac_bits", int, True, _between(-8, 24)), Attr("bits", int, True, _between(2, 24))),
           infer_shape=lambda node, shapes: node.shape),
    OpSpec("conv", ("analog", "spikes", "integer"), (1, 1), "activation",
           (Attr("in_channels", int, check=_positive), Attr("out_channels", int, check=_positive),
            Attr("kernel", tuple, check=_positive), Attr("stride", tuple, check=_positive),
            Attr("padding", tuple, check=_pair), Attr("dilation", tuple, check=_positive),
            Attr("groups", int, check=_positive), EXP),
           (Param("weight", "weight_mant", W8),), _conv_shape),
    OpSpec("dense", ("spikes", "integer"), (1, 1), "activation",
           (Attr("in_features", int, check=_positive), Attr("out_features", int, check=_positive), EXP),
           (Param("weight", "weight_mant", W8),), _dense_shape),
    OpSpec("attention", ("spikes",), (3, 3), "activation",
           (Attr("heads", int, check=_positive),
            Attr("variant", str, check=lambda v: None if v in ("ssa", "causal") else "must be ssa|causal"),
            Attr("scale", float), Attr("out_mant", int, True, _between(*W8)),
            Attr("out_exp", int, True, _between(-24, 16))),
           (), _heads_shape),
    OpSpec("dendritic", ("spikes",), (3, 3), "activation",
           (Attr("heads", int, check=_positive), Attr("num_dendrites", int, check=_positive),
            Attr("scale", float), Attr("a_shift", int, True, _between(0, 16)),
            Attr("c_shift", int, True, _between(0, 16)), Attr("out_mant", int, True, _between(*W8)),
            Attr("out_exp", int, True, _between(-24, 16))),
           (Param("transition", "a_mant", (-(2 ** 15), 2 ** 15 - 1)),
            Param("gamma", "gamma_mant", (-(2 ** 15), 2 ** 15 - 1)),
            Param("readout", "c_mant", (-(2 ** 15), 2 ** 15 - 1))), _heads_shape),
    OpSpec("lif", ("activation",), (1, 64), "spikes",
           (Attr("tau", float, check=lambda v: None if v >= 1 else "must be >= 1"),
            Attr("v_threshold", float, check=lambda v: None if v > 0 else "must be > 0"),
            Attr("du", int, True, _between(0, 4095)), Attr("dv", int, True, _between(0, 4095)),
            Attr("vth", int, True, _between(0, fx.VTH_MAX)),
            Attr("bias_exp", int, True, _between(0, fx.BIAS_EXP_MAX))),
           (Param("bias", "bias_mant", (fx.BIAS_MANT_MIN, fx.BIAS_MANT_MAX), float_optional=True),),
           _same_shape),
    OpSpec("maxpool", ("spikes",), (1, 1), "spikes",
           (Attr("kernel", int, check=_positive), Attr("stride", int, check=_positive),
            Attr("padding", int, check=_between(0, 8))), (), _pool_shape),
    OpSpec("add", ("spikes", "integer"), (2, 64), "integer", (), (), _same_shape),
    OpSpec("readout", ("spikes", "integer"), (1, 1), "logits",
           (Attr("classes", int, check=_positive), EXP),
           (Param("weight", "weight_mant", W8), Param("bias", "bias_int", (-(2 ** 31), 2 ** 31 - 1))),
           lambda node, shapes: (node.attrs["classes"],)),
)}


def value_kind(graph, name: str) -> str:
    node = graph.nodes[name]
    if node.op == "input" and node.attrs.get("kind") == "spikes":    # netx networks: spike input
        return "spikes"
    return OPS[node.op].out_kind


def validate_node(graph, node) -> None:
    """Attributes, parameter ranges, input kinds and the output shape of one node."""
    spec = OPS.get(node.op)
    if spec is None:
        raise ConversionError(f"node '{node.name}': unknown op '{node.op}'; known ops: {sorted(OPS)}")
    lo, hi = spec.n_inputs
    if not lo <= len(node.inputs) <= hi:
        raise ConversionError(f"node '{node.name}' ({node.op}): {len(node.inputs)} inputs, expected {lo}..{hi}")
    for src in node.inputs:
        kind = value_kind(graph, src)
        if kind not in spec.input_kinds:
            raise ConversionError(f"node '{node.name}' ({node.op}) cannot read '{src}' of kind {kind}; "
                                  f"expected {'|'.join(spec.input_kinds)}")
    for attr in spec.attrs:
        if attr.quantized_only and not graph.quantized:
            continue
        if attr.name not in node.attrs:
            raise ConversionError(f"node '{node.name}' ({node.op}): missing attribute '{attr.name}'")
        value = node.attrs[attr.name]
        kinds = attr.kind if isinstance(attr.kind, tuple) else (attr.kind,)
        if attr.kind is float and isinstance(value, (int, np.integer)):
            value = float(value)
        if not isinstance(value, kinds) or (attr.kind is int and isinstance(value, bool)):
            raise ConversionError(f"node '{node.name}': attribute '{attr.name}' = {value!r} is not "
                                  f"{'/'.join(k.__name__ for k in kinds)}")
        problem = attr.check(value) if attr.check else None
        if problem:
            raise ConversionError(f"node '{node.name}': attribute '{attr.name}' = {value!r} {problem}")
    for p in spec.params:
        key = p.qname if graph.quantized else p.name
        if key not in node.params and not (p.float_optional and not graph.quantized):
            raise ConversionError(f"node '{node.name}' ({node.op}): missing parameter '{key}'")
        arr = node.params.get(key)
        if arr is not None and graph.quantized and p.qrange is not None:
            if not np.issubdtype(arr.dtype, np.integer):
                raise ConversionError(f"node '{node.name}': parameter '{key}' has dtype {arr.dtype}, expected integers")
            if arr.size and (arr.min() < p.qrange[0] or arr.max() > p.qrange[1]):
                raise ConversionError(f"node '{node.name}': parameter '{key}' has values in "
                                      f"[{arr.min()}, {arr.max()}], allowed {list(p.qrange)}")
    if spec.infer_shape is not None:
        shapes = [graph.nodes[s].shape for s in node.inputs]
        inferred = tuple(int(x) for x in spec.infer_shape(node, shapes))
        if node.shape and inferred != node.shape:
            raise ConversionError(f"node '{node.name}': shape {node.shape} does not match the shape "
                                  f"{inferred} inferred from its inputs and attributes")
        node.shape = inferred
    _check_param_shapes(node, graph.meta.get("layout", "channels_last"))


def _check_param_shapes(node, layout: str) -> None:
    a, p = node.attrs, node.params

    def expect(key: str, shape: tuple):
        qname = next(q.qname for q in OPS[node.op].params if q.name == key)
        for name in (key, qname):
            if name in p and tuple(p[name].shape) != tuple(shape):
                raise ConversionError(f"node '{node.name}': parameter '{name}' has shape {tuple(p[name].shape)}, "
                                      f"expected {tuple(shape)}")

    if node.op == "conv":
        cin = a["in_channels"] // a["groups"]
        expect("weight", (a["out_channels"], *a["kernel"], cin) if layout == "channels_last"
               else (a["out_channels"], cin, *a["kernel"]))
    elif node.op == "dense":
        expect("weight", (a["out_features"], a["in_features"]))
    elif node.op == "dendritic":
        h, k = a["heads"], a["num_dendrites"]
        expect("transition", (h, k, k)), expect("gamma", (h, k)), expect("readout", (h, k))
    elif node.op == "readout":
        expect("bias", (a["classes"],))
    elif node.op == "lif" and node.shape:
        expect("bias", (node.shape[-1],))
