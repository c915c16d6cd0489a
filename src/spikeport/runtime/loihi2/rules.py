"""The rules check-hw checks: each neuron group's cores under the core model fitted to Lava's Loihi 2 compiler
(``core_model.py``) and the limits of a hardware profile it breaks, then the groups placed on chips and the smallest
system of the profile that holds them. Apart from the processes' description (``processes.py``) and the traffic
(``traffic.py``): the one place a limit is read and judged.

Cores per neuron group (a neuron process with the chip synapses that feed it; Loihi keeps a neuron's synapses in
its own core): the block the compiler cuts it into and the cores that takes (``core_model.fit_group``), beside the
lower bound no cut goes under (``floor.py``). The compiler gives every group cores of its own (its public tables
never share a core between layers), so a network's cores are the groups' sum. Limits checked per layer: a group
that does not fit even one neuron a core, weight mantissa bits, delay bits, decay bits.

Chips (docs/netx_and_hardware.md, "Chips and systems"): the neuron groups are packed onto chips of
``cores_per_chip`` cores in layer order; a group goes whole onto the current chip if its cores fit there,
else it starts the next chip; only a group wider than a chip spans chips (from the current chip on). The
chip count names the smallest system of the profile's ``systems`` that holds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.ir.graph import Graph
from spikeport.runtime import placement
from spikeport.runtime.loihi2.core_model import CoreModel, Group, fit_group
from spikeport.runtime.loihi2.floor import network_floor
from spikeport.runtime.loihi2.hw_records import Finding, GroupPlacement, HwCheck, SystemFit
from spikeport.runtime.loihi2.processes import ProcessInfo
from spikeport.runtime.placement import Wide

if TYPE_CHECKING:
    from spikeport.hw_profiles import HwProfile, System


def limit_basis(prof: HwProfile, key: str) -> str:
    """'' for a firm limit (``Quantity.firm``); else '; the limit is <confidence>: <source>' to append to a
    finding's message: the rule is still checked, and a FAIL on a derived limit can be weighed."""
    q = prof.get("limits", key)
    if q is None or q.firm:
        return ""
    return f"; the limit is {q.confidence}: {q.source}"


def _limit(prof: HwProfile, key: str) -> float | None:
    return prof.si("limits", key) if prof.has("limits", key) else None


LIMITS = (  # the profile's limits check-hw reads beside the core model's (each None where the profile sets none)
    "weight_bits",
    "delay_bits",
    "decay_bits",
    "cores_per_chip",
    "state_bits",
)


@dataclass
class Rules:
    """The limits of a profile, and the findings of the rules checked against them."""

    prof: HwProfile
    lim: dict[str, float | None]
    model: CoreModel
    findings: list[Finding] = field(default_factory=list)

    @classmethod
    def of(cls, prof: HwProfile) -> Rules:
        return cls(prof, {k: _limit(prof, k) for k in LIMITS}, CoreModel.of(prof))

    def broken(
        self, layer: str, key: str, value: float, limit: float, message: str, severity: str = "violation"
    ) -> None:
        """A finding: ``layer`` breaks ``key`` (its message says how firm the limit is)."""
        self.findings.append(Finding(layer, key, value, limit, severity, message + limit_basis(self.prof, key)))


def evaluate(graph: Graph, procs: list[ProcessInfo], prof: HwProfile) -> HwCheck:
    """``procs`` (``describe_processes``) against ``prof``: each neuron group's cores and the limits it breaks,
    each chip process's bits, the host <-> chip boundaries and the lower bound under the cores, then the groups
    placed on chips and the smallest system that holds them (the spikes that cross chips and the hardware plan are
    ``check_hw``'s)."""
    rules = Rules.of(prof)
    layers = []
    for group in (p for p in procs if p.neuron_group):
        syn = [p for p in procs if group.name in p.feeds and p.chip_synapse]
        layers.append(group_cores(group, syn, rules))
        check_group(group, syn, layers[-1], rules)
    check_processes(procs, rules)
    per_chip = int(rules.lim["cores_per_chip"]) if rules.lim["cores_per_chip"] else None
    result = HwCheck(prof.name, procs, layers, rules.findings, boundaries(procs), cores_per_chip=per_chip)
    result.floor = network_floor(layers, prof)
    if per_chip is not None:
        place_on_system(result, per_chip, rules)
    return result


