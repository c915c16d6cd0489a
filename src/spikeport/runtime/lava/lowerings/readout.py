"""readout: on the host, the same fixedpoint.readout as the reference, on the recorded spikes of its sources
(``runtime.replay``); no Lava process."""

from __future__ import annotations

from spikeport.ir.graph import Node
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, steps


def _build(net: LavaNetwork, node: Node) -> None:
    """Computed on the host from recorded spikes: no Lava process."""


LOWERINGS.add("readout", LavaLowering(_build, steps(0), on_host=True, summary="host readout (I/O)"))
