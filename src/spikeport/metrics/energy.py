"""Energy per inference from a run report's op counts, priced with a hardware profile.

Three methods, all labelled ``estimated (op counts x cost table <profile>)`` and each listing what it
leaves out (docs/energy.md has the formulas, docs/counting.md how the counts are made):

``native``      every counter priced at the profile's cost for that event: neuromorphic profiles price
                synops, graded synops, neuron / dendritic updates and spikes; CMOS profiles price ACs
                and MACs at the chosen arithmetic precision.
``literature``  the spiking-transformer convention, E_MAC x FLOPs(first layer) + E_AC x SOPs, so that
                numbers compare with published tables (Spikformer, SDT, QKFormer...).
``memory``      ``native`` plus the SRAM accesses each operation needs without data reuse (weights and
                membrane potentials; Lemaire et al. 2022 / Dampfhoffer et al. 2023 style).

Measured energy (Lava's Loihi2HWProfiler, NVML) enters through ``measured_energy``. The module is numpy-
and torch-free: it reads the JSON of any executor.

A network placed on several chips (``spikeport check-hw``) also sends spikes from chip to chip: given its
``ChipTraffic``, a neuromorphic estimate carries a separate, labelled ``chip_crossings`` line (messages x the
profile's ``spike_chip_hop``), not added to the op-count total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from spikeport import counters
from spikeport.chip_traffic import ChipTraffic
from spikeport.errors import ConfigError, ProfileError, unknown_choice
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.run_report import RunReport, as_dict
from spikeport.value_kinds import NONE, VALUE_KINDS, Pricing

SCHEMA = "spikeport.energy"
SCHEMA_VERSION = 1
METHODS = ("native", "literature", "memory")
INTEGER_RULES = ("value_acs", "event_macs")
PRECISIONS = ("fp32", "fp16", "int32", "int8")


@dataclass(frozen=True)
class CountingRule:
    """How counts become priced operations. Defaults reproduce the published Spikformer arithmetic."""

    # Integer (graded) inputs such as SEW residual sums: "value_acs" = value x fan-out accumulates (the
    # public syops counter's rate = sum/numel, Spikingformer's "calculation 1"); "event_macs" = one
    # multiply-accumulate per non-zero input and synapse (a graded spike / an integer-weight product).
    integer_inputs: str = "value_acs"
    # The analog first layer sees the same image at every time step (direct coding): charge its MACs at
    # every step (True: Spikformer's published figures) or once per inference (False).
    first_layer_per_timestep: bool = True
    # CMOS arithmetic precision of add / mult / mac entries ("fp32" is the literature's 0.9 / 4.6 pJ).
    precision: str = "fp32"

    def __post_init__(self) -> None:
        if self.integer_inputs not in INTEGER_RULES:
            raise unknown_choice("integer-input rule", self.integer_inputs, INTEGER_RULES)
        if self.precision not in PRECISIONS:
            raise unknown_choice("precision", self.precision, PRECISIONS)


@dataclass
class Term:
    counter: str  # which class of counted events (see OpCounts)
    count: float  # events per inference
    cost: str  # the profile entries that price one event
    unit_energy_J: float
    energy_J: float


@dataclass
class LayerEnergy:
    name: str
    op: str
    energy_J: float
    terms: list[Term] = field(default_factory=list)


@dataclass
class ChipCrossingEnergy:
    """The chip-to-chip line of a neuromorphic estimate: per inference, separate from ``energy_J``."""

    label: str
    chips: int
    messages: float  # per inference
    cost: str  # the profile entry, cited
    unit_energy_J: float | None  # None: the profile has no spike_chip_hop
    energy_J: float | None
    traffic_source: str


def chip_crossing_energy(traffic: ChipTraffic, profile: HwProfile) -> ChipCrossingEnergy:
    """Price ``traffic`` with the profile's ``spike_chip_hop`` (None where it has none)."""
    q = profile.get("energy", "spike_chip_hop")
    unit = None if q is None else q.si
    return ChipCrossingEnergy(  # a placement model's messages x a per-message cost: an estimate either way
        f"estimated (chip-to-chip spike messages of check-hw's placement on {traffic.chips} chips x "
        f"spike_chip_hop of {profile.name})",
        traffic.chips,
        traffic.messages_per_inference,
        profile.cite("energy", "spike_chip_hop"),
        unit,
        None if unit is None else unit * traffic.messages_per_inference,
        traffic.source,
    )


