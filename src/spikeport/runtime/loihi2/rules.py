"""The rules check-hw checks: each neuron group's cores and the limits of a hardware profile it breaks, then the
groups placed on chips and the smallest system of the profile that holds them. Apart from the processes'
description (``processes.py``) and the traffic (``traffic.py``): the one place a limit is read and judged.

Cores per neuron group (a neuron process with the chip synapses that feed it; Loihi keeps a neuron's
synapses in its own core): ``max(neurons / neurons_per_core, synapse bytes / synaptic_memory_per_core,
distinct inputs / fan_in_axons_per_core)``, rounded up. Sparse synapses are stored one by one (weight bits,
plus delay bits for DelaySparse); a Conv shares its kernel: with the neurons laid out channel by channel, a
core stores the kernel slices of the channels it holds, a slice once per core its channel spans
(docs/loihi2_sources.md section 1: Intel's compile logs show a conv layer's synapse memory scaling with the
kernel, not with the pixels). Limits checked per layer: one neuron's fan-in against the axons and the
synaptic memory of a core, weight mantissa bits, delay bits, decay bits.

Chips (docs/netx_and_hardware.md, "Chips and systems"): the neuron groups are packed onto chips of
``cores_per_chip`` cores in layer order; a group goes whole onto the current chip if its cores fit there,
else it starts the next chip; only a group wider than a chip spans chips (from the current chip on). The
chip count names the smallest system of the profile's ``systems`` that holds it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spikeport.ir.graph import Graph
from spikeport.runtime import placement
from spikeport.runtime.lava.facts import WeightStorage
from spikeport.runtime.loihi2.hw_records import Finding, GroupPlacement, HwCheck, SystemFit
from spikeport.runtime.loihi2.packing import LOADS, Run, limits_of, loads, network_floor, pack, shares
from spikeport.runtime.loihi2.processes import ProcessInfo, kernel_copies
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


LIMITS = (  # the profile's limits check-hw reads (each None where the profile sets none)
    "neurons_per_core",
    "synaptic_memory_per_core",
    "fan_in_axons_per_core",
    "weight_bits",
    "delay_bits",
    "decay_bits",
    "cores_per_chip",
    "state_bits",
    "neuron_groups_per_core",
)


@dataclass
class Rules:
    """The limits of a profile, and the findings of the rules checked against them."""

    prof: HwProfile
    lim: dict[str, float | None]
    loads: dict[str, float | None]  # the limits a neuron group's three loads are divided by (packing.LOADS)
    findings: list[Finding] = field(default_factory=list)

    @classmethod
    def of(cls, prof: HwProfile) -> Rules:
        return cls(prof, {k: _limit(prof, k) for k in LIMITS}, limits_of(prof))

    def broken(
        self, layer: str, key: str, value: float, limit: float, message: str, severity: str = "violation"
    ) -> None:
        """A finding: ``layer`` breaks ``key`` (its message says how firm the limit is)."""
        self.findings.append(Finding(layer, key, value, limit, severity, message + limit_basis(self.prof, key)))


def evaluate(graph: Graph, procs: list[ProcessInfo], prof: HwProfile) -> HwCheck:
    """``procs`` (``describe_processes``) against ``prof``: each neuron group's cores and the limits it breaks,
    each chip process's bits, the host <-> chip boundaries, the floor under the cores and the groups packed onto
    runs of cores (``packing.py``), then the runs placed on chips and the smallest system that holds them (the
    spikes that cross chips and the hardware plan are ``check_hw``'s)."""
    rules = Rules.of(prof)
    layers = []
    for group in (p for p in procs if p.neuron_group):
        syn = [p for p in procs if group.name in p.feeds and p.chip_synapse]
        layers.append(group_cores(group, syn, rules))
        check_group(group, syn, rules)
    check_processes(procs, rules)
    per_chip = int(rules.lim["cores_per_chip"]) if rules.lim["cores_per_chip"] else None
    per_core = int(rules.lim["neuron_groups_per_core"]) if rules.lim["neuron_groups_per_core"] else None
    result = HwCheck(
        prof.name, procs, layers, rules.findings, boundaries(procs), cores_per_chip=per_chip, groups_per_core=per_core
    )
    result.floor = network_floor(layers, prof)
    result.runs = pack(layers, rules.loads, per_core)
    for row, share in zip(layers, shares(result.runs, layers, rules.loads), strict=True):
        row["share"] = round(share, 3)  # the group's part of its run's cores
    if per_chip is not None:
        place_on_system(result, per_chip, rules)
    return result


def _bits(syn: list[ProcessInfo], lim: dict[str, float | None]) -> float:
    """Bits a stored synapse takes: its weight, plus its delay where any synapse of the group is delayed."""
    return (lim["weight_bits"] or 8) + (lim["delay_bits"] or 0) * any(p.max_delay for p in syn)


def group_cores(group: ProcessInfo, syn: list[ProcessInfo], rules: Rules) -> dict[str, Any]:
    """A neuron group's row: its neurons, the chip synapses ``syn`` that feed it, the bytes they take and the cores
    that hold it alone (the largest of what neurons, synaptic memory and fan-in axons each need), the float model's
    share of each (``origin``) and the group's floor (its largest load in cores, unrounded)."""
    lim = rules.lim
    bits = _bits(syn, lim)
    # Sparse synapses are stored one by one and split across cores. A Conv's kernel is shared: a core
    # stores the kernel slices of the output channels its neurons hold, a slice once per core its channel
    # spans. That assumes the compiler splits a Conv-fed group by feature ([inferred] from lava's
    # ConvInVarModel(x_split, f_split), docs/loihi2_sources.md section 1); in the raster order of the
    # Lava process every core would need the whole kernel
    stored = {p.name: p.stored_weights * kernel_copies(p, lim["neurons_per_core"]) for p in syn}
    shared = WeightStorage.SHARED_KERNEL.value
    kernel_bytes = sum(stored[p.name] for p in syn if p.storage == shared) * bits / 8
    syn_bytes = sum(stored[p.name] for p in syn if p.storage != shared) * bits / 8
    model_syn = [p for p in syn if p.origin == "model"]
    drivers = {
        "neurons_per_core": _ceil(group.neurons, lim["neurons_per_core"]),
        "synaptic_memory_per_core": _ceil(syn_bytes + kernel_bytes, lim["synaptic_memory_per_core"]),
        "fan_in_axons_per_core": _ceil(sum(p.inputs for p in syn), lim["fan_in_axons_per_core"]),
    }
    row: dict[str, Any] = {
        "layer": group.layer,
        "group": group.name,
        "neurons": group.neurons,
        "synapses": int(sum(p.synapses for p in syn)),
        "stored_weights": int(sum(stored.values())),
        "synapse_bytes": int(syn_bytes + kernel_bytes),
        "fan_in": sum(p.fan_in for p in syn),
        "cores": max(1, *drivers.values()),
        "cores_by": max(drivers, key=lambda k: drivers[k]),
        "synapse_processes": [p.name for p in syn],
        "inputs": sum(p.inputs for p in syn),
        "origin": group.origin,
        "model_neurons": group.neurons if group.origin == "model" else 0,
        "model_synapse_bytes": int(sum(stored[p.name] for p in model_syn) * bits / 8),
        "model_inputs": sum(p.inputs for p in model_syn),
    }
    own = loads(row, rules.loads)
    row["floor"] = round(max(own), 3)
    row["floor_by"] = [limit for _, limit in LOADS][own.index(max(own))]
    return row


def check_group(group: ProcessInfo, syn: list[ProcessInfo], rules: Rules) -> None:
    """What one neuron of the group reads against a core (axons, synaptic memory), and the worst-case sums of its
    graded synapses against the chip's accumulator (a warning)."""
    lim, fan_in, bits = rules.lim, sum(p.fan_in for p in syn), _bits(syn, rules.lim)
    axons, memory, state = lim["fan_in_axons_per_core"], lim["synaptic_memory_per_core"], lim["state_bits"]
    if axons and fan_in > axons:
        rules.broken(
            group.layer,
            "fan_in_axons_per_core",
            fan_in,
            axons,
            f"one neuron reads {fan_in} inputs; a core receives at most {axons:g} axons",
        )
    if memory and fan_in * bits / 8 > memory:
        rules.broken(
            group.layer,
            "synaptic_memory_per_core",
            fan_in * bits / 8,
            memory,
            f"the synapses of one neuron need {fan_in * bits / 8:g} B, more than a core's synaptic memory",
        )
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
    result.placement = place(result.layers, per_chip, result.runs)
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


def place(layers: list[dict[str, Any]], per_chip: int, runs: Sequence[Run] = ()) -> list[GroupPlacement]:
    """Neuron groups onto chips of ``per_chip`` cores, in layer order, a run of packed groups at a time (``runs``;
    default every group its own run) by ``runtime.placement``'s rule (the partitioned Lava run's too): the run
    whole onto the current chip if its cores fit there, else from the start of the next chip; a run wider than a
    chip spans chips from the current one on. The groups of a run share its cores (each spread over all of them)."""
    runs = runs or [Run((i,), row["cores"]) for i, row in enumerate(layers)]
    plan = placement.place([(layers[run.rows[0]]["group"], run.cores) for run in runs], per_chip, Wide.SPAN)
    return [
        GroupPlacement(layers[i]["group"], layers[i]["layer"], layers[i]["neurons"], slot.size, slot.start)
        for run, slot in zip(runs, plan.slots, strict=True)
        for i in run.rows
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


def _ceil(x: float, per: float | None) -> int:
    return int(math.ceil(x / per)) if per else 0
