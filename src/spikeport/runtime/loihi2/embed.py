"""An artifact's Lava network for the user's own Lava program (``spikeport.api.lava_network``).

lava-dl's users load a network with ``netx.hdf5.Network`` and connect its ``inp`` / ``out`` ports to their own
processes. This is the same for a spikeport artifact: its hardware plan (``plan.py``, adapter drive) built without
a host source or sinks, so that the user's RingBuffer feeds :attr:`LavaEmbedding.input` and the user's sinks read
:attr:`LavaEmbedding.outputs`. On the CPU the embedded-IO adapters are pass-through stand-ins; on Loihi 2
(``hardware=True``, lava-loihi) they are Intel's. The helpers turn images into the input stream and the recorded
outputs back into per-sample values and predictions, with the timing (a sample every ``reset_interval`` steps,
each output ``depth`` steps behind its input) that the network has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spikeport.brief import brief_repr
from spikeport.ir.graph import Graph
from spikeport.runtime.lava import compat
from spikeport.runtime.lava.run import align, pixel_stream, sim_config
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.plan import build_plan_network
from spikeport.runtime.loihi2.plan_run import host_readout


@dataclass
class LavaEmbedding:
    """The processes of one artifact's network and the ports to connect (Lava processes and ports are untyped)."""

    graph: Graph
    processes: list[Any]
    input: Any  # InPort [n_pixels]: 16-bit graded pixels, one frame a step (pixels())
    outputs: dict[str, Any]  # name -> OutPort; a readout's input summed over tokens: 24-bit graded, one per channel
    depth: dict[str, int]  # name -> steps its values lag the input
    reset_interval: int  # a sample every this many steps (the network's neurons reset then)
    run_config: Any = field(repr=False)  # Loihi2SimCfg(select_tag='fixed_pt', ...) or Loihi2HwCfg

    BRIEF = ("graph", "processes", "input", "outputs", "reset_interval")
    __repr__ = brief_repr

    def steps(self, samples: int) -> int:
        """Steps to run ``samples`` samples through, the last one's outputs included."""
        return samples * self.reset_interval + max(self.depth.values(), default=0) + 1

    def pixels(self, images: np.ndarray) -> np.ndarray:
        """images [S, H, W, C] (float, as the artifact's data set gives them) -> the input stream [n, steps], for
        ``lava.proc.io.source.RingBuffer(data=...)``."""
        R = self.reset_interval
        return pixel_stream(self.graph, images, R, self.steps(len(images)) - len(images) * R)

    def per_sample(self, name: str, data: np.ndarray, samples: int) -> np.ndarray:
        """A sink's data [n, steps] (``RingBuffer.data.get()``) -> [samples, T, n], each sample's T steps."""
        n = int(np.asarray(data).shape[0])
        return align(np.asarray(data).T, samples, self.graph.T, self.reset_interval, self.depth[name], (n,))

    def predict(self, data: dict[str, np.ndarray], samples: int) -> np.ndarray:
        """The class of each sample from the sinks' data: the quantized head on the token sums, as the reference."""
        got = {name: self.per_sample(name, d, samples) for name, d in data.items()}
        logits = host_readout(self.graph, got)
        if logits is None:
            raise ValueError("this network has no readout: its outputs are its output layers' spikes")
        return np.asarray(np.argmax(logits, axis=-1))


def lava_network(graph: Graph, hardware: bool = False) -> LavaEmbedding:
    """``graph``'s hardware plan (adapter drive) as processes with open ports (see the module docstring)."""
    compat.import_lava()
    built = build_plan_network(graph, ChipDrive.ADAPTER, hardware=hardware, embed=True)
    if hardware:
        from lava.magma.core.run_configs import Loihi2HwCfg

        config = Loihi2HwCfg()
    else:
        config = sim_config()
    return LavaEmbedding(
        graph, built.net.processes, built.input_port, built.ports, built.sink_depth, built.net.R, config
    )