@dataclass
class EnergyEstimate:
    label: str  # "estimated (op counts x cost table cmos45nm)" / "measured (NVML)"
    kind: str  # "estimated" | "measured"
    method: str  # one of METHODS, or the measuring tool
    profile: str | None
    energy_J: float  # per inference
    layers: list[LayerEnergy] = field(default_factory=list)
    by_counter: dict[str, float] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rule: dict[str, Any] = field(default_factory=dict)
    chip_crossings: ChipCrossingEnergy | None = None  # a multi-chip placement's spikes between chips
    # static power x time, as Intel's benchmarks split a measurement (energy_J is then the dynamic part)
    static: StaticEnergy | None = None

    @property
    def total_J(self) -> float:
        """Dynamic (``energy_J``) plus static, where the static part is known; else ``energy_J``."""
        return self.energy_J + (self.static.energy_J if self.static is not None else 0.0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("chip_crossings", "static"):  # absent: the JSON of before
            if d[key] is None:
                del d[key]
        if self.static is not None:
            d["total_J"] = self.total_J
        return d


@dataclass(frozen=True)
class StaticEnergy:
    """Static power x the time an inference holds the chips: chips x power per chip x steps x time per step."""

    energy_J: float  # per inference
    power_W: float  # per chip
    chips: int
    steps: int  # time steps an inference occupies (samples stream one every ``steps``)
    step_s: float  # seconds per time step
    label: str  # where power and time come from (measured, or the profile's anchors)


def static_energy(
    profile: HwProfile, steps: int, chips: int = 1, step_s: float | None = None, step_source: str = ""
) -> StaticEnergy | None:
    """The static part of one inference on ``profile`` (None where it has no static power, or no time per step
    is measured and the profile has no ``timing.timestep``). ``step_s``: a measured time per step (else the
    profile's anchor, itself a measurement of another network)."""
    if not profile.has("power", "static") or steps < 1:
        return None
    if step_s is None:
        if not profile.has("timing", "timestep"):
            return None
        step_s, step_source = profile.si("timing", "timestep"), f"timing.timestep {profile.cite('timing', 'timestep')}"
    watts = profile.si("power", "static")
    label = (
        f"static power {profile.cite('power', 'static')} x {chips} chip{'s' if chips > 1 else ''} x {steps} steps x "
        f"{step_s * 1e6:.4g} us a step ({step_source})"
    )
    return StaticEnergy(watts * chips * steps * step_s, watts, chips, steps, step_s, label)


@dataclass
class EnergyReport:
    executor: str
    samples: int
    estimates: list[EnergyEstimate]
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "schema_version": self.schema_version,
            "executor": self.executor,
            "samples": self.samples,
            "per": "inference",
            "estimates": [e.to_dict() for e in self.estimates],
        }


# ---- counts ----------------------------------------------------------------------------------------


# The classes the synaptic counters (``Price(by_kind=True)``: ``BY_KIND``, what op_counts sorts) are sorted into by
# the layer's value kind; each counter priced by an entry of its own (``counters.PRICED``) is a class named after it.
BY_KIND = ("synops", "synops_valued", "macs")
KIND_CLASSES = ("first_layer_macs", "spike_acs", "integer_values", "integer_events", "other_macs")
ENTRIES = tuple((c.name, c.price.entry) for c in counters.PRICED if c.price.entry)  # (counter, profile entry)
CLASSES = KIND_CLASSES + tuple(name for name, _ in ENTRIES)


@dataclass
class OpCounts:
    """One layer's events per inference, sorted into the classes that are priced differently."""

    name: str
    op: str
    first_layer_macs: float = 0.0  # MACs on analog input (the encoding conv)
    spike_acs: float = 0.0  # accumulates driven by binary spikes (conv/dense synops, attention)
    integer_events: float = 0.0  # synapses driven by non-zero integer inputs
    integer_values: float = 0.0  # the same, weighted by the input value
    other_macs: float = 0.0  # attention rescale, dendritic dynamics, readout
    # the counters priced by a profile entry of their own (counters.PRICED: spikes, neuron and dendritic updates),
    # per inference; also read as ``c.spikes``
    counted: dict[str, float] = field(default_factory=dict)

    def __getattr__(self, name: str) -> float:
        counted = self.__dict__.get("counted")
        if counted is None or name not in counted:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        value: float = counted[name]
        return value


def _total(layer: dict[str, Any], key: str, where: str) -> float:
    values = layer.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) for v in values):
        raise ConfigError(f"{where}: field '{key}' must be a per-time-step list of numbers")
    return float(sum(values))


