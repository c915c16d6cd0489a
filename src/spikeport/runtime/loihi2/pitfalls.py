"""The known ways a Loihi 2 run goes wrong that a plan network can be seen to hit, each with its public report
(docs/loihi2.md, "Known pitfalls check-hw detects"). check-hw adds them to the ``HardwarePlan`` it prints.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport.chip_limits import BIAS_MANT_BITS
from spikeport.runtime.lava.backend import LavaNetwork
from spikeport.runtime.lava.facts import PROCESSES, Role
from spikeport.runtime.loihi2.plan import HardwarePlan, Pitfall

NETX_MAX_DELAY = 62  # lava-dl src/lava/lib/dl/netx/hdf5.py refuses larger axonal delays
CONV_MAX_X = 256  # YOLO-KP's compile log: conv spikes from x_in = n*256-1 "might get dropped" (an 8-bit x field)
YOLO_KP_CORES = 574  # YOLO-KP's compile ran the INRC login VM out of RAM (lava-dl#252)


def pitfalls(net: LavaNetwork, cores: int | None = None) -> list[Pitfall]:
    """The known hardware pitfalls this plan network can be seen to hit (docs/loihi2.md, "Known pitfalls")."""
    found: list[Pitfall] = []
    for proc in net.processes:
        facts, name = PROCESSES.of(proc), str(proc.name)
        if facts.role is Role.SYNAPSE and facts.weights is not None and _all_zero(getattr(proc, facts.weights).init):
            msg = "a synapse process whose weights are all zero fails to compile on Loihi2HwCfg"
            found.append(Pitfall("all-zero weights", name, msg, "lava#501"))
        worst = _largest(getattr(proc, facts.delays).init) if facts.delays is not None else 0
        if worst > NETX_MAX_DELAY:
            msg = f"synaptic delay {worst} > {NETX_MAX_DELAY}: netx and the chip's delay field refuse it"
            found.append(Pitfall("delay out of range", name, msg, "lava-dl#214; lava-dl src/lava/lib/dl/netx/hdf5.py"))
        if type(proc).__name__ == "Conv" and proc.input_shape[0] > CONV_MAX_X:
            msg = f"input x = {proc.input_shape[0]}: the compiler warns that spikes from x_in = n*256-1 may be dropped"
            found.append(Pitfall("conv input wider than 256", name, msg, "lava-dl yolo_kp/run_eth.ipynb (compile log)"))
    lifs = sum(type(p).__name__ in ("LIF", "LIFReset") for p in net.processes)
    if lifs:
        msg = (
            "the Nc LIF model scales du, dv, vth and the bias inside its microcode, not as Lava's CPU model does; the "
            "bundle's run compares the chip's outputs and states with the reference, and a first mismatch at a LIF "
            "layer points here"
        )
        found.append(Pitfall("LIF parameters scaled on the chip", f"{lifs} LIF groups", msg, "lava#829"))
    if cores is not None and cores > YOLO_KP_CORES:
        msg = (
            f"larger than YOLO-KP ({YOLO_KP_CORES} cores), whose compile ran the INRC login VM out of RAM: compile on "
            "a SLURM compute node (the bundle's run.slurm)"
        )
        found.append(Pitfall("compile memory", f"{cores:,} cores", msg, "lava-dl#252"))
    return found


def _all_zero(weights: Any) -> bool:
    return bool(weights.count_nonzero() == 0) if hasattr(weights, "count_nonzero") else not np.any(weights)


def _largest(values: Any) -> int:
    return int(values.max()) if (values.nnz if hasattr(values, "nnz") else np.size(values)) else 0


def bias_pitfall(plan: HardwarePlan) -> list[Pitfall]:
    if plan.bias_worst_bits is None or plan.bias_worst_bits <= BIAS_MANT_BITS:
        return []
    return [
        Pitfall(
            "bias beyond 13 bits",
            str(plan.bias_layer),
            f"the bias drive may need {plan.bias_worst_bits} signed bits (every pixel at its extreme); Loihi 2's LIF "
            f"holds {BIAS_MANT_BITS}: the bundle checks its own samples, else use --input-drive adapter",
            "lava 0.10 lava/proc/lif/models.py (bias_mant: signed 13-bit)",
        )
    ]
