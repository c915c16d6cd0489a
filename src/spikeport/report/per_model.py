"""The report per model, like for like: the runs of one artifact merged, energy per inference under one accounting,
the GPU as one figure per mode, and the ratios of the headline (docs/reports.md, "The first screen").

* **One model per artifact**: runs with the same root digest (else the same variant and model config) are one
  model. Its counts are those of its run over the most samples among the reference and the runs bit-exact with it
  (the reference preferred): bit-exact executors count the same events, so the one over more samples is the better
  average. The other runs give the bit-exact verdict and its sample count. Two runs of a model over different
  samples average different inputs, so their per-run figures differ; the model's note says so with both.
* **One accounting**: the chip profile (the first neuromorphic one; else the first priced) has static power x time
  in its estimates (``metrics.energy``: ``static``), and a GPU's board energy holds its idle power: static power is
  included on both sides. Where the chip's estimate has no static part, it is on neither side: the GPU's energy less
  idle power. The headline says which, and where the chip profile's per-op energies come from (their sources, or the
  profile's ``calibration`` section when ``spikeport calibrate`` fitted it).
* **The GPU as one figure** per mode: measured where a bench file (or CUDA here) gave it, else the first GPU
  profile's estimate by the utilisation power model (``baselines.gpu``: idle power for the whole call, dynamic power
  while its kernels run at the roofline rate); its bounds (idle power x time .. TDP x time) are a caveat. The headline
  compares in throughput mode, the mode a GPU serves a job in (DESIGN.md section 6: batch 1 alone flatters the chip),
  and flags a model that barely fires (``BARELY_FIRES``) beside its ratio.
"""

from __future__ import annotations

import json
from collections import Counter as Tally
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from spikeport.hw_profiles import HwProfile
from spikeport.report.format import Ratio, fmt_ratio, fmt_si, plural
from spikeport.report.inputs import MODES, Baseline, RunInput
from spikeport.report.model import (
    BARELY_FIRES,
    Accounting,
    EnergyRatio,
    Exactness,
    ModelEnergy,
    ModelGpu,
    ModelSummary,
    RunSummary,
)


def chip_profile(priced: list[HwProfile]) -> HwProfile | None:
    """The profile the headline prices models with: the first neuromorphic one, else the first priced."""
    return next((p for p in priced if p.kind == "neuromorphic"), priced[0] if priced else None)


def per_op_energies(profile: HwProfile) -> str:
    """Where a profile's per-op energies come from, in one sentence: its calibration (``spikeport calibrate``), or
    the source most of its energy entries cite, with their confidence."""
    cal = profile.calibration
    if cal:
        runs = [str(r.get("source", "?")) for r in cal.get("runs", []) if isinstance(r, dict)]
        scale = cal.get("scale")
        return (
            f"{profile.name}'s per-op energies are {cal.get('base', 'its base profile')}'s"
            + (f" x {scale:.4g}" if isinstance(scale, (int, float)) else "")
            + f", calibrated on {plural(len(runs), 'measured run')} ({', '.join(runs) or '?'}) on "
            f"{cal.get('fitted', '?')} by spikeport calibrate"
        )
    energy = profile.sections.get("energy", {})
    if not energy:
        return f"{profile.name} has no per-op energies"
    source, n = Tally(q.source for q in energy.values()).most_common(1)[0]
    confidence = " / ".join(sorted({q.confidence for q in energy.values()}))
    return f"{profile.name}'s per-op energies ({n} of {len(energy)} entries) cite: {source} (confidence {confidence})"


def gpu_mode_label(b: Baseline) -> str:
    """'h100 latency mode, batch 1 (estimated)': the device, the mode and its batch, the kind."""
    return f"{b.device_name} {b.mode} mode, batch {b.batch} ({b.kind})"