def op_counts(run_report: RunReport | dict[str, Any], rule: CountingRule = CountingRule()) -> list[OpCounts]:
    """Per-layer event classes per inference from a run report (schema spikeport.run v1)."""
    run_report = as_dict(run_report)
    if run_report.get("schema") != "spikeport.run":
        raise ConfigError(f"not a run report: field 'schema' is {run_report.get('schema')!r}, expected 'spikeport.run'")
    samples = run_report.get("samples")
    if not isinstance(samples, int) or samples <= 0:
        raise ConfigError(f"run report field 'samples': expected a positive integer, got {samples!r}")
    out = []
    for i, layer in enumerate(run_report.get("layers", [])):
        name = layer.get("name", f"layers[{i}]")
        where = f"run report layer '{name}'"
        # a row without an input kind (older or hand-made reports) is priced as reading nothing special
        kind_name = layer.get("input_kind")
        kind = NONE if kind_name is None else VALUE_KINDS.get(kind_name, f"{where}: field 'input_kind'")
        pricing = kind.pricing
        c = OpCounts(name, layer.get("op", "?"))
        macs = _total(layer, "macs", where)
        if pricing is Pricing.DENSE:  # the encoding layer on analog pixels
            steps = layer.get("macs", [])
            c.first_layer_macs = macs if rule.first_layer_per_timestep else float(steps[0] if steps else 0)
        else:
            c.other_macs = macs
        synops = _total(layer, "synops", where)
        if pricing is Pricing.MULTIPLY:  # signed multi-bit messages (sigma-delta): weight x payload per synapse
            c.other_macs += synops
        elif pricing is Pricing.VALUED:
            c.integer_events = synops
            # executors that cannot weight by value report only events: fall back to them (noted)
            c.integer_values = _total(layer, "synops_valued", where) if "synops_valued" in layer else synops
        else:
            c.spike_acs = synops
        for f in KIND_CLASSES:
            setattr(c, f, getattr(c, f) / samples)
        c.counted = {key: _total(layer, key, where) / samples for key, _ in ENTRIES}
        out.append(c)
    if not out:
        raise ConfigError("run report has no 'layers': nothing to price")
    return out


# ---- pricing ---------------------------------------------------------------------------------------


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


def estimate(
    run_report: RunReport | dict[str, Any],
    profile: HwProfile | str,
    method: str = "native",
    rule: CountingRule = CountingRule(),
    chip_traffic: ChipTraffic | None = None,
    chips: int | None = None,
) -> EnergyEstimate:
    """Energy per inference of one run report under one profile and method; with ``chip_traffic`` (a
    multi-chip placement, neuromorphic profiles) also the separate chip-to-chip line. On a neuromorphic profile
    with a static power, ``static`` adds static power x time (``chips``: check-hw's, else the traffic's, else 1;
    the time per step the run measured, else the profile's anchor), as Intel's benchmarks split a measurement."""
    if method not in METHODS:
        raise unknown_choice("energy method", method, METHODS)
    if isinstance(profile, str):
        profile = load_profile(profile)
    if profile.kind == "gpu":
        raise ProfileError(
            f"profile '{profile.name}' is a GPU: op-count pricing does not apply; use "
            "spikeport.baselines.gpu (measured with CUDA, or estimated from the GPU profile)"
        )
    counts = op_counts(run_report, rule)
    if method == "literature":
        return _literature(counts, profile, rule)
    if profile.kind == "neuromorphic":
        result = _neuromorphic(counts, profile, rule, method)
        chips = chips or (chip_traffic.chips if chip_traffic is not None else 1)
        result.static = _static_of(as_dict(run_report), profile, chips)
        if result.static is not None:
            result.left_out.remove(STATIC_LEFT_OUT)
        if chip_traffic is not None and chip_traffic.chips > 1:
            result.chip_crossings = chip_crossing_energy(chip_traffic, profile)
            if result.chip_crossings.energy_J is None:
                result.left_out.append(
                    f"{chip_traffic.messages_per_inference:.4g} chip-to-chip spike messages per inference: profile "
                    f"'{profile.name}' has no spike_chip_hop"
                )
        return result
    return _cmos(counts, profile, rule, method)


STATIC_LEFT_OUT = "static power x run time (the profile has no static power or time per step)"


def steps_per_sample(run_report: dict[str, Any]) -> int | None:
    """Time steps one inference holds the chip: a streamed run's reset interval (T rounded up to a power of 2:
    samples come one every R steps), else T."""
    lava = run_report.get("lava") or {}
    model = run_report.get("model") or {}
    steps = lava.get("reset_interval") or run_report.get("T") or model.get("T")
    return int(steps) if isinstance(steps, (int, float)) and steps >= 1 else None


