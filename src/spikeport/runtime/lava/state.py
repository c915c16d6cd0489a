"""What a built Lava process holds between time steps: the state Vars of Lava's fixed-point models.

check-hw (spikeport.runtime.loihi2) places and prices them; a Lava run report lists them (``lava.state``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The Vars each process keeps from one time step to the next, with their bits: the LavaPyType precisions
# of Lava's fixed-point / bit-accurate CPU models (lava 0.10: proc/lif, sparse, dense, conv, graded, sdn,
# prodneuron models) and of spikeport's own models. Parameters (weights, thresholds) are not state.
STATE_VARS: dict[str, dict[str, int]] = {
    "LIF": {"u": 24, "v": 24},
    "LIFReset": {"u": 24, "v": 24},
    "Dense": {"a_buff": 16},
    "Sparse": {"a_buff": 16},
    "DelayDense": {"a_buff": 16},  # [n_out, max_delay + 1]: one accumulator per pending delay
    "DelaySparse": {"a_buff": 16},
    "Conv": {"a_buf": 24},
    "GradedVec": {"v": 24},
    "SigmaDelta": {"sigma": 24, "act": 24, "residue": 24, "error": 24},
    "Delta": {"act": 24, "residue": 24, "error": 24},  # its model never integrates its sigma Var
    "Sigma": {"sigma": 24},
    "RF": {"real": 24, "imag": 24},
    "RF_IZ": {"real": 24, "imag": 24},
    "AttentionCore": {"kv": 16},  # K^T V (or the causal running sum): d_h x d_h per head
    "ProdNeuron": {"v": 24},
}


def process_state(proc: Any) -> list[dict[str, Any]]:
    """The Vars a built Lava process keeps between time steps (STATE_VARS): name, shape, bits, bytes."""
    bits = STATE_VARS.get(type(proc).__name__, {})
    out = []
    for var in proc.vars:
        if var.name in bits:
            shape = [int(s) for s in var.shape]
            out.append(
                {
                    "var": var.name,
                    "shape": shape,
                    "bits": bits[var.name],
                    "bytes": (int(np.prod(shape)) * bits[var.name] + 7) // 8,
                }
            )
    return out


def held_state(processes: list[Any]) -> list[dict[str, Any]]:
    """One row per process that holds state: its name, Lava type, Vars and bytes."""
    rows = []
    for proc in processes:
        held = process_state(proc)
        if held:
            rows.append(
                {
                    "process": proc.name,
                    "type": type(proc).__name__,
                    "vars": held,
                    "bytes": sum(v["bytes"] for v in held),
                }
            )
    return rows