def gpu_assumption(b: Baseline) -> str:
    """What an estimated GPU figure assumes, in one line, from the estimate's own details."""
    d = b.details
    if b.kind != "estimated" or not d:
        return f"{gpu_mode_label(b)}: {b.label}"
    bounds = {"launch": d.get("launch_bound_s"), "compute": d.get("compute_bound_s"), "memory": d.get("memory_bound_s")}
    bound = max(bounds, key=lambda k: bounds[k] or 0)
    kernels = d.get("kernels")
    launch = (d.get("launch_bound_s") or 0) / kernels if kernels else None
    idle, tdp = d.get("idle_W", 0), d.get("tdp_W", 0)
    if d.get("busy_s") is not None:
        power = (
            f"energy = idle {idle:g} W x that time + {tdp - idle:g} W (TDP - idle) x the "
            f"{fmt_si(d['busy_s'], 's')} its kernels run at the roofline rate ({d.get('busy_share', 0):.0%} of the "
            "call), per inference"
        )
    else:  # an estimate made before the power model: TDP x time
        power = f"energy = TDP {tdp:g} W x that time (idle {idle:g} W x that time its floor), per inference"
    return (
        f"{gpu_mode_label(b)}: {fmt_si(b.latency_s, 's')} a call, {bound}-bound ({kernels} kernels"
        + (f" x {fmt_si(launch, 's')} launch" if launch else "")
        + f"; compute {fmt_si(d.get('compute_bound_s'), 's')} at {d.get('u_compute', 0):.0%} of peak, memory "
        f"{fmt_si(d.get('memory_bound_s'), 's')} at {d.get('u_memory', 0):.0%} of bandwidth); {power}"
    )


# ---- merging runs into models -----------------------------------------------------------------------------


def groups(runs: list[RunSummary]) -> list[list[int]]:
    """The runs of each model, in the order models first appear: one group per artifact root digest; a run without
    a digest joins the one group of its variant, else a group of its variant and model config."""
    keyed: dict[tuple[str, ...], list[int]] = {}
    for i, r in enumerate(runs):
        if r.artifact_digest:
            keyed.setdefault(("digest", r.artifact_digest), []).append(i)
    for i, r in enumerate(runs):
        if r.artifact_digest:
            continue
        same = [k for k, members in keyed.items() if k[0] == "digest" and runs[members[0]].variant == r.variant]
        key = same[0] if len(same) == 1 else ("variant", r.variant, json.dumps(r.model, sort_keys=True))
        keyed.setdefault(key, []).append(i)
    return sorted(keyed.values(), key=min)


def exactness(run: RunSummary, inp: RunInput) -> Exactness | None:
    """The run's check against the reference: its comparison, or a hardware plan's outputs against the reference's
    expected ones; None where it was not compared (the reference itself, or no comparison asked for)."""
    if run.compare is not None and run.compare.get("identical") is not None:
        c = run.compare
        against, identical = str(c["against"]), bool(c["identical"])
        return Exactness(run.source, run.executor, against, identical, run.samples, c.get("first_divergence"))
    hw = inp.report.hardware
    if hw is not None and hw.outputs_identical is not None:
        identical = hw.outputs_identical and hw.states_identical is not False
        return Exactness(
            run.source,
            run.executor,
            "the reference's expected outputs",
            identical,
            hw.samples or run.samples,
            hw.first_mismatch,
        )
    return None


def _counts_run(members: list[int], runs: list[RunSummary], checks: list[Exactness | None]) -> int:
    """The member whose counts price the model: the most samples among the reference and the runs bit-exact with
    it (all members where none is), the reference first on a tie."""
    exact = [i for i in members if runs[i].executor == "reference" or _identical(checks[i])]
    pool = exact or members
    return max(pool, key=lambda i: (runs[i].samples, runs[i].executor == "reference", -i))


def _identical(check: Exactness | None) -> bool:
    return check is not None and check.identical