def _static_of(run_report: dict[str, Any], profile: HwProfile, chips: int) -> StaticEnergy | None:
    steps = steps_per_sample(run_report)
    if steps is None:
        return None
    measured = run_report.get("energy_measured") or {}
    step_s = measured.get("time_per_step_s")
    if isinstance(step_s, (int, float)) and step_s > 0:
        return static_energy(profile, steps, chips, float(step_s), f"measured: {measured.get('label', 'the run')}")
    return static_energy(profile, steps, chips)


def _neuromorphic(counts: list[OpCounts], profile: HwProfile, rule: CountingRule, method: str) -> EnergyEstimate:
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


def _cmos(counts: list[OpCounts], profile: HwProfile, rule: CountingRule, method: str) -> EnergyEstimate:
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


def _literature(counts: list[OpCounts], profile: HwProfile, rule: CountingRule) -> EnergyEstimate:
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


# ---- the published arithmetic (their FLOPs: spikeport.counting.conv_macs) ----------------


def literature_energy(
    first_layer_flops: float,
    sops: float,
    e_mac_J: float = 4.6e-12,
    e_ac_J: float = 0.9e-12,
    T: int = 4,
    first_layer_per_timestep: bool = True,
) -> float:
    """E = E_MAC x FLOPs(first layer) [x T] + E_AC x SOPs, in joules, from published counts."""
    return e_mac_J * first_layer_flops * (T if first_layer_per_timestep else 1) + e_ac_J * sops


# ---- measured, and the whole report --------------------------------------------------------------


def measured_energy(run_report: RunReport | dict[str, Any]) -> EnergyEstimate | None:
    """The executor's own energy measurement, if the run report carries one.

    Expected field (written by executors that measure): ``"energy_measured": {"method": "Lava
    Loihi2HWProfiler" | "NVML", "total_J": ..., "dynamic_J": ..., "static_J": ..., "per_inference": true}``.
    """
    run_report = as_dict(run_report)
    m = run_report.get("energy_measured")
    if not m:
        return None
    total = m.get("total_J")
    if not isinstance(total, (int, float)):
        raise ConfigError("run report field 'energy_measured.total_J': expected a number of joules")
    samples = 1 if m.get("per_inference", True) else run_report.get("samples", 1)
    method = str(m.get("method", m.get("label", "unknown")))
    notes = [str(m["note"])] if m.get("note") else []
    own = str(m.get("label", ""))
    label = own if own.startswith("measured") else f"measured ({method})"
    step_s = m.get("time_per_step_s")
    if isinstance(step_s, (int, float)):
        where = ", ".join(f"{m[k]} {k}" for k in ("cores", "chips") if isinstance(m.get(k), int))
        notes.append(f"measured {step_s * 1e6:.4g} us a time step" + (f" on {where}" if where else ""))
    static_J, dynamic_J = m.get("static_J"), m.get("dynamic_J")
    if isinstance(static_J, (int, float)) and isinstance(dynamic_J, (int, float)):  # Intel's split
        steps = steps_per_sample(run_report) or 0
        static = StaticEnergy(
            float(static_J) / samples,
            float(m.get("static_power_W", 0.0)),
            int(m.get("chips", 1)),
            steps,
            float(step_s) if isinstance(step_s, (int, float)) else 0.0,
            label,
        )
        return EnergyEstimate(label, "measured", method, None, float(dynamic_J) / samples, notes=notes, static=static)
    return EnergyEstimate(label, "measured", method, None, float(total) / samples, notes=notes)


def energy_report(
    run_report: RunReport | dict[str, Any],
    profiles: Sequence[str | HwProfile] = ("loihi2", "cmos45nm"),
    methods: tuple[str, ...] | None = None,
    rule: CountingRule = CountingRule(),
    chip_traffic: ChipTraffic | None = None,
    chips: int | None = None,
) -> EnergyReport:
    """All estimates for the profiles given (native + memory, and literature for CMOS profiles), plus
    the measured figure when the run report has one; ``chip_traffic`` adds the chip-to-chip line to the
    neuromorphic ones."""
    run_report = as_dict(run_report)
    estimates = []
    m = measured_energy(run_report)
    if m is not None:
        estimates.append(m)
    for prof in profiles:
        prof = load_profile(prof) if isinstance(prof, str) else prof
        if prof.kind == "gpu":
            continue
        wanted = methods or (("native", "memory", "literature") if prof.kind == "cmos" else ("native",))
        for method in wanted:
            if method == "literature" and prof.kind != "cmos":
                continue
            estimates.append(estimate(run_report, prof, method, rule, chip_traffic, chips))
    return EnergyReport(str(run_report.get("executor", "?")), int(run_report.get("samples", 0)), estimates)
