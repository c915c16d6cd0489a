"""dendritic: a = floor_shift(q * g * out_mant[h], out_exp[h]) with g = K * (k v), a causal token convolution
per head whose kernel is the dendritic neuron's impulse response (seed 004 Eq. 12-15, DESIGN.md section 2):
    K_m = C^T A^m Gamma  (m = 0 .. taps - 1),  g_n = sum_m K_m k_{n-m} v_{n-m}.
The recursion X_n = A X_{n-1} + Gamma u_n is linear and the same for every token, so it *is* this
convolution; the chip runs it as a token-mixing synapse (docs/lowering.md). K is quantized to 8-bit
mantissas with one exponent per head."""

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
    KernelRole,
    OpSpec,
    Param,
    PlanOptions,
    QuantError,
    Shape,
    Step,
    SynapseRole,
    floor_log2,
    heads_shape,
    ints,
    mantissa_exp,
    per_head,
    positive,
    tokens,
)
from spikeport.ir.kernels.synapse import W8
from spikeport.value_kinds import ACTIVATION, SPIKES

# The longest token kernel kept: 64 lags, the reach of the first, 1-D lowering (2 * taps - 1 lags in Lava's 8-bit
# kernel field). The 2-D token grid (docs/lowering.md section 9) reaches every token, but the cap stays: it sets
# the artifact's kernel shape and its quantization, and every dropped lag of the initial time constants is below
# 0.4 of the head's LSB (docs/lowering.md section 6).
MAX_TAPS = 64


def dendritic_kernel(transition: Any, gamma: Any, readout: Any, taps: int, ops: Ops = fx.INT) -> Any:
    """K [H, taps]: K_m = C^T A^m Gamma per head, for numpy arrays or torch tensors (QAT masters)."""
    column = gamma[:, :, None]  # [H, k, 1]: A^0 Gamma
    lags = []
    for _ in range(taps):
        lags.append((readout[:, :, None] * column).sum(1))  # [H, 1]
        column = transition @ column
    return ops.concat(lags, axis=1)


def _taps(node: Node) -> int:
    return min(int(np.prod(node.shape[:-1])), MAX_TAPS)


def _float_kernel(node: Node) -> np.ndarray:
    p = node.params
    out: np.ndarray = dendritic_kernel(
        np.asarray(p["transition"], np.float64),
        np.asarray(p["gamma"], np.float64),
        np.asarray(p["readout"]),
        _taps(node),
    )
    return out


def _prepare(node: Node, q: Mapping[str, Any]) -> tuple[fx.TokenMixParams, Any]:
    a = node.attrs
    params = fx.TokenMixParams(q["kernel_mant"], tuple(a["out_mant"]), tuple(a["out_exp"]))
    return params, fx.token_mix_matrix(q["kernel_mant"], int(np.prod(node.shape[:-1])))


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    q, k, v = (tokens(x) for x in ins)
    params, toeplitz = ctx.prepared[node.name]
    out, gated = fx.token_mix_core(ctx.ops, q, k, v, node.attrs["heads"], params, toeplitz)
    extra["messages"] = gated != 0  # the product neurons send a graded message where q g != 0
    return out.reshape(ins[0].shape)


def _count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    q, k, v = (tokens(x) for x in ins)
    b, n, c = q.shape
    # on the chip the only multiplies are the graded messages of the product neurons into the attention
    # LIF (one synapse each); the binary synops are the identity and token-mixing synapses
    return {
        "synops": C.token_mix_events(q, k, v, _taps(node), ops),
        "macs": ops.nonzero(_messages(node, q, k, v, extra)),
        "neuron_updates": b * C.token_mix_neurons(n, c),
    }


def _messages(node: Node, q: Array, k: Array, v: Array, extra: dict[str, Any]) -> Array:
    """Where the product neurons send (q g != 0): from the step, or recomputed when the step ran elsewhere
    (the host's replay of a Lava run, which records spikes only)."""
    if "messages" not in extra:
        params, toeplitz = _prepare(node, node.params)
        extra["messages"] = fx.token_mix_core(fx.INT, q, k, v, node.attrs["heads"], params, toeplitz)[1] != 0
    return extra["messages"]


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    kernel = _float_kernel(node)
    top = np.abs(kernel).max(axis=1)
    node.attrs["taps"] = _taps(node)
    node.attrs["kernel_exp"] = tuple(int(floor_log2(fx.WEIGHT_MAX / t)) if t > 0 else 0 for t in top)


def _plan_path(graph: Graph, node: Node, sigma_exp: int) -> None:
    pairs = [mantissa_exp(2.0 ** (sigma_exp - e) * node.attrs["scale"]) for e in node.attrs["kernel_exp"]]
    node.attrs["out_mant"] = tuple(int(m) for m, _ in pairs)
    node.attrs["out_exp"] = tuple(int(e) for _, e in pairs)


def _fold_tau(node: Node, tau: float) -> None:
    node.attrs["scale"] = node.attrs["scale"] / tau


def _quantize(node: Node, p: Mapping[str, Any], ops: Ops) -> dict[str, Any]:
    kernel = dendritic_kernel(p["transition"], p["gamma"], p["readout"], node.attrs["taps"], ops)
    rows = [kernel[h : h + 1] * 2.0**e for h, e in enumerate(node.attrs["kernel_exp"])]
    return {"kernel_mant": ops.clip(ops.round(ops.concat(rows, axis=0)), *W8)}


def _param_shapes(node: Node, layout: str) -> dict[str, Shape]:
    h, k = node.attrs["heads"], node.attrs["num_dendrites"]
    shapes: dict[str, Shape] = {"transition": (h, k, k), "gamma": (h, k), "readout": (h, k)}
    if "taps" in node.attrs:
        shapes["kernel"] = (h, node.attrs["taps"])
    return shapes


def _kernel_scale(node: Node) -> np.ndarray:
    return 2.0 ** -np.asarray(node.attrs["kernel_exp"], np.float64)[:, None]


KERNELS.add(
    "dendritic",
    Kernel(
        OpSpec(
            "dendritic",
            (SPIKES,),
            (3, 3),
            ACTIVATION,
            (
                Attr("heads", int, check=positive),
                Attr("num_dendrites", int, check=positive),
                Attr("scale", float),
                Attr("taps", int, True, check=positive),
                Attr("kernel_exp", tuple, True, ints(None, -32, 32)),
                Attr("out_mant", tuple, True, ints(None, *W8)),
                Attr("out_exp", tuple, True, ints(None, -24, 16)),
            ),
            (
                Param("transition", None),
                Param("gamma", None),
                Param("readout", None),
                Param("kernel", "kernel_mant", W8, float_optional=True),
            ),
            heads_shape,
            _param_shapes,
            doc=__doc__ or "",
            check=per_head("kernel_exp", "out_mant", "out_exp"),
        ),
        step=_step,
        role=KernelRole.ATTENTION,
        prepare=_prepare,
        plan=_plan,
        synapse=SynapseRole(_plan_path, _fold_tau),
        quantize=_quantize,
        quant_error=QuantError("kernel", "kernel_mant", _kernel_scale, W8, reference=_float_kernel),
        count=_count,
        counters=("synops", "macs", "neuron_updates"),
        neurons=lambda node: C.token_mix_neurons(int(np.prod(node.shape[:-1])), node.shape[-1]),
        fan_in=lambda node: _taps(node),
        synapses_per_input=lambda node: float(_taps(node)),
    ),
)
