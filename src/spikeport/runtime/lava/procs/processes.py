"""spikeport's own Lava Processes for the parts of a spiking transformer Lava has no process for.

Each Process has one ProcessModel tagged ``fixed_pt`` that calls the integer formulas of
``spikeport.fixedpoint`` (the same code as the reference simulator), so the Lava run is bit-exact with it.
They run on the host CPU only (there is no Loihi 2 NeuroCore model for them): ``spikeport check-hw``
lists them as host-only.

Every model sends, at time step t, the activation it computed at t - 1, exactly like Lava's Dense and
Conv (one step of pipeline latency per synapse), so an attention core and the LRF convolutions that feed
the same attention LIF stay aligned.

This module is alone in its package on purpose: Lava's compiler imports every module next to a Process
to look for ProcessModels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lava.magma.core.decorator import implements, requires, tag
from lava.magma.core.model.py.model import PyLoihiProcessModel
from lava.magma.core.model.py.ports import PyInPort, PyOutPort, PyRefPort
from lava.magma.core.model.py.type import LavaPyType
from lava.magma.core.process.ports.ports import InPort, OutPort, RefPort
from lava.magma.core.process.process import AbstractProcess
from lava.magma.core.process.variable import Var
from lava.magma.core.resources import CPU
from lava.magma.core.sync.protocols.loihi_protocol import LoihiProtocol

from spikeport import fixedpoint as fx


class AttentionCore(AbstractProcess):
    """SSA (``Q (K^T V)``) or the causal running sum, rescaled to the attention LIF's a_in.

    State Var: ``kv`` [H, d_h, d_h], the K^T V (or running-sum) matrix of the last step's last token."""

    def __init__(
        self, *, shape: tuple[int, ...], heads: int, variant: str, out_mant: int, out_exp: int, name: str | None = None
    ) -> None:
        super().__init__(shape=shape, heads=heads, variant=variant, out_mant=out_mant, out_exp=out_exp, name=name)
        n = int(np.prod(shape))
        self.q_in, self.k_in, self.v_in = InPort(shape=(n,)), InPort(shape=(n,)), InPort(shape=(n,))
        self.a_out = OutPort(shape=(n,))
        dh = shape[-1] // heads
        self.kv = Var(shape=(heads, dh, dh), init=0)


@implements(proc=AttentionCore, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt")
class PyAttentionCoreModel(PyLoihiProcessModel):
    q_in: PyInPort = LavaPyType(PyInPort.VEC_DENSE, np.int32, precision=1)
    k_in: PyInPort = LavaPyType(PyInPort.VEC_DENSE, np.int32, precision=1)
    v_in: PyInPort = LavaPyType(PyInPort.VEC_DENSE, np.int32, precision=1)
    a_out: PyOutPort = LavaPyType(PyOutPort.VEC_DENSE, np.int32, precision=24)
    kv: np.ndarray = LavaPyType(np.ndarray, np.int32, precision=16)

    def __init__(self, proc_params: Any) -> None:  # Lava's ProcessParameters (untyped)
        super().__init__(proc_params)
        self.buffer = np.zeros(int(np.prod(proc_params["shape"])), np.int32)

    def run_spk(self) -> None:
        p = self.proc_params
        self.a_out.send(self.buffer)
        c = p["shape"][-1]
        q, k, v = (port.recv().astype(np.int64).reshape(1, -1, c) for port in (self.q_in, self.k_in, self.v_in))
        core = (fx.causal_core if p["variant"] == "causal" else fx.ssa_core)(
            fx.INT, q, k, v, p["heads"], on_state=self._keep_state
        )
        self.buffer = fx.scale(fx.INT, core, p["out_mant"], p["out_exp"]).reshape(-1).astype(np.int32)

    def _keep_state(self, state: np.ndarray) -> None:
        self.kv = state[0].astype(np.int32)


class SpikeRecorder(AbstractProcess):
    """Writes the spikes it receives at every time step into a .npy memory map ``path`` [steps, n].

    Reading Lava Vars back (``Var.get``) moves data element by element through Lava's channels, which
    costs seconds per layer; a file the parent maps after the run costs nothing. Time step k goes to row
    ``offset + k - 1``; the first ``skip`` steps are not written (a network restarted at row ``offset``
    leaves the rows that still belong to earlier samples as the first run wrote them)."""

    def __init__(self, *, shape: tuple[int, ...], path: str, offset: int = 0, skip: int = 0, name: str | None = None):
        super().__init__(shape=shape, path=path, offset=offset, skip=skip, name=name)
        self.s_in = InPort(shape=shape)


@implements(proc=SpikeRecorder, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt")
class PySpikeRecorderModel(PyLoihiProcessModel):
    s_in: PyInPort = LavaPyType(PyInPort.VEC_DENSE, np.int32, precision=24)

    def __init__(self, proc_params: Any) -> None:  # Lava's ProcessParameters (untyped)
        super().__init__(proc_params)
        self.store: np.ndarray | None = None

    def run_spk(self) -> None:
        if self.store is None:
            self.store = np.load(self.proc_params["path"], mmap_mode="r+")
        spikes = self.s_in.recv()
        row = self.proc_params["offset"] + self.time_step - 1
        if self.time_step > self.proc_params["skip"] and row < self.store.shape[0]:
            self.store[row] = spikes


class StateRecorder(AbstractProcess):
    """Writes a Var of another process (``ref`` connected with ``ref.connect_var(var)``) after every time step
    into a .npy memory map ``path`` [steps, n], like :class:`SpikeRecorder`: row ``offset + k - 1`` holds the
    Var after step k. For a result that lives in a neuron's state (netx's non-spiking integrator: its ``v``)."""

    def __init__(self, *, shape: tuple[int, ...], path: str, offset: int = 0, skip: int = 0, name: str | None = None):
        super().__init__(shape=shape, path=path, offset=offset, skip=skip, name=name)
        self.ref = RefPort(shape=shape)


@implements(proc=StateRecorder, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt")
class PyStateRecorderModel(PyLoihiProcessModel):
    ref: PyRefPort = LavaPyType(PyRefPort.VEC_DENSE, np.int32, precision=24)

    def __init__(self, proc_params: Any) -> None:  # Lava's ProcessParameters (untyped)
        super().__init__(proc_params)
        self.store: np.ndarray | None = None

    def post_guard(self) -> bool:  # read after every step's spiking phase, as Lava's Monitor does
        return True

    def run_post_mgmt(self) -> None:
        if self.store is None:
            self.store = np.load(self.proc_params["path"], mmap_mode="r+")
        row = self.proc_params["offset"] + self.time_step - 1
        if self.time_step > self.proc_params["skip"] and row < self.store.shape[0]:
            self.store[row] = self.ref.read()
