"""`spikeport report`: one summary of one or more run reports (records in ``report.model``, schema
``spikeport.report`` v1), made from the report's inputs (``report.inputs.ReportInputs``).

For every run report (any executor: reference, lava-fixed_pt, loihi2, ...) the summary holds, per
inference: accuracy, per-layer spikes / firing rates / synops / MACs / dendritic updates / state bytes,
the energy estimates of every profile (metrics/energy.py: native, and for CMOS profiles the literature
convention and the memory-inclusive variant; a measured figure when the run report carries one), the
state memory the executor counted, the chip footprint check-hw counted for the artifact, and the GPU
baseline of the same network (measured on CUDA, otherwise estimated from GPU profiles, with ONNX Runtime
measured on this CPU beside it) with the GPU / neuromorphic energy ratio. Across runs: the memory of SSA vs
LRF-Dyn on the chip and on the GPU, counted and analytic, and the paper's attention-state claim priced
(``report.summary_memory``).

Nothing here reads a file, runs a tool or times a network: the gathering stage (``spikeport.gather``) did, and
passes what it found as records. What is computed here is arithmetic on them: per-inference figures, the
energy of the op counts priced with the profiles, ratios. Every figure keeps the label of how it was obtained
("estimated (...)" / "measured (...)") and which executor produced the counts. The views are
``report.terminal`` and ``report.html``; the numbers are formatted by ``report.format``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import PurePath
from typing import Any

from spikeport import counters
from spikeport._version import __version__
from spikeport.hw_profiles import HwProfile
from spikeport.ir import kernels
from spikeport.ir.kernels.base import KernelRole
from spikeport.metrics import energy as E
from spikeport.report import per_model, summary_memory
from spikeport.report.format import fmt_si
from spikeport.report.inputs import ReportInputs, ReportOptions, RunInput
from spikeport.report.model import (
    ROW_COUNTERS,
    SCHEMA,
    SCHEMA_VERSION,
    LayerRow,
    ReportSummary,
    RunSummary,
    StateMemory,
)
from spikeport.run_report import RunReport

__all__ = ["SCHEMA", "SCHEMA_VERSION", "build_summary"]


def layer_rows(run: RunReport) -> list[LayerRow]:
    """Per-layer counts per inference (the run report's sums over samples divided by ``samples``)."""
    s = run.samples
    rows = []
    for layer in run.layers:
        T = max(len(layer.spikes), 1)
        spikes = layer.total("spikes") / s
        rows.append(
            LayerRow(
                name=layer.name,
                op=layer.op,
                input_kind=layer.input_kind,
                neurons=int(layer.neurons),
                fan_out=layer.fan_out,
                counts={c.name: layer.total(c.name) / s for c in ROW_COUNTERS},
                spikes_per_step=[v / s for v in layer.spikes],
                firing_rate=spikes / (layer.neurons * T) if layer.neurons else None,
                state_bytes=int(layer.state_bytes),
                weight_bytes=int(layer.weight_bytes),
            )
        )
    return rows


# what each token mixing keeps (the ops whose record's role is ATTENTION), as the state table names it
ATTENTION_STATE = {
    "attention": "K^T V (16-bit entries, H x d_h x d_h per block, in the host core where asked for)",
    "dendritic": "dendritic token kernel (chip-native: weights, no state between steps)",
}
CHIP_ATTENTION = "coincidence pairs (chip-native: recounted every step, no state between steps)"


def state_memory(run: RunReport) -> StateMemory:
    """The state the executor counted (run report ``state_bytes``, Loihi precision, one sample): the neuron rows and
    the attention rows are the ops whose kernel record declares that role (``ir.kernels.role``)."""

    def kind(op: str, held: int) -> str:
        named = ATTENTION_STATE.get(op, f"{op} (its state)")
        return named if op != "attention" or held else CHIP_ATTENTION

    mixing = [x for x in run.layers if kernels.role(x.op) is KernelRole.ATTENTION]
    attention = sum(int(x.state_bytes) for x in mixing)
    neurons = sum(int(x.state_bytes) for x in run.layers if kernels.role(x.op) is KernelRole.NEURON)
    total = sum(int(x.state_bytes) for x in run.layers)
    return StateMemory(
        label=f"counted by executor '{run.executor}' (run report state_bytes: Loihi precision, LIF u and v at 24 "
        "bits, docs/counting.md)",
        attention_state_bytes=attention,
        attention_state_kind=sorted({kind(x.op, int(x.state_bytes)) for x in mixing}),
        neuron_state_bytes=neurons,
        other_state_bytes=total - attention - neurons,
        state_bytes=total,
        weight_bytes=sum(int(x.weight_bytes) for x in run.layers),
        per_layer=[
            {"name": x.name, "op": x.op, "state_bytes": int(x.state_bytes)} for x in run.layers if x.state_bytes
        ],
    )


def energy_section(
    run: RunReport, profiles: list[HwProfile], rule: E.CountingRule, chips: int | None = None
) -> list[dict[str, Any]]:
    """Every estimate (and the measured figure, if any) per inference, with per-layer energies; a neuromorphic
    estimate with its static part (static power x time on ``chips`` chips) beside the dynamic op-count energy."""
    out, kinds = [], {p.name: p.kind for p in profiles}
    for est in E.energy_report(run, list[str | HwProfile](profiles), rule=rule, chips=chips).estimates:
        d = est.to_dict()
        d["profile_kind"] = kinds.get(est.profile or "")
        d["per_layer_J"] = {layer["name"]: layer["energy_J"] for layer in d["layers"] if layer["energy_J"]}
        out.append(d)
    return out


def static_energy(energy: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """Per neuromorphic profile, the static part of its estimate (static power x time), and what the estimate
    against a measurement of the same run says: total and dynamic, estimated / measured (Intel's benchmarks report
    both parts)."""
    out, notes = {}, []
    measured = next((e for e in energy if e["kind"] == "measured"), None)
    for e in energy:
        if e["kind"] != "estimated" or not e.get("static"):
            continue
        out[e["profile"]] = e["static"]["energy_J"]
        static_J = e["static"]["energy_J"]
        notes.append(
            f"{e['profile']}: static part {fmt_si(static_J, 'J')} per inference ({e['static']['label']}), "
            f"dynamic {fmt_si(e['energy_J'], 'J')} from the op counts; total {fmt_si(e['total_J'], 'J')}"
        )
        if measured is not None and measured.get("static"):
            ratio_total = e["total_J"] / measured["total_J"] if measured["total_J"] else float("nan")
            ratio_dyn = e["energy_J"] / measured["energy_J"] if measured["energy_J"] else float("nan")
            notes.append(
                f"{e['profile']} estimate vs {measured['label']}: total {fmt_si(e['total_J'], 'J')} vs "
                f"{fmt_si(measured['total_J'], 'J')} ({ratio_total:.2f}x), dynamic {fmt_si(e['energy_J'], 'J')} vs "
                f"{fmt_si(measured['energy_J'], 'J')} ({ratio_dyn:.2f}x), static "
                f"{fmt_si(e['static']['energy_J'], 'J')} vs {fmt_si(measured['static']['energy_J'], 'J')}"
            )
    return out, notes


def host_io(run: RunReport, profiles: list[HwProfile]) -> tuple[dict[str, Any], list[str]]:
    """Time and energy of the host <-> chip crossings a Lava mapping with host-side computing processes
    makes: every time step of every sample waits for the host round trip, priced at the profile's
    ``timing.host_io_step`` (an IO-bound measurement of another network) with its static power. Labelled
    estimates; the op-count estimate prices those processes' ops as if they ran on the chip."""
    hosted = [name for name in (run.lava.host_only if run.lava else []) if name != "input"]
    steps = (run.lava.reset_interval if run.lava else None) or run.T
    out: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    if not hosted or not steps:
        return out, notes
    for p in profiles:
        if p.kind != "neuromorphic" or not (p.has("timing", "host_io_step") and p.has("power", "static")):
            continue
        seconds = steps * p.si("timing", "host_io_step")
        out[p.name] = {"seconds": seconds, "joules": seconds * p.si("power", "static"), "crossing_steps": steps}
        notes.append(
            f"host crossings on {p.name} (estimated, not in the op-count estimate): {', '.join(hosted)} run on "
            f"the host, so each of the {steps} time steps per inference waits for a host round trip: "
            f"{steps} x {p.cite('timing', 'host_io_step')} = {fmt_si(seconds, 's')} and, at static power "
            f"{p.cite('power', 'static')}, {fmt_si(out[p.name]['joules'], 'J')} per inference"
        )
    return out, notes


def _variant(run: RunReport, source: str) -> str:
    attention = (run.model or {}).get("attention")
    if attention:
        return str(attention)

    return PurePath(run.artifact).name if run.artifact else source


def run_section(inp: RunInput, rule: E.CountingRule, profiles: list[HwProfile]) -> RunSummary:
    run = inp.report
    layers = layer_rows(run)
    model = run.model or {}
    totals: dict[str, float | None] = {k.name: sum(r.counts[k.name] for r in layers) for k in ROW_COUNTERS}
    for k in counters.COUNTERS:  # the counters of the whole run: in its totals alone
        if k.scope is counters.Scope.RUN and run.totals and k.name in run.totals:
            totals[k.name] = run.totals[k.name] / run.samples
    lif = [r for r in layers if kernels.role(r.op) is KernelRole.NEURON and kernels.fires(r.op)]
    neuron_steps = sum(r.neurons * len(r.spikes_per_step) for r in lif)
    totals["firing_rate"] = sum(r.spikes for r in lif) / neuron_steps if neuron_steps else None
    energy = energy_section(run, profiles, rule, inp.chip.chips if inp.chip is not None else None)
    static, notes = static_energy(energy)
    host = [n for n in (run.lava.host_only if run.lava else []) if n != "input"]
    if host:
        notes.append(
            f"in this Lava mapping {', '.join(host)} run on the host, not on neuromorphic cores; the op-count "
            "estimates price their ops as if they ran on chip, and the crossings are priced apart below"
        )
    crossings, crossing_notes = host_io(run, profiles)
    notes += crossing_notes
    if inp.artifact_path is not None and inp.artifact_note:  # found elsewhere than the run report says: where
        notes.append(inp.artifact_note)
    compare = None
    if run.compare is not None:
        c = run.compare.to_dict()
        compare = {k: c.get(k) for k in ("against", "identical", "first_divergence", "prediction_agreement")}
    return RunSummary(
        source=inp.source,
        variant=_variant(run, inp.source),
        executor=run.executor,
        counts_by=f"{run.executor}: {inp.executor or 'executor named in the run report'}",
        artifact=run.artifact,
        attention=model.get("attention"),
        model=model,
        T=run.T if run.T is not None else model.get("T"),
        samples=run.samples,
        accuracy=run.accuracy,
        wall_time_s=run.wall_time_s,
        latency_timesteps=run.latency_timesteps,
        compare=compare,
        totals=totals,
        layers=layers,
        energy=energy,
        state_memory=state_memory(run),
        static_energy_J=static,
        host_io=crossings,
        host_computing=host,
        float_accuracy=inp.float_accuracy,
        chip=inp.chip,
        chip_note=inp.chip_note,
        cpu=list(inp.cpu),
        notes=notes,
        artifact_digest=run.artifact_digest,
    )


def comparison_rows(run: RunSummary) -> list[dict[str, Any]]:
    """Neuromorphic / CMOS estimates against each GPU baseline of the same network: GPU J / estimate J, over the
    op-count (dynamic) estimate and over its total with static power where it has a static part."""
    rows = []
    snn = [b for b in run.gpu if b.network == "snn" and b.energy_J]
    for e in run.energy:
        if not e["energy_J"]:
            continue
        for b in snn:
            assert b.energy_J is not None  # kept above: a baseline with an energy
            floor, bound = b.idle_floor_J, b.tdp_bound_J
            total = float(e.get("total_J", e["energy_J"]))
            rows.append(
                {
                    "estimate": e["label"],
                    "profile": e["profile"],
                    "method": e["method"],
                    "estimate_kind": e["kind"],
                    "energy_J": e["energy_J"],
                    "gpu": b.label,
                    "gpu_device": b.device,
                    "gpu_kind": b.kind,
                    "gpu_mode": b.mode,
                    "gpu_batch": b.batch,
                    "gpu_energy_J": b.energy_J,
                    "gpu_energy_dynamic_J": b.energy_dynamic_J,
                    "gpu_over_estimate": b.energy_J / e["energy_J"],
                    # an estimated GPU figure is the utilisation power model's: idle power x time is its floor, TDP x
                    # time its upper bound
                    "gpu_floor_over_estimate": floor / e["energy_J"] if floor else None,
                    # the same against the estimate with its static part (the report's accounting where it has one:
                    # the GPU's figure holds the board's static power)
                    "estimate_total_J": total,
                    "gpu_over_total": b.energy_J / total,
                    "gpu_floor_over_total": floor / total if floor else None,
                    "gpu_tdp_over_total": bound / total if bound else None,
                }
            )
    return rows


# ---- the whole report ---------------------------------------------------------------------------------


def build_summary(inputs: ReportInputs) -> ReportSummary:
    """The report of the gathered inputs: per run its counts, energies, memory and baselines, across runs the
    memory story, the caveats and the headline."""
    opts, priced, gpu_profiles = inputs.options, inputs.priced, inputs.gpu_profiles
    runs = [run_section(inp, opts.rule, priced) for inp in inputs.runs]
    if opts.gpu_baseline:
        for run, inp in zip(runs, inputs.runs, strict=True):
            run.gpu = list(inp.gpu)
            run.notes += inp.gpu_notes
            run.comparison = comparison_rows(run)
    memory = summary_memory.memory_section(runs, inputs.memory, inputs.attention_cores)
    models, accounting, ratios = per_model.build_models(runs, inputs.runs, priced, inputs.attention_cores)
    order = {m.attention or m.name: i for i, m in enumerate(models)}  # the memory story in the models' order
    memory.chip.sort(key=lambda v: order.get(v.variant, len(order)))
    return ReportSummary(
        per="inference (one sample, all T time steps)",
        generator=_generator(),
        options=_options_dict(opts, priced, gpu_profiles),
        runs=runs,
        memory=memory,
        profiles=[_profile_digest(p) for p in priced + gpu_profiles],
        caveats=[*inputs.left_out, *caveats(runs, priced, gpu_profiles)],
        headline=per_model.headline(models, accounting, ratios)
        + summary_memory.headline(runs, memory, inputs.attention_cores),
        models=models,
        accounting=accounting,
        ratios=ratios,
    )


def _generator() -> str:
    return f"spikeport {__version__}"


def _options_dict(opts: ReportOptions, priced: list[HwProfile], gpu_profiles: list[HwProfile]) -> dict[str, Any]:
    return {
        "profiles": [p.name for p in priced],
        "gpus": [p.name for p in gpu_profiles],
        "counting_rule": asdict(opts.rule),
        "vit": opts.vit,
        "measure_memory": opts.measure_memory,
        "gpu_bench_files": len(opts.gpu_bench),
    }


def _profile_digest(p: HwProfile) -> dict[str, Any]:
    return {
        "name": p.name,
        "kind": p.kind,
        "path": p.path,
        "description": p.description,
        "entries": {
            f"{s}.{k}": {"si": q.si, "cite": p.cite(s, k), "confidence": q.confidence}
            for s, entries in p.sections.items()
            for k, q in entries.items()
            if s in ("energy", "power", "compute", "memory")
        },
    }


def caveats(runs: list[RunSummary], priced: list[HwProfile], gpu_profiles: list[HwProfile]) -> list[str]:
    """What a reader must know before quoting a number from this report."""
    out = [
        "Every energy figure is per inference and labelled 'estimated (op counts x cost table <profile>)' "
        "or 'measured (...)'; an estimate leaves out what its 'left out' list says (data movement between "
        "cores and chips, host I/O, ...). A neuromorphic estimate holds static power x time where its profile has "
        "static power; the headline says whether the comparison includes it (docs/glossary.md: static included).",
        "Op counts come from the executor named with each run; the counting rules are in docs/counting.md.",
    ]
    for p in priced:
        soft = sorted({q.confidence for q in p.sections.get("energy", {}).values()} & {"derived", "estimate"})
        if soft:
            keys = [k for k, q in p.sections["energy"].items() if q.confidence in soft]
            out.append(
                f"profile {p.name}: the per-op energies {', '.join(keys)} have confidence "
                f"{' / '.join(soft)}: computed from other numbers or assumed, not read in a table for this "
                "target (sources in the profile table; docs/hw_profiles.md)."
            )
    if any(p.kind == "cmos" for p in priced):
        out.append(CMOS_NOTE)
    if any(e["method"] == "literature" for r in runs for e in r.energy):
        out.append(
            "The literature convention prices an accumulate at 0.9 pJ, an fp32 add (Horowitz 45 nm); an "
            "8-bit accumulate on a neuromorphic core is not an fp32 add (int8: MAC 0.23 pJ, AC 0.03 pJ)."
        )
    if any(e["method"] == "native" for r in runs for e in r.energy) and any(p.kind == "neuromorphic" for p in priced):
        out.append(
            "Neuromorphic estimates price every neuron as active at every time step (an upper bound on "
            "neuron-update energy)."
        )
    if any(b.kind == "estimated" for r in runs for b in r.gpu):
        out.append(
            "GPU figures labelled 'estimated' are a roofline from the GPU profile in two modes: latency (batch 1, "
            "one inference as it arrives) and throughput (energy per inference at batch 256, the GPU serving many; "
            "the headline's). Energy is the utilisation power model: idle power for the whole call plus TDP - idle "
            "while its kernels run at the roofline rate (baselines/gpu.py); a small network at batch 1 is "
            "launch-bound, so its time is kernels x launch latency and its energy mostly idle power. A ratio against a "
            "GPU holds for the mode it names. ONNX Runtime measured on this CPU is the check on that time. Run "
            "`spikeport bench gpu` on a CUDA machine for measured GPU figures (NVML) and pass its JSON with "
            "--gpu-bench."
        )
        out += gpu_bounds(runs)
    if any(r.samples < 100 for r in runs):
        out.append("Some runs have fewer than 100 samples: accuracy and firing rates are from a small subset.")
    return out


def gpu_bounds(runs: list[RunSummary]) -> list[str]:
    """The estimated GPU figures' bounds, per mode, for the first run that has them: idle power x time (the floor)
    and TDP x time (the upper bound, never the figure compared)."""
    out = []
    for r in runs:
        for b in r.gpu:
            floor, bound = b.idle_floor_J, b.tdp_bound_J
            if b.network != "snn" or b.kind != "estimated" or not floor or not bound:
                continue
            out.append(
                f"Bounds of the GPU estimate ({r.variant}, {b.device_name} {b.mode} mode, batch {b.batch}): "
                f"{fmt_si(b.energy_J, 'J')} an inference by the power model lies between idle power x time, "
                f"{fmt_si(floor, 'J')}, and TDP x time, {fmt_si(bound, 'J')} (the upper bound: the board at TDP for "
                "the whole call)."
            )
        if out:
            return out
    return out


CMOS_NOTE = (
    "cmos45nm is not a chip one can buy: it prices the same op counts at 45 nm CMOS arithmetic (Horowitz 2014; "
    "the E_MAC / E_AC convention of the spiking-transformer papers) with no memory or data movement, so it is the "
    "floor of a dedicated digital accelerator, not a competitor to Loihi 2's measured-anchored table."
)