def _names(runs: list[RunSummary], grouped: list[list[int]]) -> list[str]:
    """Each model's name: its variant, with its artifact's folder where two models share a variant."""
    variants = [runs[g[0]].variant for g in grouped]
    out = []
    for g, variant in zip(grouped, variants, strict=True):
        artifact = runs[g[0]].artifact
        folder = PurePath(artifact).parent.name if artifact else ""
        out.append(f"{variant} ({folder or runs[g[0]].source})" if variants.count(variant) > 1 else variant)
    return out


# ---- energy in one accounting -----------------------------------------------------------------------------


def static_included(runs: list[RunSummary], chip: str | None) -> bool:
    """Whether the chip's estimate of every run has a static part: then static power is on both sides."""
    ests = [e for r in runs for e in r.energy if e["profile"] == chip and e["method"] == "native"]
    return bool(ests) and all(e.get("static") for e in ests)


def model_energy(e: dict[str, Any], included: bool, where: str = "") -> ModelEnergy:
    """One energy entry of a run (``metrics.energy``'s JSON) in the report's accounting."""
    static = e.get("static")
    static_J = float(static["energy_J"]) if static else None
    dynamic = float(e["energy_J"])
    if e["kind"] == "measured" and static_J is None:  # a measured total without Intel's split holds static power
        return ModelEnergy(e["method"], "measured", e["label"] + where, dynamic, dynamic, None, True, "")
    total = dynamic + static_J if included and static_J is not None else dynamic
    return ModelEnergy(
        e["profile"] or e["method"],
        e["kind"],
        e["label"] + where,
        total,
        dynamic,
        static_J,
        included and static_J is not None,
        static["label"] if static else "",
    )


def run_energy(run: RunSummary, profile: str | None, included: bool) -> float | None:
    """A run's own figure on ``profile`` (native method) in the accounting: its samples' average."""
    e = next((e for e in run.energy if e["profile"] == profile and e["method"] == "native" and e["energy_J"]), None)
    return None if e is None else model_energy(e, included).energy_J


def gpu_figure(candidates: Sequence[Baseline], mode: str, included: bool) -> ModelGpu | None:
    """The GPU in ``mode`` as one figure: a measurement where there is one, else the first estimate."""
    snn = [b for b in candidates if b.network == "snn" and b.mode == mode]
    b = next((b for b in snn if b.kind == "measured"), snn[0] if snn else None)
    if b is None:
        return None
    energy = b.energy_J if included else b.energy_dynamic_J
    estimated = b.kind == "estimated"
    return ModelGpu(
        mode=mode,
        batch=b.batch,
        device=b.device_name,
        kind=b.kind,
        label=b.label,
        energy_J=energy,
        static_included=included,
        low_J=b.idle_floor_J if estimated else None,
        high_J=(b.tdp_bound_J or b.energy_J) if estimated else None,
        latency_s=b.latency_s,
        assumption=gpu_assumption(b),
    )


# ---- the models, the accounting, the ratios -----------------------------------------------------------------


