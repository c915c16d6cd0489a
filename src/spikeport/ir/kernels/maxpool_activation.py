"""maxpool_activation: the max over each k x k window of a LIF's synaptic input (SpikingJelly's Spikformer stem pools
conv-BN output before the LIF: ModelConfig.pool_before_lif), channels-last; padding never wins (torch's -inf).

It sits between a synapse and the LIF that reads it, and relays that synapse's part in the LIF group's scale
(``lif.synapse_paths``): a max commutes with the positive scale, the 1/tau fold and the per-channel bias the
conversion moves to the LIF, and rounding is monotone, so the integer max is the float max quantized. No Lava
lowering: Loihi's synapses sum, they do not take a max (Lava refuses the op by name; the reference runs it)."""

from __future__ import annotations

from typing import Any

from spikeport import fixedpoint as fx
from spikeport.fixedpoint import Array
from spikeport.ir.graph import Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Kernel, OpSpec, Step
from spikeport.ir.kernels.maxpool import POOL_ATTRS, pool_shape
from spikeport.value_kinds import ACTIVATION


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    """The backends' maxpool pads with zeros (spikes are >= 0): shifted so that every value is >= 0, a zero
    pad never exceeds a real value in its window, as a -inf pad would not."""
    a, x = node.attrs, ins[0]
    low = x.min()
    return fx.maxpool(ctx.ops, x - low, a["kernel"], a["stride"], a["padding"]) + low


KERNELS.add(
    "maxpool_activation",
    Kernel(
        OpSpec(
            "maxpool_activation",
            (ACTIVATION,),
            (1, 1),
            ACTIVATION,
            POOL_ATTRS,
            (),
            pool_shape,
            doc=__doc__ or "",
        ),
        step=_step,
    ),
)
