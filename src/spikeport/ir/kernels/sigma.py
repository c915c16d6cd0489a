"""sigma: the sigma decoder of lava-dl's SDNN output layer (netx's ``sigma_output`` neuron: Lava's standard
``lava.proc.sdn.Sigma``, ``PySigmaModelFixed``): it sums its graded inputs and sends the sum each step,

    sigma = sigma + a_in;  out = sigma                          (a_in: the sum of its synaptic inputs)

no activation, bias or scaling: the output is in the units of a_in (graded spikes << spike_exp times the
weights). Lava's Sigma has no reset: like sigma_delta it runs ``warmup`` steps (its depth) before a stream's
first step reaches it, summing what the sigma-delta neurons before it sent meanwhile; the executors replay that
pipeline fill. State: sigma, 24 bits on Loihi 2 (Lava's CPU model does not wrap it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport import fixedpoint as fx
from spikeport.counting import CountOps
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Attr, Counts, Kernel, OpSpec, PlanOptions, Step, between, same_shape, sum_inputs
from spikeport.value_kinds import ACTIVATION, GRADED


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a_in = sum_inputs(ins)
    if not state:
        state["sigma"] = ctx.ops.zeros(a_in.shape, like=a_in)
    if ctx.t < -node.attrs["warmup"]:  # the pipeline has not reached it yet
        return a_in * 0
    state["sigma"] = state["sigma"] + a_in
    return state["sigma"]


def _count(ops: CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    return {
        "spikes": ops.nonzero(out),
        "neuron_updates": ops.size(out),
        "accumulator_overflows": ops.beyond(out, fx.STATE_MAX),  # its output is its accumulator, sigma (24 bits)
    }


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    raise ConversionError(
        f"node '{node.name}' (sigma): sigma decoders come only from quantized networks (netx SDNN files)"
    )


KERNELS.add(
    "sigma",
    Kernel(
        OpSpec(
            "sigma",
            (ACTIVATION,),
            (1, 64),
            GRADED,
            (Attr("warmup", int, check=between(0, 4096)),),
            (),
            same_shape,
            doc=__doc__ or "",
        ),
        step=_step,
        plan=_plan,
        count=_count,
        counters=("spikes", "neuron_updates", "accumulator_overflows"),
        neurons=lambda node: int(np.prod(node.shape)),
        warmup=lambda node: node.attrs["warmup"],
        state_bytes=lambda node: int(np.prod(node.shape)) * 3,
    ),
)
