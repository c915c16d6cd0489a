"""Hardware readiness: which Lava processes of a converted network can go on Loihi 2, how many cores and
chips they need, the smallest Loihi 2 system that holds them, and which limit of a hardware profile a layer
breaks (DESIGN.md section 5).

``check_hw`` builds the network's hardware plan (``plan.py``: the processes ``runtime.lava.backend`` really
creates, built, not compiled or run) and checks it, a step per module:

- ``processes.py``: each process described (chip or host, size, fan-in, bits, state; ``describe_processes``);
- ``rules.py``: each neuron group's cores against the profile's limits, the groups placed on chips and the
  smallest system that holds them (``evaluate``);
- ``traffic.py``: the spikes that cross chips (``chip_traffic``);
- ``hw_records.py``: the result, ``HwCheck`` (schema spikeport.check_hw), and its records.

The names tests, scripts and benchmarks import from here are re-exported (``__all__``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spikeport.errors import ProfileError
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.ir.graph import Graph
from spikeport.run_report import RunReport
from spikeport.runtime.lava.backend import release
from spikeport.runtime.lava.compat import drop_repeated_log_handlers
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.hw_records import HwCheck
from spikeport.runtime.loihi2.pitfalls import bias_pitfall, pitfalls
from spikeport.runtime.loihi2.plan import build_plan_network
from spikeport.runtime.loihi2.processes import describe_processes, mantissa_bits
from spikeport.runtime.loihi2.rules import evaluate, place, smallest_system
from spikeport.runtime.loihi2.traffic import DEFAULT_RATE, _reach, chip_traffic, spike_rates

__all__ = [
    "DEFAULT_RATE",
    "HwCheck",
    "_reach",
    "check_hw",
    "chip_traffic",
    "describe_processes",
    "evaluate",
    "mantissa_bits",
    "place",
    "smallest_system",
    "spike_rates",
]


def check_hw(
    graph: Graph,
    profile: str | Path | HwProfile = "loihi2",
    run_report: RunReport | dict[str, Any] | None = None,
    rate: float = DEFAULT_RATE,
    drive: ChipDrive | str | None = None,
    states: Sequence[str] = (),
) -> HwCheck:
    """Build the graph's hardware plan (``plan.py``: its Lava processes, not run) and check it against ``profile``
    (name, path or HwProfile); ``drive`` and ``states`` as the plan takes them.

    The spikes that cross chips are counted from ``run_report``'s per-layer spikes where it counts a neuron
    group, and at ``rate`` spikes per neuron and step elsewhere (the result says which)."""
    if not 0 <= rate <= 1:
        raise ValueError(f"rate {rate} is not a probability")
    prof = profile if isinstance(profile, HwProfile) else load_profile(profile)
    if not prof.has("limits", "neurons_per_core"):  # cores are counted in neurons per core, at the least
        raise ProfileError(
            f"{prof.path}: profile '{prof.name}' ({prof.kind}) has no chip limits (limits.neurons_per_core): check-hw "
            "maps a network onto neuromorphic cores; use a profile with a 'limits' section (loihi2, loihi1)"
        )
    built = build_plan_network(graph, drive, states)
    procs = describe_processes(graph, built.net, prof, host_readout=False)
    result = evaluate(graph, procs, prof)
    result.traffic = chip_traffic(graph, built.net, result, run_report, rate)
    built.plan.pitfalls = pitfalls(built.net, result.cores) + bias_pitfall(built.plan)
    result.plan = built.plan
    release(built.net.processes)  # Lava's servers and logger would keep them for the life of the interpreter
    drop_repeated_log_handlers()
    return result
