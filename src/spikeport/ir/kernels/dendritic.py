"""dendritic: a = q * g(k * v) * out_mant << out_exp; g from the dendritic recursion over tokens n
(seed 004 Eq. 12-15, DESIGN.md section 2):
    X_n = clip24(trunc_shift(A X_{n-1}, a_shift) + gamma u_n),  g_n = trunc_shift(C^T X_n, c_shift)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.fixedpoint import Array, Ops
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
    SynapseRole,
    between,
    floor_log2,
    heads_shape,
    mantissa_exp,
    positive,
    tokens,
)
from spikeport.ir.kernels.synapse import W8
from spikeport.metrics import counting as C

if TYPE_CHECKING:
    from spikeport.ir.graph import Graph, Node

SHIFT = 12  # a_shift: A in 12 fractional bits
STATE_TARGET = 2**21  # dendritic |X_int| bound target (24-bit state, margin 4x)
M16 = (-(2**15), 2**15 - 1)
LIM16 = 2**15 - 1


def _prepare(node: Node, q: Mapping[str, np.ndarray]) -> fx.DendriticParams:
    a = node.attrs
    return fx.DendriticParams(q["a_mant"], q["gamma_mant"], q["c_mant"], a["a_shift"], a["c_shift"])


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a = node.attrs
    q, k, v = (tokens(x) for x in ins)
    core, extra["state_peak"] = fx.dendritic_core(ctx.ops, q, k, v, a["heads"], ctx.prepared[node.name])
    return fx.scale(ctx.ops, core, a["out_mant"], a["out_exp"]).reshape(ins[0].shape)


def _count(node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    q, k, v = (tokens(x) for x in ins)
    b, n, c = q.shape
    kdim = node.attrs["num_dendrites"]
    return {
        "synops": C.dendritic_events(k, v, kdim),
        "dendritic_updates": b * n * c * kdim,
        "macs": b * C.dendritic_macs(n, c, kdim),
    }


def state_bound(transition: np.ndarray, gamma: np.ndarray, n: int) -> float:
    """max_i sum_m (|A|^m |Gamma|)_i over m < n: a bound on |X| for spike inputs u in {0, 1}."""
    a, x = np.abs(transition.astype(np.float64)), np.abs(gamma.astype(np.float64))
    total = np.zeros_like(x)
    for _ in range(n):
        total += x
        x = np.einsum("hij,hj->hi", a, x)
    return float(total.max())


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    n = int(np.prod(node.shape[:-1]))
    bound = state_bound(node.params["transition"], node.params["gamma"], n)
    gmax = float(np.abs(node.params["gamma"]).max())
    xi_exp = min(floor_log2(STATE_TARGET / bound) if bound > 0 else 0, floor_log2(LIM16 / gmax) if gmax > 0 else 0)
    cmax = float(np.abs(node.params["readout"]).max())
    node.attrs["state_exp"] = int(xi_exp)
    node.attrs["a_shift"] = SHIFT
    node.attrs["c_shift"] = int(max(0, min(16, floor_log2(LIM16 / cmax)))) if cmax > 0 else 0


def _plan_path(graph: Graph, node: Node, sigma_exp: int) -> None:
    xi = 2.0 ** node.attrs["state_exp"]  # X_int = xi * X
    node.attrs["out_mant"], node.attrs["out_exp"] = mantissa_exp(2.0**sigma_exp * node.attrs["scale"] / xi)


def _fold_tau(node: Node, tau: float) -> None:
    node.attrs["scale"] = node.attrs["scale"] / tau


def _quantize(node: Node, p: Mapping[str, Any], ops: Ops) -> dict[str, Any]:
    a = node.attrs
    return {
        "a_mant": ops.clip(ops.round(p["transition"] * 2.0 ** a["a_shift"]), -LIM16, LIM16),
        "gamma_mant": ops.clip(ops.round(p["gamma"] * 2.0 ** a["state_exp"]), -LIM16, LIM16),
        "c_mant": ops.clip(ops.round(p["readout"] * 2.0 ** a["c_shift"]), -LIM16, LIM16),
    }


def _param_shapes(node: Node, layout: str) -> dict[str, Shape]:
    h, k = node.attrs["heads"], node.attrs["num_dendrites"]
    return {"transition": (h, k, k), "gamma": (h, k), "readout": (h, k)}


KERNELS.add(
    "dendritic",
    Kernel(
        OpSpec(
            "dendritic",
            ("spikes",),
            (3, 3),
            "activation",
            (
                Attr("heads", int, check=positive),
                Attr("num_dendrites", int, check=positive),
                Attr("scale", float),
                Attr("a_shift", int, True, between(0, 16)),
                Attr("c_shift", int, True, between(0, 16)),
                Attr("out_mant", int, True, between(*W8)),
                Attr("out_exp", int, True, between(-24, 16)),
            ),
            (Param("transition", "a_mant", M16), Param("gamma", "gamma_mant", M16), Param("readout", "c_mant", M16)),
            heads_shape,
            _param_shapes,
            doc=__doc__ or "",
        ),
        step=_step,
        prepare=_prepare,
        plan=_plan,
        synapse=SynapseRole(_plan_path, _fold_tau),
        quantize=_quantize,
        quant_error=QuantError("gamma", "gamma_mant", lambda node: 2.0 ** -node.attrs["state_exp"], (-LIM16, LIM16)),
        count=_count,
        state_bytes=lambda node: C.dendritic_state_entries(node.shape[-1], node.attrs["num_dendrites"]) * 3,
    ),
)  # 24 bits
