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
and torch-free: it reads the ``RunReport`` of any executor as it is (a JSON object is read by the run report's
validator first). Here: the run report read into ``OpCounts``, the method
chosen, the static and chip-crossing lines; the records are in ``metrics/energy_records.py``, the pricing of each
method in ``metrics/cost_models.py``.

A network placed on several chips (``spikeport check-hw``) also sends spikes from chip to chip: given its
``ChipTraffic``, a neuromorphic estimate carries a separate, labelled ``chip_crossings`` line (messages x the
profile's ``spike_chip_hop``), not added to the op-count total.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spikeport.chip_traffic import ChipTraffic
from spikeport.errors import ConfigError, ProfileError, ReportError, unknown_choice
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.metrics.cost_models import STATIC_LEFT_OUT, cmos_estimate, literature_estimate, neuromorphic_estimate

# CountingRule and CLASSES stay importable from here: the energy API's (docs/energy.md) and report/'s
from spikeport.metrics.energy_records import (
    CLASSES as CLASSES,
    ENTRIES,
    KIND_CLASSES,
    ChipCrossingEnergy,
    CountingRule as CountingRule,
    EnergyEstimate,
    EnergyReport,
    OpCounts,
    StaticEnergy,
)
from spikeport.run_report import RunReport
from spikeport.value_kinds import VALUE_KINDS, Pricing

METHODS = ("native", "literature", "memory")


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


def _typed(run_report: RunReport | dict[str, Any]) -> RunReport:
    """The run report as its record: a JSON object (the API's edge) read by the run report's one validator, its
    refusal a ConfigError as before; a record is taken as it is (whoever made it has validated it). A row of the
    object that left ``synops_valued`` out keeps it out (reading fills the optional counters with zeros): its integer
    inputs are priced by their events, as before."""
    if isinstance(run_report, RunReport):
        return run_report
    try:
        run = RunReport.from_dict(run_report)
    except ReportError as err:
        raise ConfigError(str(err)) from None
    for row, layer in zip(run.layers, run_report["layers"], strict=True):
        if "synops_valued" not in layer:
            row.counts.pop("synops_valued", None)
    return run


def op_counts(run_report: RunReport | dict[str, Any], rule: CountingRule = CountingRule()) -> list[OpCounts]:
    """Per-layer event classes per inference from a run report (schema spikeport.run v1; a JSON object is validated
    first, a ``RunReport`` read as it is)."""
    run = _typed(run_report)
    samples = run.samples
    out = []
    for layer in run.layers:
        counts = layer.counts
        kind = VALUE_KINDS.get(layer.input_kind, f"run report layer '{layer.name}': field 'input_kind'")
        pricing = kind.pricing
        c = OpCounts(layer.name, layer.op)
        macs = float(sum(counts.get("macs") or ()))
        if pricing is Pricing.DENSE:  # the encoding layer on analog pixels
            steps = counts.get("macs") or [0]
            c.first_layer_macs = macs if rule.first_layer_per_timestep else float(steps[0])
        else:
            c.other_macs = macs
        synops = float(sum(counts.get("synops") or ()))
        if pricing is Pricing.MULTIPLY:  # signed multi-bit messages (sigma-delta): weight x payload per synapse
            c.other_macs += synops
        elif pricing is Pricing.VALUED:
            c.integer_events = synops
            # executors that cannot weight by value report only events: fall back to them (noted)
            valued = counts.get("synops_valued")
            c.integer_values = synops if valued is None else float(sum(valued))
        else:
            c.spike_acs = synops
        for f in KIND_CLASSES:
            setattr(c, f, getattr(c, f) / samples)
        c.counted = {key: float(sum(counts.get(key) or ())) / samples for key, _ in ENTRIES}
        out.append(c)
    if not out:
        raise ConfigError("run report has no 'layers': nothing to price")
    return out


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
    profile = _priced(profile)
    run = _typed(run_report)
    return _estimate(run, op_counts(run, rule), profile, method, rule, chip_traffic, chips)


def _priced(profile: HwProfile | str) -> HwProfile:
    """A profile op counts can be priced with (loaded where named): not a GPU."""
    if isinstance(profile, str):
        profile = load_profile(profile)
    if profile.kind == "gpu":
        raise ProfileError(
            f"profile '{profile.name}' is a GPU: op-count pricing does not apply; use "
            "spikeport.baselines.gpu (measured with CUDA, or estimated from the GPU profile)"
        )
    return profile


def _estimate(
    run: RunReport,
    counts: list[OpCounts],
    profile: HwProfile,
    method: str,
    rule: CountingRule,
    chip_traffic: ChipTraffic | None,
    chips: int | None,
) -> EnergyEstimate:
    """``estimate`` of the run's ``counts`` (``op_counts``, made once for every estimate of a report)."""
    if method == "literature":
        return literature_estimate(counts, profile, rule)
    if profile.kind == "neuromorphic":
        result = neuromorphic_estimate(counts, profile, rule, method)
        chips = chips or (chip_traffic.chips if chip_traffic is not None else 1)
        result.static = _static_of(run, profile, chips)
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
    return cmos_estimate(counts, profile, rule, method)


def steps_per_sample(run_report: RunReport | dict[str, Any]) -> int | None:
    """Time steps one inference holds the chip: a streamed run's reset interval (T rounded up to a power of 2:
    samples come one every R steps), else T (the model config's where the run has none)."""
    if isinstance(run_report, RunReport):
        interval = run_report.lava.reset_interval if run_report.lava is not None else None
        steps: Any = interval or run_report.T or (run_report.model or {}).get("T")
    else:
        lava = run_report.get("lava") or {}
        model = run_report.get("model") or {}
        steps = lava.get("reset_interval") or run_report.get("T") or model.get("T")
    return int(steps) if isinstance(steps, (int, float)) and steps >= 1 else None


def _static_of(run: RunReport, profile: HwProfile, chips: int) -> StaticEnergy | None:
    steps = steps_per_sample(run)
    if steps is None:
        return None
    measured = run.energy_measured or {}
    step_s = measured.get("time_per_step_s")
    if isinstance(step_s, (int, float)) and step_s > 0:
        return static_energy(profile, steps, chips, float(step_s), f"measured: {measured.get('label', 'the run')}")
    return static_energy(profile, steps, chips)


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
    run = _typed(run_report)
    m = run.energy_measured
    if not m:
        return None
    total = m.get("total_J")
    if not isinstance(total, (int, float)):
        raise ConfigError("run report field 'energy_measured.total_J': expected a number of joules")
    samples = 1 if m.get("per_inference", True) else run.samples
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
        steps = steps_per_sample(run) or 0
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
    run = _typed(run_report)
    estimates = []
    m = measured_energy(run)
    if m is not None:
        estimates.append(m)
    counts: list[OpCounts] | None = None  # made once, priced by every profile and method
    for prof in profiles:
        prof = load_profile(prof) if isinstance(prof, str) else prof
        if prof.kind == "gpu":
            continue
        wanted = methods or (("native", "memory", "literature") if prof.kind == "cmos" else ("native",))
        for method in wanted:
            if method == "literature" and prof.kind != "cmos":
                continue
            if method not in METHODS:
                raise unknown_choice("energy method", method, METHODS)
            counts = op_counts(run, rule) if counts is None else counts
            estimates.append(_estimate(run, counts, prof, method, rule, chip_traffic, chips))
    return EnergyReport(run.executor, run.samples, estimates)
