"""lif: the Loihi LIF (lava.proc.lif PyLifModelBitAcc) on a_in = the sum of its inputs (Lava sums every
connection on a_in); see ``spikeport.fixedpoint`` for the equations.

The quantizer gives ``du`` 4095 and ``dv`` in 1..4095. Imported netx files may also hold Lava's edge values:
``du = -1`` (netx ``iDecay`` 0: Lava's decay constant du + 1 = 0, so ``u`` integrates without loss), ``dv = 4096``
(``v = u + bias`` each step) and ``vth = 2**17`` (the threshold ``2**23`` lies above ``v``'s clip at ``2**23 - 1``:
it never fires). lava-dl's netx builds exactly that LIF for a layer without a neuron group (mnist.net's output
layer): a non-spiking *integrator* whose result is its ``v`` (:func:`is_integrator`), which the executors record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spikeport import counting as C, fixedpoint as fx
from spikeport.errors import ConversionError
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
    Step,
    SynapseRole,
    between,
    ceil_log2,
    floor_log2,
    same_shape,
    sum_inputs,
)
from spikeport.value_kinds import ACTIVATION, SPIKES

ACT_TARGET = 2**16  # calibrated |a_in| target: half of the wrap limit 2**17
BIAS = (fx.BIAS_MANT_MIN, fx.BIAS_MANT_MAX)


def _prepare(node: Node, q: Mapping[str, np.ndarray]) -> fx.LifParams:
    a = node.attrs
    return fx.LifParams(a["du"], a["dv"], a["vth"], q["bias_mant"], a["bias_exp"])


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a_in = sum_inputs(ins)
    extra["a_in"] = a_in
    if not state:
        state["u"], state["v"] = ctx.ops.zeros(a_in.shape, like=a_in), ctx.ops.zeros(a_in.shape, like=a_in)
    # a backend may fuse the formula (runtime/sim/fast_ops.py); its tests hold it to fx.lif_step's values. It may
    # note in ``extra`` what it found on the way (``a_in_absmax``: the count need not look at a_in again)
    fused = getattr(ctx.ops, "lif_step", None)
    p = ctx.prepared[node.name]
    state["u"], state["v"], s = (
        fused(state["u"], state["v"], a_in, p, extra)
        if fused
        else fx.lif_step(ctx.ops, state["u"], state["v"], a_in, p)
    )
    extra["v"] = state["v"]  # an integrator's result (is_integrator): the executors record it
    return s


def is_integrator(node: Node) -> bool:
    """A LIF that can never fire (``vth << 6`` above ``v``'s 24-bit clip): its result is its membrane ``v``."""
    return node.op == "lif" and node.attrs.get("vth", 0) << fx.ACT_SHIFT > fx.STATE_MAX - 1


def count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    top = extra.get("a_in_absmax")  # max |a_in|, where the step's backend found it checking its own bound
    return {
        "spikes": ops.nonzero(out),
        "neuron_updates": ops.size(out),
        "act_overflows": 0 if top is not None and top < fx.ACT_MAX else ops.beyond(extra["a_in"], fx.ACT_MAX),
    }


def synapse_paths(graph: Graph, lif: Node) -> list[Node]:
    """The synapses whose sums make ``lif``'s a_in: its inputs, seen through the ops that only select among a
    synapse's values (activation in, activation out, no synapse role: ``maxpool_activation``)."""
    from spikeport.ir.kernels import kernel

    paths = []
    for node in graph.inputs_of(lif):
        while (record := kernel(node.op)).synapse is None and record.spec.input_kinds == (ACTIVATION,):
            if record.spec.out_kind != ACTIVATION or len(node.inputs) != 1:
                break
            node = graph.nodes[node.inputs[0]]
        paths.append(node)
    return paths


def synapse_role(graph: Graph, lif: Node, path: Node) -> SynapseRole:
    """The record role of a path into ``lif``; a ConversionError when the path cannot feed a neuron."""
    from spikeport.ir.kernels import kernel

    role = kernel(path.op).synapse
    if role is None:
        raise ConversionError(f"lif '{lif.name}' reads '{path.name}' ({path.op}); expected a synapse")
    return role


def _plan(graph: Graph, lif: Node, options: PlanOptions) -> None:
    """sigma = 2**s: the largest scale that keeps every weighted path's largest mantissa >= 64, capped so
    that vth fits 17 bits, the bias fits 13 bits << 7 and the calibrated input stays below ACT_TARGET."""
    paths = [(p, synapse_role(graph, lif, p)) for p in synapse_paths(graph, lif)]
    theta, tau = lif.attrs["v_threshold"], lif.attrs["tau"]
    magnitudes = [m for m in (role.magnitude(graph, p) for p, role in paths) if m is not None]
    s = ceil_log2(64 / min(magnitudes)) if magnitudes and min(magnitudes) > 0 else 8
    cap = floor_log2(fx.VTH_MAX / theta)
    bias_max = float(np.abs(lif.params["bias"]).max(initial=0.0))
    if bias_max > 0:  # the bias must fit 13-bit mantissa << 7: 64 sigma |b| <= 4095 * 2**7
        cap = min(cap, floor_log2(fx.BIAS_MANT_MAX * 2**fx.BIAS_EXP_MAX / (64 * bias_max)))
    calibrated_max = options.stats.get(lif.name)
    if calibrated_max:
        cap = min(cap, floor_log2(ACT_TARGET * tau / calibrated_max))
    # a path that may not floor but whose best exponent is negative asks for a finer sigma instead
    shortfall = max([0] + [role.shortfall(graph, p, s) for p, role in paths])
    s = min(s + shortfall, cap)
    lif.attrs["sigma_exp"] = int(s)
    lif.attrs["vth"] = int(round(2.0**s * theta))
    b_eff = 64 * 2.0**s * bias_max
    lif.attrs["bias_exp"] = int(min(fx.BIAS_EXP_MAX, max(0, ceil_log2(b_eff / fx.BIAS_MANT_MAX))))
    for p, role in paths:
        role.plan(graph, p, s)


def _quantize(node: Node, p: Mapping[str, Any], ops: Ops) -> dict[str, Any]:
    b = p["bias"] * (64 * 2.0 ** (node.attrs["sigma_exp"] - node.attrs["bias_exp"]))
    return {"bias_mant": ops.clip(ops.round(b), *BIAS)}


KERNELS.add(
    "lif",
    Kernel(
        OpSpec(
            "lif",
            (ACTIVATION,),
            (1, 64),
            SPIKES,
            (
                Attr("tau", float, check=lambda v: None if v >= 1 else "must be >= 1"),
                Attr("v_threshold", float, check=lambda v: None if v > 0 else "must be > 0"),
                Attr("du", int, True, between(-1, 4095)),  # -1, 4096, 2**17: see the module doc
                Attr("dv", int, True, between(0, 4096)),
                Attr("vth", int, True, between(0, fx.VTH_MAX + 1)),
                Attr("bias_exp", int, True, between(0, fx.BIAS_EXP_MAX)),
                # the scale of a_in the group's synapses share (a record; netx imports have none)
                Attr("sigma_exp", int, True, between(-64, 64), optional=True),
            ),
            (Param("bias", "bias_mant", BIAS, float_optional=True),),
            same_shape,
            lambda node, layout: {"bias": (node.shape[-1],)} if node.shape else {},
            doc=__doc__ or "",
        ),
        step=_step,
        role=KernelRole.NEURON,
        prepare=_prepare,
        plan=_plan,
        quantize=_quantize,
        quant_error=QuantError(
            "bias", "bias_mant", lambda node: 2.0 ** (node.attrs["bias_exp"] - node.attrs["sigma_exp"]) / 64, BIAS
        ),
        count=count,
        counters=("spikes", "neuron_updates", "act_overflows"),
        neurons=lambda node: int(np.prod(node.shape)),
        state_bytes=lambda node: int(np.prod(node.shape)) * 2 * 3,
    ),
)  # u and v, 24 bits each
