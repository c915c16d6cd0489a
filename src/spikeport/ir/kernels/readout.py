"""readout: logits = sum_t (sum_tokens(x) W^T << weight_exp + bias), on the host (I/O): the argmax is that of
the float head on mean(tokens, time) because the gain is a positive power of two and the bias is pre-multiplied."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spikeport import counting as C, fixedpoint as fx
from spikeport.fixedpoint import Array, Ops
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import (
    Attr,
    Counts,
    Kernel,
    OpSpec,
    Param,
    PlanOptions,
    QuantError,
    Shape,
    Step,
    floor_log2,
    positive,
    tokens,
)
from spikeport.ir.kernels.synapse import EXP, W8
from spikeport.value_kinds import INTEGER, LOGITS, SPIKES


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    q = ctx.qparams[node.name]
    return fx.readout(ctx.ops, tokens(ins[0]), q["weight_mant"], q["bias_int"], node.attrs["weight_exp"])


def _check_weight(node: Node, shapes: list[Shape]) -> str | None:
    """The weight reads the input's channels: a wrong shape would fail only in the middle of a run."""
    weight = node.params.get("weight_mant", node.params.get("weight"))
    expected = (node.attrs["classes"], shapes[0][-1])
    if weight is not None and tuple(weight.shape) != expected:
        return f"parameter 'weight_mant' has shape {tuple(weight.shape)}, expected {expected} (classes, input channels)"
    return None


def _count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    x = ins[0]
    return {
        "macs": x.shape[0] * C.dense_macs(1, x.shape[-1], node.attrs["classes"]),
        "synops_valued": ops.total(x),
    }  # the token sum


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    w = np.abs(node.params["weight"]).max()
    node.attrs["weight_exp"] = 0
    node.attrs["gain"] = float(2.0 ** floor_log2(127 / w)) if w > 0 else 1.0  # power of 2: exact scaling
    node.attrs["tokens"] = int(np.prod(graph.nodes[node.inputs[0]].shape[:-1]))


def _quantize(node: Node, p: Mapping[str, Any], ops: Ops) -> dict[str, Any]:
    a = node.attrs
    return {
        "weight_mant": ops.clip(ops.round(p["weight"] * a["gain"]), fx.WEIGHT_MIN, fx.WEIGHT_MAX),
        "bias_int": ops.round(p["bias"] * a["gain"] * a["tokens"]),
    }


KERNELS.add(
    "readout",
    Kernel(
        OpSpec(
            "readout",
            (SPIKES, INTEGER),
            (1, 1),
            LOGITS,
            (
                Attr("classes", int, check=positive),
                EXP,
                Attr("gain", float, True, check=lambda v: None if v > 0 else "must be > 0", optional=True),
                Attr("tokens", int, True, check=positive, optional=True),
            ),
            (Param("weight", "weight_mant", W8), Param("bias", "bias_int", (-(2**31), 2**31 - 1))),
            lambda node, shapes: (node.attrs["classes"],),
            lambda node, layout: {"bias": (node.attrs["classes"],)},
            doc=__doc__ or "",
            check=_check_weight,
        ),
        step=_step,
        plan=_plan,
        quantize=_quantize,
        quant_error=QuantError("weight", "weight_mant", lambda node: 1 / node.attrs["gain"], W8),
        count=_count,
        counters=("macs", "synops_valued"),
    ),
)