def build_models(
    runs: list[RunSummary], inputs: list[RunInput], priced: list[HwProfile], cores: dict[str, str]
) -> tuple[list[ModelSummary], Accounting | None, list[EnergyRatio]]:
    """The runs merged per model, the accounting their energies are compared in, and the headline's ratios (each
    model against the base model, the first with the SSA core; the GPU against the chip in each mode)."""
    chip = chip_profile(priced)
    chip_name = chip.name if chip is not None else None
    included = static_included(runs, chip_name)
    checks = [exactness(r, inp) for r, inp in zip(runs, inputs, strict=True)]
    grouped = groups(runs)
    models = []
    for name, members in zip(_names(runs, grouped), grouped, strict=True):
        c = _counts_run(members, runs, checks)
        r = runs[c]
        energy = [model_energy(e, included) for e in r.energy if e["energy_J"] and e["method"] == "native"]
        for i in members:  # a measured figure of any run of the model (Loihi 2 hardware), with the run named
            measured = [e for e in runs[i].energy if e["kind"] == "measured" and e["energy_J"]] if i != c else []
            energy += [model_energy(e, included, f" ({runs[i].source})") for e in measured]
        members = [c, *[i for i in members if i != c]]  # the run that prices the model first
        model = ModelSummary(
            name=name,
            attention=r.attention,
            artifact=r.artifact,
            artifact_digest=r.artifact_digest,
            runs=[runs[i].source for i in members],
            executors=[runs[i].executor for i in members],
            samples=[runs[i].samples for i in members],
            counts_from=r.source,
            counts_by=r.executor,
            counted_samples=r.samples,
            accuracy=r.accuracy,
            float_accuracy=next((runs[i].float_accuracy for i in members if runs[i].float_accuracy), None),
            exactness=[x for x in (checks[i] for i in members) if x is not None],
            chip=next((runs[i].chip for i in members if runs[i].chip is not None), None),
            chip_note=r.chip_note,
            energy=energy,
            gpu=[g for g in (gpu_figure(r.gpu, mode, included) for mode in MODES) if g is not None],
            cpu=list(r.cpu),
            notes=_sample_notes(name, [runs[i] for i in members], r, chip_name, included),
            firing_rate=r.totals.get("firing_rate"),
        )
        model.barely_fires = model.firing_rate is not None and model.firing_rate < BARELY_FIRES
        if model.barely_fires:
            model.notes.append(f"{name}: {barely(model)}")
        models.append(model)
    if models:  # the base model first: the others are compared with it
        base = base_model(models, cores)
        models = [base, *[m for m in models if m is not base]]
    if chip is None or not any(_chip_J(m, chip_name) for m in models):
        return models, None, []
    accounting = Accounting(
        chip=chip_name,
        static_included=included,
        statement=_statement(chip, included),
        per_op_energies=per_op_energies(chip),
        calibrated=bool(chip.calibration),
    )
    return models, accounting, _ratios(models, chip_name, cores)


def _chip_J(model: ModelSummary, chip: str | None) -> float | None:
    """The model's estimate on the chip profile, in the accounting."""
    e = next((e for e in model.energy if e.profile == chip and e.kind == "estimated"), None)
    return None if e is None else e.energy_J


def base_model(models: list[ModelSummary], cores: dict[str, str]) -> ModelSummary:
    """The model the others are compared with: the first with the SSA core, else the first."""
    return next((m for m in models if m.attention and cores.get(m.attention) == "ssa"), models[0])


def _ratios(models: list[ModelSummary], chip: str | None, cores: dict[str, str]) -> list[EnergyRatio]:
    out = []
    base = base_model(models, cores)
    bottom = _chip_J(base, chip)
    for m in models:
        if m is not base and len(models) > 1:
            top = _chip_J(m, chip)
            ratio = Ratio.of(top, bottom, f"{base.name}'s energy")
            out.append(EnergyRatio(f"{m.name} / {base.name} on {chip}", m.name, top, bottom, ratio))
    for m in models:
        own = _chip_J(m, chip)
        for g in m.gpu:
            ratio = Ratio.of(g.energy_J, own, f"{m.name}'s {chip} energy")
            g.over_chip = ratio.value
            out.append(EnergyRatio(f"{g.device} {g.mode} mode / {chip}", m.name, g.energy_J, own, ratio, g.mode))
    return out


def _statement(chip: HwProfile, included: bool) -> str:
    if included:
        return (
            f"static power on both sides ({chip.name}: op counts x per-op energies + static power x time; GPU: the "
            "board's energy, idle power in it)"
        )
    return (
        f"static power on neither side ({chip.name}: op counts x per-op energies, the profile has no static power or "
        "time step; GPU: its energy less idle power)"
    )