def group_cores(group: ProcessInfo, syn: list[ProcessInfo], rules: Rules) -> dict[str, Any]:
    """A neuron group's row: its neurons, the chip synapses ``syn`` that feed it, the weights they store, and the
    core model's cut (``core_model.GroupFit``: the block, the cores and what sets them, the lower bound), with the
    float model's share (``origin``)."""
    bits = [p.weight_bits + (rules.lim["delay_bits"] or 0) * bool(p.max_delay) for p in syn]
    loads = [p.load for p in syn if p.load is not None]
    shape = group_shape(group, syn)
    fit = fit_group(Group(group.type, shape, loads), rules.model)
    return {
        "layer": group.layer,
        "group": group.name,
        "type": group.type,
        "neurons": group.neurons,
        "shape": list(shape),
        "synapses": int(sum(p.synapses for p in syn)),
        "stored_weights": int(sum(p.stored_weights for p in syn)),
        "synapse_bytes": int(sum(p.stored_weights * b for p, b in zip(syn, bits, strict=True)) / 8),
        "fan_in": sum(p.fan_in for p in syn),
        "inputs": sum(p.inputs for p in syn),
        "synapse_processes": [p.name for p in syn],
        "origin": group.origin,
        "model_neurons": group.neurons if group.origin == "model" else 0,
        **fit.to_dict(),
    }


def group_shape(group: ProcessInfo, syn: list[ProcessInfo]) -> tuple[int, ...]:
    """The map a group's neurons form: a Conv's output map where one feeds it (Lava's neuron processes are often
    flat), else the neurons' own shape."""
    maps = [tuple(p.shape) for p in syn if p.kernel_rows and len(p.shape) == 3]
    if maps and int(np.prod(maps[0])) == group.neurons:
        return maps[0]
    return tuple(group.shape) or (group.neurons,)


# the profile limit each budget of the core model is
BUDGET_KEYS = {
    "neurons": "neurons_per_core",
    "synaptic memory": "synmem_units_per_core",
    "input axons": "fan_in_axons_per_core",
}


def check_group(group: ProcessInfo, syn: list[ProcessInfo], row: dict[str, Any], rules: Rules) -> None:
    """A group the core model cannot cut small enough (one neuron with its synapses overflows a core), and the
    worst-case sums of its graded synapses against the chip's accumulator (a warning)."""
    if not row["fits"]:
        model, budget = rules.model, row["bound_by"]
        limit, value = {
            "neurons": (model.neurons, row["neurons_per_core"]),
            "synaptic memory": (model.synmem, row["synmem_per_core"]),
            "input axons": (model.axons_in, row["axons_per_core"]),
        }[budget]
        rules.broken(
            group.layer,
            BUDGET_KEYS[budget],
            value,
            limit,
            f"one neuron of '{group.name}' with its synapses needs {value:,} units of a core's {budget}, past the "
            f"{limit:,} a core holds (fan-in {row['fan_in']:,}): its inputs need splitting into partial sums",
        )
    state = rules.lim["state_bits"]
    for p in syn:
        worst = p.payload_bits + p.weight_bits + math.ceil(math.log2(max(p.fan_in, 1))) if p.payload_bits else 0
        if state and worst > state:
            rules.broken(
                group.layer,
                "graded_accumulator_bits",
                worst,
                state,
                f"{p.name} sums {p.payload_bits}-bit graded inputs x {p.weight_bits}-bit weights over a fan-in "
                f"of {p.fan_in}: the worst case needs {worst} bits; the chip's accumulator may saturate where "
                "the CPU model does not (calibrated sums usually stay far below)",
                severity="warning",
            )


