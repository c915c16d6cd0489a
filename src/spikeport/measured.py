"""What a measured Loihi 2 run can have measured: the physical bounds every measured figure is held to.

A measurement comes back from somewhere else (a bundle's ``result.json`` copied from a vLab VM, a published figure
typed into a run report): ``run_report`` (its ``energy_measured`` block) and ``metrics.calibrate`` (the points of a
fit) hold it to these bounds before a single figure is computed from it, and refuse it naming the field. Each bound
is loose enough for any real run and says where it comes from (reference/loihi2_hw.md):

- chips: a whole number, 1 .. 1,152 (Hala Point, the largest Loihi 2 system); cores 1 .. 140,544 (its cores);
- power: positive, and no chip draws more than a whole Hala Point system, 2.6 kW (for 1,152 chips: a Loihi 2 chip
  draws about 1 W; PilotNet-LIF 0.679 W on Oheo Gulch), whether the power is given or implied by the energy of an
  inference over its steps;
- a time step: positive, at most 1 s (17x the slowest published, PilotNet-SDNN's 59 ms, I/O-bound);
- energies: finite, total and static positive (a chip draws static power), dynamic at least 0 (the profiler clamps
  it there), static and dynamic summing to the total within 1 % where all three are given; an inference's energy
  over its steps (at most 10,000 of 1 s where the report does not say) within the power bound.

Standard library only: ``run_report`` reads files with it alone.
"""

from __future__ import annotations

import math
from typing import Any

from spikeport.chip_limits import HALA_POINT_CHIPS, HALA_POINT_CORES, HALA_POINT_W

MAX_STEP_S = 1.0
MAX_STEPS = 10_000  # ir.limits.MAX_T: the most steps an inference of a run report holds
SPLIT_TOLERANCE = 0.01

# energy_measured's figures: field -> (unit, must be > 0)
FIGURES = {
    "total_J": ("joules", True),
    "static_J": ("joules", True),
    "dynamic_J": ("joules", False),
    "total_power_W": ("watts", True),
    "static_power_W": ("watts", True),
    "time_per_step_s": ("seconds", True),
}


def problem(m: dict[str, Any], steps: int | None = None, samples: int = 1) -> tuple[str, str] | None:
    """The first field of a measurement ``m`` (an ``energy_measured`` block) that no Loihi 2 run can have measured,
    and why: ``(field, problem)``; None when every figure is within the bounds. ``steps``: the time steps an
    inference holds the chips (T, or a streamed run's reset interval; None: unknown), ``samples`` the run's."""
    for key in ("chips", "cores"):
        most = HALA_POINT_CHIPS if key == "chips" else HALA_POINT_CORES
        if key in m and not (_whole(m[key]) and 1 <= m[key] <= most):
            return key, f"{_shown(m[key])}: expected a whole number of {key}, 1..{most:,} (Hala Point's)"
    chips = m.get("chips", 1)
    for key, (unit, positive) in FIGURES.items():
        if key not in m:
            continue
        v = m[key]
        if not (_real(v) and math.isfinite(v) and (v > 0 if positive else v >= 0)):
            return key, f"{_shown(v)}: expected {unit}, a finite number {'> 0' if positive else '>= 0'}"
    for key in ("total_power_W", "static_power_W"):
        if key in m and m[key] > HALA_POINT_W * chips:
            return key, f"{m[key]:.4g} W on {chips} chip(s): more than a whole Hala Point system ({HALA_POINT_W:g} W)"
    if m.get("time_per_step_s", 0) > MAX_STEP_S:
        return "time_per_step_s", f"{m['time_per_step_s']:.4g} s a step: Loihi 2 steps take microseconds to tens of ms"
    if all(k in m for k in ("total_J", "static_J", "dynamic_J")):
        total, parts = m["total_J"], m["static_J"] + m["dynamic_J"]
        if abs(parts - total) > SPLIT_TOLERANCE * total:
            return "total_J", f"{total:.4g} J is not static_J + dynamic_J ({parts:.4g} J)"
    if "total_J" in m:  # over the steps of an inference (the longest run a report holds where they are unknown)
        per_inference = m["total_J"] / (1 if m.get("per_inference", True) else samples)
        seconds = m.get("time_per_step_s", MAX_STEP_S) * (steps or MAX_STEPS)
        watts = per_inference / seconds
        if watts > HALA_POINT_W * chips:
            return "total_J", (
                f"{per_inference:.4g} J an inference in {seconds:.4g} s is {watts:.4g} W on {chips} chip(s): more "
                f"than a whole Hala Point system ({HALA_POINT_W:g} W)"
            )
    return None


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _real(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."
