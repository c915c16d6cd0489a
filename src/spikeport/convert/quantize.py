"""Quantization to Loihi 2 fixed point: plan the scales, then turn float parameters into integers.

Each LIF group gets a power-of-two scale sigma = 2**s: its membrane potential in Loihi units is
``v_int = 64 * sigma * v_float`` (64: Loihi's 6-bit MSB alignment of a_in and vth). Then

    threshold    vth       = round(sigma * v_threshold)                   (exact: sigma and 0.5 are powers of 2)
    bias         bias_mant << bias_exp = 64 * sigma * b / tau
    conv/dense   weight_mant << weight_exp = sigma * in_scale * W / tau     (in_scale = 2**-frac_bits for pixels)
    attention    out_mant << out_exp = sigma * s / tau
    dendritic    out_mant[h] << out_exp[h] = sigma * s / tau / 2**kernel_exp[h], kernel K * 2**kernel_exp[h]

s is the largest value that keeps every conv/dense path's largest mantissa >= 64 (full 8-bit use),
capped so that vth fits 17 bits and, with calibration statistics, the largest synaptic input stays
below 2**16 (half of the 2**17 that would wrap the 24-bit current u). Synapses that read integer
(residual-sum) inputs never get a negative exponent, so a Dense reading x1 + x2 equals the sum of two
Dense connections on x1 and x2 bit for bit (that is how the Lava backend realises residual adds); nor do
spike-driven convs, because Lava's CPU Conv model applies no exponent (weights are pre-scaled instead).
Each op's part of the plan is in its kernel record (``spikeport.ir.kernels``: ``plan`` for node-local
choices, ``synapse`` for a path into a LIF group, ``quantize`` for the integers). The plan lives in node
attributes; ``apply`` computes integers from floats with any ``ops`` backend, so the fake-quant executor
re-quantizes trainable float weights with the same code (QAT).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import kernel
from spikeport.ir.kernels.base import PlanOptions, mantissa_exp  # noqa: F401  (mantissa_exp: public helper)
from spikeport.ir.kernels.synapse import in_scale_exp, weight_exponent  # noqa: F401

DEFAULT_INPUT_RANGE = 4.0  # |pixel| after normalization when no data are given
INPUT_BITS = 16  # pixels enter as 16-bit graded spikes: 8 bits cost ~1 pp on digits


def plan(
    graph: Graph, stats: dict[str, Any] | None = None, input_range: float | None = None, input_bits: int = INPUT_BITS
) -> Graph:
    """Choose frac_bits, sigma exponents, weight exponents and shifts (node attrs), node by node in
    topological order (each record's ``plan``). ``stats`` maps a lif node name to the calibrated max
    |input| (pre-neuron, before 1/tau) over data."""
    check_finite(graph, stats, input_range)
    options = PlanOptions(stats or {}, input_range or DEFAULT_INPUT_RANGE, int(input_bits))
    for name in graph.order:
        node = graph.nodes[name]
        planner = kernel(node.op, name).plan
        if planner is not None:
            planner(graph, node, options)
    graph.meta["quantization_plan"] = {"input_range": options.input_range, "calibrated": bool(stats)}
    return graph


def check_finite(graph: Graph, stats: dict[str, Any] | None = None, input_range: float | None = None) -> None:
    """Every float that quantization turns into integers is finite: a NaN or inf weight, bias, attribute or
    calibration statistic would become a saturated integer (a NaN conv weight once converted to -128 everywhere)
    and the artifact another model. ConversionError naming the tensor otherwise."""
    for name in graph.order:
        node = graph.nodes[name]
        for key, value in node.params.items():
            arr = np.asarray(value)
            if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
                bad = int((~np.isfinite(arr)).sum())
                raise ConversionError(
                    f"node '{name}': parameter '{key}' holds {bad} non-finite value(s) (NaN or inf) of {arr.size}: "
                    "it cannot be quantized (expected finite weights)"
                )
        for key, value in node.attrs.items():
            if isinstance(value, float) and not np.isfinite(value):
                raise ConversionError(f"node '{name}': attribute '{key}' = {value} cannot be quantized (not finite)")
    for name, value in (stats or {}).items():
        if not np.isfinite(value):
            raise ConversionError(
                f"calibration: the input of '{name}' reached {value} on the calibration images (expected finite "
                "activations: NaN or inf weights, or inputs?)"
            )
    if input_range is not None and not np.isfinite(input_range):
        raise ConversionError(f"calibration: the input images reach {input_range} (expected finite pixels)")


def apply(graph: Graph, ops: fx.Ops = fx.INT, params: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Integer parameters of every node from its float ones and the plan: {node: {qname: array}}.

    ``params`` overrides the float parameters (the fake-quant executor passes trainable tensors)."""
    out: dict[str, dict[str, Any]] = {}
    for node in graph.nodes.values():
        quantizer = kernel(node.op, node.name).quantize
        if quantizer is not None:
            out[node.name] = quantizer(node, (params or {}).get(node.name, node.params), ops)
    return out


def quantize(
    graph: Graph, stats: dict[str, Any] | None = None, input_range: float | None = None, input_bits: int = INPUT_BITS
) -> Graph:
    """plan + finalize, in place."""
    if graph.quantized:
        raise ConversionError("graph is already quantized")
    return finalize(plan(graph, stats, input_range, input_bits))


def finalize(graph: Graph) -> Graph:
    """A planned float graph -> integers (in place); per-node quantization errors go to graph.meta."""
    ints = apply(graph)
    report = {}
    for name, qparams in ints.items():
        node = graph.nodes[name]
        report[name] = quantization_error(graph, node, qparams)
        node.params = {k: np.asarray(v, dtype=np.int32) for k, v in qparams.items()}
    graph.quantized = True
    graph.meta["quantization"] = report
    return graph


def quantization_error(graph: Graph, node: Node, qparams: dict[str, Any]) -> dict[str, Any]:
    """Relative L2 error of the dequantized parameter and the number of values clipped at the range."""
    rule = kernel(node.op, node.name).quant_error
    if rule is None:
        raise ConversionError(f"node '{node.name}' ({node.op}) has integer parameters but no quantization-error rule")
    ref = rule.reference(node) if rule.reference is not None else node.params[rule.param]
    lim = rule.limits
    q = np.asarray(qparams[rule.qname], np.float64)
    denom = float(np.linalg.norm(ref)) or 1.0
    return {
        "param": rule.qname,
        "rel_error": float(np.linalg.norm(q * rule.scale(node) - ref) / denom),
        "saturated": int(np.sum((q <= lim[0]) | (q >= lim[1])) if q.size else 0),
        "size": int(q.size),
    }
