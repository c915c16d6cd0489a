"""What a built Lava process holds between time steps: the state Vars of its fixed-point model.

The widths are each class's record in ``facts.PROCESSES`` (declared beside the lowering that builds it); a
class without a record is an error naming it. check-hw (spikeport.runtime.loihi2) places and prices them; a
Lava run report lists them (``lava.state``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spikeport.errors import ConversionError
from spikeport.runtime.lava.facts import PROCESSES


def process_state(proc: Any) -> list[dict[str, Any]]:
    """The Vars a built Lava process keeps between time steps: name, shape, bits, bytes."""
    facts = PROCESSES.of(proc)
    bits = facts.state
    missing = sorted(set(bits) - {var.name for var in proc.vars})
    if missing:
        raise ConversionError(
            f"Lava process '{proc.name}' ({facts.name}) has no Var {', '.join(missing)}, which its record in "
            f"spikeport.runtime.lava.facts declares as state ({facts.source})"
        )
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
