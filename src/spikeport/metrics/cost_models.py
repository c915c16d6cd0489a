"""The cost models: a run's ``OpCounts`` x a hardware profile's cost table -> an ``EnergyEstimate``.

One pricing per kind of profile and method (docs/energy.md has the formulas): :func:`neuromorphic_estimate`
(every counter at the profile's cost for that event), :func:`cmos_estimate` (ACs and MACs at the chosen precision;
the ``memory`` method adds the SRAM accesses without data reuse) and :func:`literature_estimate` (the
spiking-transformer convention E_MAC x FLOPs(first layer) + E_AC x SOPs). Each lists what it leaves out. Which one
a run gets, and the measured figure, is ``metrics/energy.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from spikeport.hw_profiles import HwProfile
from spikeport.metrics.energy_records import ENTRIES, CountingRule, EnergyEstimate, LayerEnergy, OpCounts, Term


class _Pricer:
    """Collects priced terms per layer and the events a profile cannot price."""

    def __init__(self, profile: HwProfile):
        self.profile = profile
        self.layers: list[LayerEnergy] = []
        self.unpriced: dict[str, float] = {}

    def cost(self, keys: Sequence[tuple[float, str]]) -> tuple[float, str] | None:
        """Energy of one event = sum of factor x profile entry; None when an entry is missing."""
        total, names = 0.0, []
        for factor, key in keys:
            q = self.profile.get("energy", key)
            if q is None:
                return None
            total += factor * q.si
            names.append(key if factor == 1 else f"{factor:g} x {key}")
        return total, " + ".join(names)

    def add(self, layer: LayerEnergy, counter: str, count: float, keys: Sequence[tuple[float, str]]) -> None:
        if count == 0:
            return
        priced = self.cost(keys)
        if priced is None:
            self.unpriced[counter] = self.unpriced.get(counter, 0.0) + count
            return
        unit, names = priced
        layer.terms.append(Term(counter, count, names, unit, unit * count))
        layer.energy_J += unit * count

    def finish(
        self, label: str, method: str, rule: CountingRule, left_out: list[str], notes: list[str]
    ) -> EnergyEstimate:
        by_counter: dict[str, float] = {}
        for layer in self.layers:
            for t in layer.terms:
                by_counter[t.counter] = by_counter.get(t.counter, 0.0) + t.energy_J
        missing = [
            f"{count:.4g} {counter} per inference: profile '{self.profile.name}' has no cost for them"
            for counter, count in self.unpriced.items()
        ]
        return EnergyEstimate(
            label,
            "estimated",
            method,
            self.profile.name,
            sum(layer.energy_J for layer in self.layers),
            self.layers,
            by_counter,
            missing + left_out,
            notes,
            asdict(rule),
        )


def _label(profile: HwProfile, method: str) -> str:
    suffix = {
        "native": "",
        "literature": "; literature convention E_MAC x FLOPs(first layer) + E_AC x SOPs",
        "memory": "; with SRAM accesses, no data reuse",
    }[method]
    return f"estimated (op counts x cost table {profile.name}{suffix})"


STATIC_LEFT_OUT = "static power x run time (the profile has no static power or time per step)"


def neuromorphic_estimate(
    counts: list[OpCounts], profile: HwProfile, rule: CountingRule, method: str
) -> EnergyEstimate:
    p = _Pricer(profile)
    integer = (
        ("integer_values", [(1, "synop")])
        if rule.integer_inputs == "value_acs"
        else ("integer_events", [(1, "synop_graded")])
    )
    for c in counts:
        layer = LayerEnergy(c.name, c.op, 0.0)
        p.add(layer, "first_layer_macs", c.first_layer_macs, [(1, "synop_graded")])
        p.add(layer, "spike_acs", c.spike_acs, [(1, "synop")])
        p.add(layer, integer[0], getattr(c, integer[0]), integer[1])
        if not c.counted["dendritic_updates"]:  # a dendritic node's products are its compartment dynamics (below)
            p.add(layer, "other_macs", c.other_macs, [(1, "synop_graded")])
        for name, entry in ENTRIES:  # each at its own profile entry
            p.add(layer, name, c.counted[name], [(1, entry)])
        p.layers.append(layer)
    left_out = [
        "mesh routing beyond one tile (spike_hop_* x hops: the placement is not known here)",
        "host <-> chip I/O (the input frames; lava-dl's PilotNet SDNN benchmark is I/O-bound)",
        STATIC_LEFT_OUT,
        "embedded x86 (Lakemont) work and host-side processes",
    ]
    notes = [
        "every neuron is priced as active at every time step (neuron_update, not the inactive cost): an upper bound",
        "graded-spike inputs (analog first layer, attention products) priced as synop_graded",
        "a dendritic node (chip-native lowering) is priced by what it runs: identity and token-mixing synops, "
        "coincidence and product neuron updates, the products' graded messages as synop_graded",
        "per-op energies of this profile: "
        + ", ".join(f"{k} {q.confidence}" for k, q in profile.sections.get("energy", {}).items()),
    ]
    if method == "memory":
        notes.append(
            "memory method: a neuromorphic core's per-op energy already includes its local SRAM "
            "accesses, so it equals the native estimate"
        )
    return p.finish(_label(profile, method), method, rule, left_out, notes)


def cmos_estimate(counts: list[OpCounts], profile: HwProfile, rule: CountingRule, method: str) -> EnergyEstimate:
    p = _Pricer(profile)
    pr = rule.precision
    add, mac, mult = f"add_{pr}", f"mac_{pr}", f"mult_{pr}"
    mem = method == "memory"
    rd, wr = "sram_read_32b", ("sram_write_32b" if profile.has("energy", "sram_write_32b") else "sram_read_32b")
    # Lemaire-style, no reuse: an AC reads its weight and read-modify-writes the target potential; a MAC
    # reads weight and input and accumulates in a register; a LIF update reads and writes u and v.
    ac_cost = [(1, add)] + ([(1, rd), (1, rd), (1, wr)] if mem else [])
    mac_cost = [(1, mac)] + ([(2, rd)] if mem else [])
    for c in counts:
        layer = LayerEnergy(c.name, c.op, 0.0)
        p.add(layer, "first_layer_macs", c.first_layer_macs, mac_cost)
        p.add(layer, "spike_acs", c.spike_acs, ac_cost)
        if rule.integer_inputs == "value_acs":
            p.add(layer, "integer_values", c.integer_values, ac_cost)
        else:
            p.add(layer, "integer_events", c.integer_events, mac_cost)
        p.add(layer, "other_macs", c.other_macs, mac_cost)
        if mem:
            p.add(
                layer,
                "neuron_updates",
                c.counted["neuron_updates"],
                [(2, mult), (3, add), (2, rd), (2, wr)]
                if profile.has("energy", mult)
                else [(3, add), (2, rd), (2, wr)],
            )
            p.add(layer, "dendritic_updates", c.counted["dendritic_updates"], [(1, rd), (1, wr)])
        p.layers.append(layer)
    left_out = [
        "spike communication / addressing (no interconnect model)",
        "static (leakage) power",
        "DRAM traffic (all operands assumed in on-chip SRAM)",
    ]
    if not mem:
        left_out[:0] = [
            "memory accesses of weights and membrane potentials (see the 'memory' method)",
            "neuron updates (leak, threshold, reset) - not priced by the CMOS op-count model",
        ]
    notes = [
        f"arithmetic at {pr}: AC = {add}, MAC = {mac}",
        "dendritic updates: their arithmetic is in the dendritic node's MACs, not priced twice",
    ]
    if mem:
        notes.append(
            "memory method: one 32-bit SRAM word per operand regardless of precision; AC = add + "
            "read weight + read/write potential; MAC = mac + read weight + read input; LIF update = "
            "2 mult + 3 add + read/write u and v; dendritic update = read/write X"
        )
    return p.finish(_label(profile, method), method, rule, left_out, notes)


def literature_estimate(counts: list[OpCounts], profile: HwProfile, rule: CountingRule) -> EnergyEstimate:
    pr = rule.precision
    e_mac, e_ac = f"mac_{pr}", f"add_{pr}"
    for key in (e_mac, e_ac):
        profile.si("energy", key)  # a clear ProfileError if the convention cannot be priced
    p = _Pricer(profile)
    other = 0.0
    for c in counts:
        layer = LayerEnergy(c.name, c.op, 0.0)
        p.add(layer, "first_layer_macs", c.first_layer_macs, [(1, e_mac)])
        p.add(layer, "spike_acs", c.spike_acs, [(1, e_ac)])
        p.add(
            layer,
            "integer_values" if rule.integer_inputs == "value_acs" else "integer_events",
            c.integer_values if rule.integer_inputs == "value_acs" else c.integer_events,
            [(1, e_ac)] if rule.integer_inputs == "value_acs" else [(1, e_mac)],
        )
        other += c.other_macs
        p.layers.append(layer)
    would = other * profile.si("energy", e_mac)
    left_out = [
        f"{other:.4g} other MACs per inference (attention rescale, dendritic dynamics, readout): "
        f"not in the convention's formula; they would add {would:.4g} J at {e_mac}",
        "neuron updates, spike communication, memory accesses, static power",
    ]
    notes = [
        f"E_MAC = {profile.cite('energy', e_mac)}",
        f"E_AC = {profile.cite('energy', e_ac)}",
        "SOPs = every accumulate driven by spikes (fr x T x FLOPs of each spike-driven layer)"
        + (
            " plus integer inputs by value"
            if rule.integer_inputs == "value_acs"
            else "; integer inputs as MACs per non-zero input"
        ),
        "first layer charged " + ("at every time step (x T)" if rule.first_layer_per_timestep else "once"),
    ]
    return p.finish(_label(profile, "literature"), "literature", rule, left_out, notes)
