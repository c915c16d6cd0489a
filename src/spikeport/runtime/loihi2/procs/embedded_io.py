"""Simulated embedded IO: stand-ins for the ``lava.proc.embedded_io`` adapters of a Loihi 2 run.

On a Loihi 2 system, messages between a Python process on the host and NeuroCores pass through adapters that
run on the chip's embedded (Lakemont) processors: ``eio.spike.PyToNxAdapter`` and ``PyToN3ConvAdapter`` into the
chip, ``eio.spike.NxToPyAdapter`` out of it (lava-loihi, INRC members only; their use in public code:
docs/loihi2_sources.md section 7). Without lava-loihi the hardware plan runs on ``Loihi2SimCfg`` with these
stand-ins in their place: processes with the same constructor arguments (``shape``, ``num_message_bits``) and the
same ports (``inp``, ``out``) that pass every message through in the step it arrives. Every output that comes from
a run with them says "simulated embedded IO"; the real adapters add a latency of a step or two (lava-dl's
pilotnet_snn tutorial), which the bundle's run script measures instead of assuming.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lava.magma.core.decorator import implements, requires, tag
from lava.magma.core.model.py.model import PyLoihiProcessModel
from lava.magma.core.model.py.ports import PyInPort, PyOutPort
from lava.magma.core.model.py.type import LavaPyType
from lava.magma.core.process.ports.ports import InPort, OutPort
from lava.magma.core.process.process import AbstractProcess
from lava.magma.core.resources import CPU
from lava.magma.core.sync.protocols.loihi_protocol import LoihiProtocol


class _SimulatedAdapter(AbstractProcess):
    def __init__(self, *, shape: tuple[int, ...], num_message_bits: int = 0, name: str | None = None, **_: Any):
        super().__init__(shape=shape, num_message_bits=num_message_bits, name=name)
        self.inp = InPort(shape=shape)
        self.out = OutPort(shape=shape)


class SimulatedPyToNxAdapter(_SimulatedAdapter):
    """Stands in for ``eio.spike.PyToNxAdapter``: host spikes (or graded values) into NeuroCores."""


class SimulatedPyToN3ConvAdapter(_SimulatedAdapter):
    """Stands in for ``eio.spike.PyToN3ConvAdapter``: graded host input into a chip Conv / Sparse (16-bit)."""


class SimulatedNxToPyAdapter(_SimulatedAdapter):
    """Stands in for ``eio.spike.NxToPyAdapter``: NeuroCore spikes or graded values out to the host."""


class _PassThrough(PyLoihiProcessModel):
    inp: PyInPort = LavaPyType(PyInPort.VEC_DENSE, np.int32, precision=24)
    out: PyOutPort = LavaPyType(PyOutPort.VEC_DENSE, np.int32, precision=24)

    def run_spk(self) -> None:
        self.out.send(self.inp.recv())


# one model per process: Lava finds a ProcessModel by the class it implements
@implements(proc=SimulatedPyToNxAdapter, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt", "floating_pt")
class PySimulatedPyToNxAdapterModel(_PassThrough):
    pass


@implements(proc=SimulatedPyToN3ConvAdapter, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt", "floating_pt")
class PySimulatedPyToN3ConvAdapterModel(_PassThrough):
    pass


@implements(proc=SimulatedNxToPyAdapter, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt", "floating_pt")
class PySimulatedNxToPyAdapterModel(_PassThrough):
    pass
