"""The minimal custom Process + fixed_pt ProcessModel shown in docs/lava_notes.md (tested there too)."""

import numpy as np
from lava.magma.core.decorator import implements, requires, tag
from lava.magma.core.model.py.model import PyLoihiProcessModel
from lava.magma.core.model.py.ports import PyInPort, PyOutPort
from lava.magma.core.model.py.type import LavaPyType
from lava.magma.core.process.ports.ports import InPort, OutPort
from lava.magma.core.process.process import AbstractProcess
from lava.magma.core.process.variable import Var
from lava.magma.core.resources import CPU
from lava.magma.core.sync.protocols.loihi_protocol import LoihiProtocol


class Scale(AbstractProcess):
    """a_out[t] = (s_in[t-1] * mant) >> exp: graded in, graded out, one step of latency like Dense."""

    def __init__(self, *, shape: tuple, mant: int, exp: int, name: str | None = None):
        # keyword arguments given to super().__init__ become the model's self.proc_params
        super().__init__(shape=shape, mant=mant, exp=exp, name=name)
        self.s_in = InPort(shape=shape)
        self.a_out = OutPort(shape=shape)
        self.buffer = Var(shape=shape, init=0)  # a Var: state the host can get() / set()


@implements(proc=Scale, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt")  # selected by Loihi2SimCfg(select_tag="fixed_pt")
class PyScaleModel(PyLoihiProcessModel):
    # one LavaPyType per port and Var: the channel dtype is the *sending* port's dtype
    s_in: PyInPort = LavaPyType(PyInPort.VEC_DENSE, np.int32, precision=24)
    a_out: PyOutPort = LavaPyType(PyOutPort.VEC_DENSE, np.int32, precision=24)
    buffer: np.ndarray = LavaPyType(np.ndarray, np.int32, precision=24)

    def run_spk(self):  # called once per time step (self.time_step = 1, 2, ...)
        self.a_out.send(self.buffer)  # send first, then receive: no deadlock in loops
        x = self.s_in.recv().astype(np.int64)  # every InPort must be received every step
        p = self.proc_params
        self.buffer[:] = (x * p["mant"]) >> p["exp"]  # in place: the Var keeps its int32 dtype
