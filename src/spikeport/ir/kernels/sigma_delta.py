"""sigma_delta: the sigma-delta neuron of lava-dl's SDNN blocks (Lava's standard ``lava.proc.sdn.SigmaDelta``,
ReLU activation, graded output), as ``PySigmaDeltaModelFixed`` computes it each time step:

    sigma    = sigma + a_in                                   (a_in: the sum of its synaptic inputs)
    act_new  = relu(sigma + (bias << (spike_exp + state_exp)))
    delta    = act_new - act + residue
    s        = delta where |delta| >= vth << (spike_exp + state_exp), else 0
               (cum_error: error += delta, s = delta where |error| >= that threshold, error = 0 where s != 0)
    residue  = delta - s;  act = act_new
    out      = s >> state_exp                                  (a graded spike: signed, floor shift)

Its output kind is ``graded``: signed multi-bit spikes that synapses read as Lava graded messages.
State: sigma, act, residue (and error), 24 bits each on Loihi 2. Lava's SigmaDelta has no reset: in a pipeline it
runs ``warmup`` steps (its depth: one per synapse between it and the input) before a stream's first step reaches
it, integrating its bias and what the sigma-delta neurons before it sent meanwhile; the executors replay that
pipeline fill (the record's ``warmup`` hook), and the Lava backend checks ``warmup`` against the node's depth.
The op is integer-only: it comes from quantized networks (netx SDNN files); the float -> integer plan of
sigma-delta networks is not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.counting import CountOps
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
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
    Shape,
    Step,
    between,
    same_shape,
    sum_inputs,
)
from spikeport.value_kinds import ACTIVATION, GRADED

BIAS = (-(2**15), 2**15 - 1)  # Lava's SigmaDelta bias Var: 16 bits
STATE_VARS = ("sigma", "act", "residue")


def _prepare(node: Node, q: Mapping[str, Any]) -> fx.SigmaDeltaParams:
    a = node.attrs
    return fx.SigmaDeltaParams(a["vth"], q["bias"], a["spike_exp"], a["state_exp"], bool(a["cum_error"]))


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    ops, a = ctx.ops, node.attrs
    a_in = sum_inputs(ins)
    if not state:
        for var in STATE_VARS + ("error",):
            state[var] = ops.zeros(a_in.shape, like=a_in)
    if ctx.t < -a["warmup"]:  # the pipeline has not reached it yet
        return a_in * 0
    params: fx.SigmaDeltaParams = ctx.prepared[node.name]
    out = fx.sigma_delta_step(ops, state, a_in, params)
    extra["sigma"] = state["sigma"]  # the input accumulator, for the count
    return out


def _fits_state(node: Node, shapes: list[Shape]) -> str | None:
    """Lava's SigmaDelta stores vth and bias shifted left by spike_exp + state_exp in its 24-bit Vars."""
    a = node.attrs
    scale = a["spike_exp"] + a["state_exp"]
    top = max(a["vth"], int(np.abs(node.params["bias"]).max(initial=0)) if "bias" in node.params else 0)
    if top << scale > 2**23 - 1:
        return (
            f"vth / bias up to {top} << (spike_exp + state_exp = {scale}) "
            f"does not fit the 24-bit state of Lava's SigmaDelta"
        )
    return None


def _count(ops: CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    # sigma is a 24-bit Var on Loihi 2; a replayed Lava run records the messages only, so it counts 0 there
    overflows = ops.beyond(extra["sigma"], fx.STATE_MAX) if "sigma" in extra else 0
    return {"spikes": ops.nonzero(out), "neuron_updates": ops.size(out), "accumulator_overflows": overflows}


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    raise ConversionError(
        f"node '{node.name}' (sigma_delta): sigma-delta neurons come only from quantized "
        f"networks (netx SDNN files); there is no float -> integer plan for them"
    )


KERNELS.add(
    "sigma_delta",
    Kernel(
        OpSpec(
            "sigma_delta",
            (ACTIVATION,),
            (1, 64),
            GRADED,
            (
                Attr("vth", int, check=between(0, 2**23 - 1)),
                Attr("spike_exp", int, check=between(0, 7)),
                Attr("state_exp", int, check=between(0, 7)),
                Attr("cum_error", int, check=between(0, 1)),
                Attr("warmup", int, check=between(0, 4096)),
            ),
            (Param("bias", "bias", BIAS, float_optional=True),),
            same_shape,
            lambda node, layout: {"bias": (node.shape[-1],)} if node.shape else {},
            check=_fits_state,
            doc=__doc__ or "",
        ),
        step=_step,
        role=KernelRole.NEURON,
        prepare=_prepare,
        plan=_plan,
        count=_count,
        counters=("spikes", "neuron_updates", "accumulator_overflows"),
        neurons=lambda node: int(np.prod(node.shape)),
        warmup=lambda node: node.attrs["warmup"],
        # sigma, act, residue and error: Lava allocates error whether or not cum_error uses it
        state_bytes=lambda node: int(np.prod(node.shape)) * 3 * (len(STATE_VARS) + 1),
    ),
)
