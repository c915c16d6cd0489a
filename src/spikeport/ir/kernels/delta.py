"""delta: the delta encoder of lava-dl's SDNN input layer (Lava's standard ``lava.proc.sdn.Delta``), as
``PyDeltaModelFixed`` computes it each time step from its graded input x (the network's input values):

    a        = x << (spike_exp + state_exp)
    delta    = a - act + residue
    s        = delta where |delta| >= vth << (spike_exp + state_exp), else 0
               (cum_error: error += delta, s = delta where |error| >= that threshold, error = 0 where s != 0)
    residue  = delta - s;  act = a
    out      = s >> state_exp                                  (a graded spike: signed, floor shift)

With netx's vth 0 every change is sent: the first step sends x << spike_exp, a constant input nothing more.
Lava's Delta has no reset; it reads the input stream directly (depth 0), so it has no pipeline fill.
State: act, residue (and error), 24 bits each on Loihi 2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport.counting import CountOps
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Attr, Counts, Kernel, OpSpec, PlanOptions, Step, between, same_shape, sum_inputs
from spikeport.value_kinds import GRADED

STATE_VARS = ("act", "residue", "error")


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    ops, a = ctx.ops, node.attrs
    x = sum_inputs(ins)
    if not state:
        for var in STATE_VARS:
            state[var] = ops.zeros(x.shape, like=x)
    scale = a["spike_exp"] + a["state_exp"]
    threshold = a["vth"] << scale
    act = ops.floor_shift(x, scale)
    delta = act - state["act"] + state["residue"]
    if a["cum_error"]:
        state["error"] = state["error"] + delta
        fire = (state["error"] >= threshold) | (state["error"] <= -threshold)
        state["error"] = ops.where(fire, state["error"] * 0, state["error"])
    else:
        fire = (delta >= threshold) | (delta <= -threshold)
    s = ops.where(fire, delta, delta * 0)
    state["residue"], state["act"] = delta - s, act
    return ops.floor_shift(s, -a["state_exp"])


def _count(ops: CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    return {"spikes": ops.nonzero(out), "neuron_updates": ops.size(out)}


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    raise ConversionError(
        f"node '{node.name}' (delta): delta encoders come only from quantized networks (netx SDNN files)"
    )


KERNELS.add(
    "delta",
    Kernel(
        OpSpec(
            "delta",
            (GRADED,),
            (1, 1),
            GRADED,
            (
                Attr("vth", int, check=between(0, 2**23 - 1)),
                Attr("spike_exp", int, check=between(0, 7)),
                Attr("state_exp", int, check=between(0, 7)),
                Attr("cum_error", int, check=between(0, 1)),
            ),
            (),
            same_shape,
            doc=__doc__ or "",
        ),
        step=_step,
        plan=_plan,
        count=_count,
        counters=("spikes", "neuron_updates"),
        neurons=lambda node: int(np.prod(node.shape)),
        state_bytes=lambda node: int(np.prod(node.shape)) * 3 * len(STATE_VARS),
    ),
)
