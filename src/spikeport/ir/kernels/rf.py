"""rf: the resonate-and-fire neuron of lava-dl's complex blocks (Lava's ``lava.proc.rf.RF``, ``iz`` 0, and
``lava.proc.rf_iz.RF_IZ``, ``iz`` 1), as their fixed_pt models (``PyRFModelFixed``, ``PyRF_IZModelFixed``)
compute each time step, on two inputs, the real and the imaginary synaptic sums:

    re_in, im_in = real << state_exp, imag << state_exp
    d(x)     = sign(x) * (|x| >> decay_bits)                         (truncation toward zero)
    re'      = clip(d(cos_decay * re) - d(sin_decay * im) + re_in,  +-(2**23 - 1))
    im'      = clip(d(sin_decay * re) + d(cos_decay * im) + im_in,  +-(2**23 - 1))
    RF:      s = re' >= vth and im' >= 0 and im < 0                    (a phase crossing above threshold)
             re, im = re', im'
    RF_IZ:   s = im' >= vth;  re = re' * (1 - s);  im = vth - 1 where s else im'

``sin_decay`` / ``cos_decay`` are Lava's integer Vars, ``int32((1 - alpha) * sin|cos(2 pi / period) * 2**decay_bits)``;
``vth`` is Lava's scaled Var (``int(vth * 2**state_exp)``). Lava's RF has no reset interval: one sample (one
continuous stream) per run. Its state is zero until input arrives, so it needs no pipeline warmup. Integer-only
(netx / lava-dl blocks); there is no float -> integer plan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport.counting import CountOps
from spikeport.errors import ConversionError
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Attr, Counts, Kernel, KernelRole, OpSpec, PlanOptions, Step, between
from spikeport.value_kinds import ACTIVATION, SPIKES

Shape = tuple[int, ...]
LIMIT = 2**23 - 1  # Lava: 2 * 12 bits of sin_decay precision -> a 24-bit signed state


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    ops, a = ctx.ops, node.attrs
    re_in, im_in = ops.floor_shift(ins[0], a["state_exp"]), ops.floor_shift(ins[1], a["state_exp"])
    if not state:
        state["re"], state["im"] = ops.zeros(re_in.shape, like=re_in), ops.zeros(re_in.shape, like=re_in)
    re, im, bits = state["re"], state["im"], a["decay_bits"]
    sd, cd = a["sin_decay"], a["cos_decay"]
    new_re = ops.clip(ops.trunc_shift(cd * re, bits) - ops.trunc_shift(sd * im, bits) + re_in, -LIMIT, LIMIT)
    new_im = ops.clip(ops.trunc_shift(sd * re, bits) + ops.trunc_shift(cd * im, bits) + im_in, -LIMIT, LIMIT)
    vth = a["vth"]
    if a["iz"]:
        s = ops.asint(new_im >= vth)
        state["re"], state["im"] = new_re * (1 - s), s * (vth - 1) + (1 - s) * new_im
    else:
        s = ops.asint((new_re >= vth) & (new_im >= 0) & (im < 0))
        state["re"], state["im"] = new_re, new_im
    return s


def _shape(node: Node, shapes: list[Shape]) -> Shape:
    if len(shapes) != 2 or shapes[0] != shapes[1]:
        raise ConversionError(
            f"node '{node.name}' (rf): needs a real and an imaginary input of one shape, got {shapes}"
        )
    return shapes[0]


def _count(ops: CountOps, node: Node, ins: list[Array], out: Array, extra: dict[str, Any]) -> Counts:
    return {"spikes": ops.nonzero(out), "neuron_updates": ops.size(out)}


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    raise ConversionError(
        f"node '{node.name}' (rf): resonate-and-fire neurons come only from quantized networks "
        f"(netx / lava-dl complex blocks); there is no float -> integer plan for them"
    )


KERNELS.add(
    "rf",
    Kernel(
        OpSpec(
            "rf",
            (ACTIVATION,),
            (2, 2),
            SPIKES,
            (
                Attr("sin_decay", int, check=between(-4096, 4096)),
                Attr("cos_decay", int, check=between(-4096, 4096)),
                Attr("decay_bits", int, check=between(0, 12)),
                Attr("state_exp", int, check=between(0, 7)),
                Attr("vth", int, check=between(0, LIMIT)),
                Attr("iz", int, check=between(0, 1)),
            ),
            (),
            _shape,
            doc=__doc__ or "",
        ),
        step=_step,
        role=KernelRole.NEURON,
        plan=_plan,
        count=_count,
        counters=("spikes", "neuron_updates"),
        neurons=lambda node: int(np.prod(node.shape)),
        state_bytes=lambda node: int(np.prod(node.shape)) * 3 * 2,  # re, im: 24 bits each
    ),
)