def _sample_notes(
    name: str, members: list[RunSummary], counted: RunSummary, chip: str | None, included: bool
) -> list[str]:
    """Why the runs of one model give different per-run figures: each averages its own samples."""
    if len(members) < 2:
        return []
    parts = []
    for r in members:
        own = run_energy(r, chip, included)
        figure = f"{fmt_si(own, 'J')} on {chip} over " if own is not None else ""
        parts.append(f"{PurePath(r.source).name} ({r.executor}) {figure}{plural(r.samples, 'sample')}")
    return [
        f"{name}: each run averages its own samples ({'; '.join(parts)}); the column takes the counts of "
        f"{PurePath(counted.source).name} ({counted.executor}, {plural(counted.samples, 'sample')}), the others give "
        "the bit-exact check"
    ]


# ---- the headline ------------------------------------------------------------------------------------------


def barely(m: ModelSummary) -> str:
    """Why a model's ratios need its accuracy beside them: it barely fires."""
    return (
        f"fires on {m.firing_rate:.2%} of its LIF neuron-steps (under {BARELY_FIRES:.0%}): a model that barely fires "
        "costs an event-driven chip almost nothing, so its GPU / chip ratio grows as the model gets worse; read it "
        "with the model's accuracy"
    )


def headline_mode(models: list[ModelSummary]) -> str | None:
    """The GPU mode the headline compares in: throughput where the models have it (the mode a GPU serves a job in),
    else the one they have."""
    modes = [g.mode for m in models for g in m.gpu if g.energy_J is not None]
    return "throughput" if "throughput" in modes else (modes[0] if modes else None)


def headline(models: list[ModelSummary], accounting: Accounting | None, ratios: list[EnergyRatio]) -> list[str]:
    """The energy sentences of the first screen: energy per inference per model on the chip with the models' ratio,
    the GPU in throughput mode against the chip (a model that barely fires flagged beside its ratio; latency mode is in
    the table), and where the per-op energies come from. The GPU estimate's bounds are caveats (``summary.caveats``)."""
    if accounting is None:
        return []
    chip = accounting.chip
    kinds = {e.kind for m in models for e in m.energy if e.profile == chip}
    among = [r for r in ratios if r.mode is None]
    static = "static power included" if accounting.static_included else "static power left out"
    out = [
        f"Energy per inference on {chip}, {' / '.join(sorted(kinds))}, {static}: "
        + ", ".join(f"{m.name} {fmt_si(j, 'J')}" for m in models if (j := _chip_J(m, chip)) is not None)
        + (" (" + ", ".join(f"{r.name.split(' on ')[0]} = {r.ratio}" for r in among) + ")" if among else "")
        + "".join(
            f"; {m.name} measured: {fmt_si(e.energy_J, 'J')} ({e.label})"
            for m in models
            for e in m.energy
            if e.kind == "measured"
        )
        + "."
    ]
    mode = headline_mode(models)
    shown = [(m, g) for m in models for g in m.gpu if g.mode == mode and g.energy_J is not None]
    if shown:
        devices = sorted(
            {f"{g.device}, {g.kind}{': utilisation power model' if g.kind == 'estimated' else ''}" for _, g in shown}
        )
        figures = [
            f"{m.name} {fmt_si(g.energy_J, 'J')} = {fmt_ratio(g.over_chip)}"
            + (
                f" (BARELY FIRES: {m.firing_rate:.2%} of its neuron-steps; read with its accuracy)"
                if m.barely_fires
                else ""
            )
            for m, g in shown
        ]
        others = sorted({f"{g.mode} mode (batch {g.batch})" for m in models for g in m.gpu if g.mode != mode})
        out.append(
            f"The GPU in {mode} mode (batch {shown[0][1].batch}; {'; '.join(devices)}), in the same accounting, "
            f"against {chip}: "
            + "; ".join(figures)
            + "."
            + (
                f" {', '.join(others).capitalize()} is in the table below: a GPU at batch 1 waits on kernel launches, "
                "which flatters the chip."
                if others
                else ""
            )
        )
    out.append(f"Accounting: {accounting.statement}. {accounting.per_op_energies}.")
    return out
