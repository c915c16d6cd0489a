"""recurrent_lif: a LIF group (``lif``'s Loihi CUBA neuron, its attributes and bias) that also reads its own spikes
of the previous step through recurrent weights W [C, C] (netx's ``dense_rec`` layer, lava-dl's RecurrentDense
block; slayer's ``block.cuba.Recurrent``):

    a_in[t] = sum of its inputs[t] + (s[t-1] W^T) << weight_exp,   s[-1] = 0;   u, v, s = lif_step(u, v, a_in)

per token (W is shared by the tokens, as a dense layer's). The recurrence stays inside the node, so the graph
stays acyclic and every edge keeps its kind: the group reads ``activation`` and sends ``spikes``. On Lava the
loop is a synapse from the group's ``s_out`` back to its ``a_in``: a synapse delays one step, which is the ``t-1``.
Each sample starts with no recurrent spike (slayer's training semantics). Its recurrent synapses are counted on its
own row, in the step the spikes are sent (when Lava's synapse accumulates them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport import counting as C, fixedpoint as fx
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import (
    Counts,
    Kernel,
    KernelRole,
    OpSpec,
    Param,
    PlanOptions,
    Step,
    same_shape,
    sum_inputs,
)
from spikeport.ir.kernels.lif import BIAS, count as lif_count
from spikeport.ir.kernels.synapse import EXP, W8
from spikeport.value_kinds import ACTIVATION, SPIKES

LIF = KERNELS.get("lif")  # the neuron it extends (registered by the import of BIAS): its attributes and LifParams


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a_in = sum_inputs(ins)
    if not state:
        state["u"] = state["v"] = state["s"] = ctx.ops.zeros(a_in.shape, like=a_in)
    a_in = a_in + fx.dense(ctx.ops, state["s"], ctx.qparams[node.name]["weight_mant"], node.attrs["weight_exp"])
    extra["a_in"] = a_in
    fused = getattr(ctx.ops, "lif_step", None)  # as lif's step
    p = ctx.prepared[node.name]
    state["u"], state["v"], state["s"] = (
        fused(state["u"], state["v"], a_in, p, extra)
        if fused
        else fx.lif_step(ctx.ops, state["u"], state["v"], a_in, p)
    )
    return state["s"]


def _count(ops: C.CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    counts = lif_count(ops, node, ins, out, extra)
    recurrent = counts["spikes"] * node.shape[-1]  # each spike drives the C recurrent synapses of its token
    return {**counts, "synops": recurrent, "synops_valued": recurrent}


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    raise ConversionError(
        f"node '{node.name}' (recurrent_lif): recurrent LIF groups come only from quantized networks (netx "
        "dense_rec layers)"
    )


def _param_shapes(node: Node, layout: str) -> dict[str, tuple[int, ...]]:
    c = node.shape[-1] if node.shape else 0
    return {"bias": (c,), "weight": (c, c)} if c else {}


KERNELS.add(
    "recurrent_lif",
    Kernel(
        OpSpec(
            "recurrent_lif",
            (ACTIVATION,),
            (1, 64),
            SPIKES,
            (*LIF.spec.attrs, EXP),  # EXP: the recurrent weights' exponent
            (Param("bias", "bias_mant", BIAS, float_optional=True), Param("weight", "weight_mant", W8)),
            same_shape,
            _param_shapes,
            doc=__doc__ or "",
        ),
        step=_step,
        role=KernelRole.NEURON,
        prepare=LIF.prepare,  # its LifParams
        plan=_plan,
        count=_count,
        counters=("spikes", "neuron_updates", "act_overflows", "synops", "synops_valued"),
        neurons=LIF.neurons,
        # u and v, and the recurrent sum on its way back (one step), 24 bits each
        state_bytes=lambda node: int(np.prod(node.shape)) * 3 * 3,
        fan_in=lambda node: int(node.shape[-1]),  # its recurrent synapses
    ),
)
