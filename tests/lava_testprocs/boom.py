"""A source Process whose fixed_pt model can fail at a chosen step or run slowly (hygiene tests)."""

import time

import numpy as np
from lava.magma.core.decorator import implements, requires, tag
from lava.magma.core.model.py.model import PyLoihiProcessModel
from lava.magma.core.model.py.ports import PyOutPort
from lava.magma.core.model.py.type import LavaPyType
from lava.magma.core.process.ports.ports import OutPort
from lava.magma.core.process.process import AbstractProcess
from lava.magma.core.process.variable import Var
from lava.magma.core.resources import CPU
from lava.magma.core.sync.protocols.loihi_protocol import LoihiProtocol


class Boom(AbstractProcess):
    """Sends ones every step; raises ValueError at step ``fail_at``; sleeps ``sleep_s`` per step."""

    def __init__(self, *, shape, fail_at: int = -1, sleep_s: float = 0.0):
        super().__init__(shape=shape, fail_at=fail_at, sleep_s=sleep_s)
        self.s_out = OutPort(shape=shape)
        self.count = Var(shape=(1,), init=0)


@implements(proc=Boom, protocol=LoihiProtocol)
@requires(CPU)
@tag("fixed_pt")
class PyBoomModel(PyLoihiProcessModel):
    s_out: PyOutPort = LavaPyType(PyOutPort.VEC_DENSE, np.int32, precision=24)
    count: np.ndarray = LavaPyType(np.ndarray, np.int32, precision=24)

    def run_spk(self):
        if self.proc_params["sleep_s"]:
            time.sleep(self.proc_params["sleep_s"])
        self.count[0] += 1
        if self.time_step == self.proc_params["fail_at"]:
            raise ValueError(f"boom at step {self.time_step}")
        self.s_out.send(np.ones(self.s_out.shape, np.int32))


def boom_network(fail_at: int = -1, sleep_s: float = 0.0):
    """Boom(3) -> Dense(ones 2x3) -> LIF(2); returns (boom, dense, lif)."""
    from lava.proc.dense.process import Dense
    from lava.proc.lif.process import LIF

    boom = Boom(shape=(3,), fail_at=fail_at, sleep_s=sleep_s)
    dense = Dense(weights=np.ones((2, 3), int))
    lif = LIF(shape=(2,), vth=10)
    boom.s_out.connect(dense.s_in)
    dense.a_out.connect(lif.a_in)
    return boom, dense, lif