def check_processes(procs: list[ProcessInfo], rules: Rules) -> None:
    """Each chip process's weight mantissa, delays and decay constants against the bits the chip keeps."""
    lim = rules.lim
    for p in (p for p in procs if p.placement == "chip"):
        if lim["weight_bits"] and p.weight_bits > lim["weight_bits"]:
            rules.broken(
                p.layer,
                "weight_bits",
                p.weight_bits,
                lim["weight_bits"],
                f"process '{p.name}': weights need a {p.weight_bits}-bit mantissa",
            )
        if lim["delay_bits"] and p.max_delay > 2 ** lim["delay_bits"] - 1:
            rules.broken(
                p.layer,
                "delay_bits",
                p.max_delay,
                2 ** lim["delay_bits"] - 1,
                f"process '{p.name}': delay {p.max_delay} steps does not fit {lim['delay_bits']:g} bits",
            )
        if lim["decay_bits"] and p.max_decay > 2 ** lim["decay_bits"] - 1:
            rules.broken(
                p.layer,
                "decay_bits",
                p.max_decay,
                2 ** lim["decay_bits"] - 1,
                f"process '{p.name}': decay constant {p.max_decay} does not fit {lim['decay_bits']:g} bits",
            )


def boundaries(procs: list[ProcessInfo]) -> list[dict[str, str]]:
    """The connections between a host process and a chip process (each needs an adapter on hardware)."""
    by_name = {p.name: p for p in procs}
    return [
        {"from": p.name, "to": q, "direction": f"{p.placement}->{by_name[q].placement}"}
        for p in procs
        for q in p.feeds
        if q in by_name and by_name[q].placement != p.placement
    ]


def place_on_system(result: HwCheck, per_chip: int, rules: Rules) -> None:
    """The neuron groups placed on chips of ``per_chip`` cores, and the smallest system of the profile that holds
    them (a violation where none does)."""
    prof = rules.prof
    result.placement = place(result.layers, per_chip)
    chips = result.chips or 1
    result.system = smallest_system(prof.systems, chips)
    if not prof.systems:
        return
    largest = max(prof.systems, key=lambda s: _capacity(s))
    result.largest_system = f"{largest.name} ({_capacity(largest):,} chips)"
    if result.system is None:
        rules.broken(
            "<network>",
            "chips",
            chips,
            _capacity(largest),
            f"the chip-mappable part needs {chips} chips of {per_chip} cores; the largest system of profile "
            f"{prof.name} is {result.largest_system}",
        )


def place(layers: list[dict[str, Any]], per_chip: int) -> list[GroupPlacement]:
    """Neuron groups onto chips of ``per_chip`` cores, in layer order, by ``runtime.placement``'s rule (the
    partitioned Lava run's too): a group whole onto the current chip if its cores fit there, else from the start of
    the next chip; a group wider than a chip spans chips from the current one on."""
    plan = placement.place([(row["group"], row["cores"]) for row in layers], per_chip, Wide.SPAN)
    return [
        GroupPlacement(row["group"], row["layer"], row["neurons"], slot.size, slot.start)
        for row, slot in zip(layers, plan.slots, strict=True)
    ]


def _capacity(system: System) -> int:
    return int(system.chips.si * (system.max_stack.si if system.max_stack is not None else 1))


def smallest_system(systems: tuple[System, ...], chips: int) -> SystemFit | None:
    """The system with the fewest chips that holds ``chips``: a board, a stack of boards (up to its
    ``max_stack``), or a whole system; None if none does."""
    fits = []
    for s in systems:
        per = int(s.chips.si)
        stack = max(1, math.ceil(chips / per))
        if stack == 1 or (s.max_stack is not None and stack <= s.max_stack.si):
            fits.append(SystemFit(s, stack, chips))
    return min(fits, key=lambda f: (f.capacity, f.stack), default=None)
