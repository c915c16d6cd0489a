"""`spikeport report`: one summary of one or more run reports (records in ``report.model``, schema
``spikeport.report`` v1).

For every run report (any executor: reference, lava-fixed_pt, loihi2, ...) the summary holds, per
inference: accuracy, per-layer spikes / firing rates / synops / MACs / dendritic updates / state bytes,
the energy estimates of every profile (metrics/energy.py: native, and for CMOS profiles the literature
convention and the memory-inclusive variant; a measured figure when the run report carries one), the
state memory the executor counted, the chip footprint check-hw counted for the artifact, and the GPU
baseline of the same network (baselines/gpu.py: measured on CUDA, otherwise estimated from GPU profiles,
with ONNX Runtime measured on this CPU beside it) with the GPU / neuromorphic energy ratio. Across runs:
the memory of SSA vs LRF-Dyn on the chip and on the GPU, counted and analytic (metrics/memory.py), and the
paper's attention-state claim priced (report/claim.py).

The summary reads no file: ``spikeport.api.report`` reads the run reports and passes, per run, what it found
beside it (``RunInput``). Every figure keeps the label of how it was obtained ("estimated (...)" /
"measured (...)") and which executor produced the counts. The views are ``report.terminal`` and
``report.html``; the numbers are formatted by ``report.format``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import PurePath
from typing import Any

from spikeport import counters
from spikeport._version import __version__
from spikeport.errors import ConfigError, ReportError
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.metrics import energy as E
from spikeport.report import summary_gpu, summary_memory
from spikeport.report.format import fmt_bytes, fmt_ratio, fmt_si  # noqa: F401  (callers of the first version)
from spikeport.report.model import (
    COUNTERS,
    SCHEMA,
    SCHEMA_VERSION,
    FloatAccuracy,
    LayerRow,
    ReportSummary,
    RunInput,
    RunSummary,
    StateMemory,
)
from spikeport.run_report import RunReport, as_dict

__all__ = ["SCHEMA", "SCHEMA_VERSION", "ReportOptions", "RunInput", "build_summary", "load_run_report"]

# Who produced a run report's counts, in words (the run report names the executor).
EXECUTORS = {
    "reference": "the reference integer simulator (numpy, spikeport's fixed-point contract)",
    "lava-fixed_pt": "the Lava CPU simulator (Loihi2SimCfg, select_tag fixed_pt)",
    "loihi2": "Loihi 2 hardware through lava-loihi",
    "torch-float": "the torch float model",
    "torch-fakequant": "the torch fake-quant executor",
}


@dataclass
class ReportOptions:
    """What to put in a report besides the run reports' own numbers."""

    profiles: tuple = ("loihi2", "cmos45nm")  # names, .yaml paths or HwProfile; GPU profiles go to `gpus`
    gpus: tuple = ("h100",)  # GPU profiles for the estimated baseline (used only without CUDA)
    rule: E.CountingRule = field(default_factory=E.CountingRule)  # docs/counting.md
    gpu_baseline: bool = True  # the float network (and its ViT counterpart) on a GPU
    vit: bool = True  # include the ANN ViT of the same width/depth/heads/token grid
    gpu_bench: tuple = ()  # `spikeport bench gpu --json` results (e.g. measured on a CUDA box)
    cuda_energy_seconds: float = 5.0  # NVML energy run length when measuring here on CUDA
    measure_memory: bool = False  # also measure the torch float model's peak memory (ssa and lrf_dyn)


# ---- input -----------------------------------------------------------------------------------------


def load_run_report(path: Any) -> RunReport:
    """Read and validate a run report (schema spikeport.run v1); errors name the file and the field."""
    return RunReport.from_json(path)


def resolve_profiles(profiles, gpus) -> tuple[list[HwProfile], list[HwProfile]]:
    """(op-count profiles, GPU profiles): every name or path loaded (and validated) once; a GPU profile
    given among ``profiles`` joins the GPU baselines."""
    priced: list[HwProfile] = []
    gpu: list[HwProfile] = []
    for p in profiles:
        prof = load_profile(p) if not isinstance(p, HwProfile) else p
        (gpu if prof.kind == "gpu" else priced).append(prof)
    for g in gpus:
        prof = load_profile(g) if not isinstance(g, HwProfile) else g
        if prof.kind != "gpu":
            raise ConfigError(
                f"--gpu {g}: profile '{prof.name}' is a {prof.kind} profile, not a GPU (pass it with --profile)"
            )
        if all(prof.name != q.name for q in gpu):
            gpu.append(prof)
    return priced, gpu


def _as_input(run: RunInput | RunReport | dict, source: str) -> RunInput:
    """A RunInput of a run given any way, validated (a one-line ReportError naming ``source`` and the field)."""
    if isinstance(run, RunInput):
        return replace(run, report=RunReport.from_dict(run.report.to_dict(), run.source or source))
    return RunInput(RunReport.from_dict(as_dict(run), source), source)


# ---- per run -----------------------------------------------------------------------------------------


def model_config(run: RunReport | dict, where: str = "run report"):
    """The run's ModelConfig, or None when the run report carries none (netx files: only a ``dataset``). A config
    that does not validate, or that describes another network than the run's layers (another attention core, depth,
    T...), is a ReportError naming ``where``: its memory and GPU figures would be another model's."""
    from spikeport.train.models import ModelConfig

    m = (run.model if isinstance(run, RunReport) else run.get("model")) or {}
    known = {f.name for f in fields(ModelConfig)}
    if not set(m) - {"dataset"}:
        return None
    if "arch" not in m:
        raise ReportError(where, "model", "a model config without 'arch' (spikformer or vit)")
    try:
        cfg = ModelConfig.from_dict({k: v for k, v in m.items() if k in known})
    except (ConfigError, TypeError) as err:
        raise ReportError(where, "model", f"not a valid model config: {err}") from None
    problem = _config_mismatch(cfg, as_dict(run))
    if problem:
        raise ReportError(where, "model", f"describes another network than the run's layers: {problem}")
    return cfg


def _config_mismatch(cfg, run: dict) -> str | None:
    """How a Spikformer config disagrees with the layers a run counted (None when it does not). The structure is
    compared where the layers carry the converter's names (``block.<i>.attn...``)."""
    if cfg.arch != "spikformer":
        return None
    ops = {layer["op"] for layer in run["layers"]}
    names = [layer["name"] for layer in run["layers"]]
    blocks = {name.split(".")[1] for name in names if name.startswith("block.") and name.count(".") >= 2}
    counted_op = "dendritic" if "dendritic" in ops else "attention" if "attention" in ops else "none"
    checks = [("T", cfg.T, run.get("T", cfg.T))]
    if blocks:  # the converter's layer names
        checks += [
            ("depth", cfg.depth, len(blocks)),
            ("attention op", "dendritic" if cfg.attention_spec.core == "dendritic" else "attention", counted_op),
            ("lrf", cfg.attention_spec.lrf, any(".attn.lrf." in name for name in names)),
            ("mlp", cfg.mlp, any(".mlp." in name for name in names)),
        ]
    for what, said, counted in checks:
        if said != counted:
            return f"{what} {said!r} (attention {cfg.attention!r}), the layers have {counted!r}"
    if run.get("predictions") and max(run["predictions"]) >= cfg.num_classes:
        return f"predictions up to class {max(run['predictions'])}, the model has {cfg.num_classes} classes"
    return None


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
                counts={c.name: layer.total(c.name) / s for c in COUNTERS},
                spikes_per_step=[v / s for v in layer.spikes],
                firing_rate=spikes / (layer.neurons * T) if layer.neurons else None,
                state_bytes=int(layer.state_bytes),
                weight_bytes=int(layer.weight_bytes),
            )
        )
    return rows


ATTENTION_STATE = {
    "attention": "K^T V (16-bit entries, H x d_h x d_h per block; host core past 64 tokens)",
    "dendritic": "dendritic token kernel (chip-native: weights, no state between steps)",
}
CHIP_ATTENTION = "coincidence pairs (chip-native: recounted every step, no state between steps)"


def state_memory(run: RunReport) -> StateMemory:
    """The state the executor counted (run report ``state_bytes``, Loihi precision, one sample)."""

    def kind(op: str, held: int) -> str:
        return ATTENTION_STATE[op] if op != "attention" or held else CHIP_ATTENTION

    attention = sum(int(x.state_bytes) for x in run.layers if x.op in ATTENTION_STATE)
    neurons = sum(int(x.state_bytes) for x in run.layers if x.op == "lif")
    total = sum(int(x.state_bytes) for x in run.layers)
    return StateMemory(
        label=f"counted by executor '{run.executor}' (run report state_bytes: Loihi precision, LIF u and v at 24 "
        "bits, docs/counting.md)",
        attention_state_bytes=attention,
        attention_state_kind=sorted({kind(x.op, int(x.state_bytes)) for x in run.layers if x.op in ATTENTION_STATE}),
        neuron_state_bytes=neurons,
        other_state_bytes=total - attention - neurons,
        state_bytes=total,
        weight_bytes=sum(int(x.weight_bytes) for x in run.layers),
        per_layer=[
            {"name": x.name, "op": x.op, "state_bytes": int(x.state_bytes)} for x in run.layers if x.state_bytes
        ],
    )


def energy_section(run: RunReport, profiles: list[HwProfile], rule: E.CountingRule) -> list[dict]:
    """Every estimate (and the measured figure, if any) per inference, with per-layer energies."""
    out, kinds = [], {p.name: p.kind for p in profiles}
    for est in E.energy_report(run, list[str | HwProfile](profiles), rule=rule).estimates:
        d = est.to_dict()
        d["profile_kind"] = kinds.get(est.profile or "")
        d["per_layer_J"] = {layer["name"]: layer["energy_J"] for layer in d["layers"] if layer["energy_J"]}
        out.append(d)
    return out


def _steps_per_sample(run: RunReport) -> int | None:
    # a streamed Lava run spends reset_interval steps per sample (T rounded up to a power of 2)
    return (run.lava.reset_interval if run.lava else None) or run.T or (run.model or {}).get("T")


def static_energy(run: RunReport, profiles: list[HwProfile]) -> tuple[dict, list[str]]:
    """Static power x T time steps x the profile's time step, per neuromorphic profile that has both: the
    order of magnitude of what the op-count estimate leaves out (the time step is a measured anchor of
    another network, so this is not an estimate of this network's runtime)."""
    out, notes = {}, []
    T = _steps_per_sample(run)
    for p in profiles:
        if p.kind != "neuromorphic" or not (p.has("power", "static") and p.has("timing", "timestep")) or not T:
            continue
        watts, step = p.si("power", "static"), p.si("timing", "timestep")
        out[p.name] = watts * T * step
        notes.append(
            f"not in the {p.name} estimate: static power {p.cite('power', 'static')} x {T} time steps x "
            f"{p.cite('timing', 'timestep')} = {fmt_si(out[p.name], 'J')} per inference (order of "
            "magnitude only: the time step is another network's)"
        )
    return out, notes


def host_io(run: RunReport, profiles: list[HwProfile]) -> tuple[dict, list[str]]:
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


def run_section(inp: RunInput, opts: ReportOptions, profiles: list[HwProfile]) -> RunSummary:
    run = inp.report
    layers = layer_rows(run)
    model = run.model or {}
    totals: dict[str, float | None] = {k.name: sum(r.counts[k.name] for r in layers) for k in COUNTERS}
    for k in counters.COUNTERS:  # the counters of the whole run: in its totals alone
        if k.scope is counters.Scope.RUN and run.totals and k.name in run.totals:
            totals[k.name] = run.totals[k.name] / run.samples
    lif = [r for r in layers if r.op == "lif"]
    neuron_steps = sum(r.neurons * len(r.spikes_per_step) for r in lif)
    totals["firing_rate"] = sum(r.spikes for r in lif) / neuron_steps if neuron_steps else None
    static, notes = static_energy(run, profiles)
    host = [n for n in (run.lava.host_only if run.lava else []) if n != "input"]
    if host:
        notes.append(
            f"in this Lava mapping {', '.join(host)} run on the host, not on neuromorphic cores; the op-count "
            "estimates price their ops as if they ran on chip, and the crossings are priced apart below"
        )
    crossings, crossing_notes = host_io(run, profiles)
    notes += crossing_notes
    compare = None
    if run.compare is not None:
        c = run.compare.to_dict()
        compare = {k: c.get(k) for k in ("against", "identical", "first_divergence", "prediction_agreement")}
    return RunSummary(
        source=inp.source,
        variant=_variant(run, inp.source),
        executor=run.executor,
        counts_by=f"{run.executor}: {EXECUTORS.get(run.executor, 'executor named in the run report')}",
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
        energy=energy_section(run, profiles, opts.rule),
        state_memory=state_memory(run),
        static_energy_J=static,
        host_io=crossings,
        host_computing=host,
        float_accuracy=inp.float_accuracy,
        chip=inp.chip,
        chip_note=inp.chip_note,
        cpu=list(inp.cpu),
        notes=notes,
    )


def comparison_rows(run: RunSummary) -> list[dict]:
    """Neuromorphic / CMOS estimates against each GPU baseline of the same network: GPU J / estimate J."""
    rows = []
    snn = [b for b in run.gpu if b.get("network") == "snn" and b.get("energy_J")]
    for e in run.energy:
        if not e["energy_J"]:
            continue
        for b in snn:
            floor = (b.get("details") or {}).get("energy_idle_floor_J")
            rows.append(
                {
                    "estimate": e["label"],
                    "profile": e["profile"],
                    "method": e["method"],
                    "estimate_kind": e["kind"],
                    "energy_J": e["energy_J"],
                    "gpu": b["label"],
                    "gpu_device": b["device"],
                    "gpu_kind": b["kind"],
                    "gpu_mode": b.get("mode", "latency" if b.get("batch") == 1 else "throughput"),
                    "gpu_batch": b.get("batch"),
                    "gpu_energy_J": b["energy_J"],
                    "gpu_energy_dynamic_J": b.get("energy_dynamic_J"),
                    "gpu_over_estimate": b["energy_J"] / e["energy_J"],
                    # an estimated GPU figure is TDP x time; idle power x time is its floor
                    "gpu_floor_over_estimate": floor / e["energy_J"] if floor else None,
                }
            )
    return rows


# ---- the whole report ---------------------------------------------------------------------------------


def build_summary(
    run_reports: Sequence[RunInput | RunReport | dict],
    profiles=None,
    gpus=None,
    sources: list[str] | None = None,
    options: ReportOptions | None = None,
    progress=None,
) -> ReportSummary:
    """The report of run reports already loaded (``RunInput``, ``RunReport`` or their JSON objects).

    ``profiles`` (names, .yaml paths, HwProfile) and ``gpus`` (GPU profiles) replace ``options``'s when
    given; ``sources`` names each run report in the output (file paths)."""
    given: dict[str, Any] = {k: tuple(v) for k, v in (("profiles", profiles), ("gpus", gpus)) if v is not None}
    opts = replace(options or ReportOptions(), **given)
    if not run_reports:
        raise ConfigError("give at least one run report")
    sources = list(sources or [getattr(r, "source", "") or f"run report {i + 1}" for i, r in enumerate(run_reports)])
    if len(sources) != len(run_reports):
        raise ConfigError(f"{len(run_reports)} run reports but {len(sources)} source names")
    inputs = [_as_input(run, src) for run, src in zip(run_reports, sources, strict=True)]
    priced, gpu_profiles = resolve_profiles(opts.profiles, opts.gpus)
    if not priced:
        raise ConfigError("no neuromorphic or CMOS profile to price the op counts with (e.g. --profile loihi2)")
    say = progress or (lambda msg: None)
    runs = [run_section(inp, opts, priced) for inp in inputs]
    cfgs = [model_config(inp.report, inp.source) for inp in inputs]
    if opts.gpu_baseline:
        cache: dict = {}
        for run, cfg in zip(runs, cfgs, strict=True):
            run.gpu, extra = summary_gpu.baselines(cfg, gpu_profiles, opts, cache, say)
            run.notes += extra
            run.comparison = comparison_rows(run)
    memory = summary_memory.memory_section(runs, cfgs, priced, opts.measure_memory, say)
    return ReportSummary(
        per="inference (one sample, all T time steps)",
        generator=_generator(),
        options=_options_dict(opts, priced, gpu_profiles),
        runs=runs,
        memory=memory,
        profiles=[_profile_digest(p) for p in priced + gpu_profiles],
        caveats=caveats(runs, priced, gpu_profiles),
        headline=summary_memory.headline(runs, memory),
    )


def _generator() -> str:
    return f"spikeport {__version__}"


def _options_dict(opts: ReportOptions, priced, gpu_profiles) -> dict:
    return {
        "profiles": [p.name for p in priced],
        "gpus": [p.name for p in gpu_profiles],
        "counting_rule": asdict(opts.rule),
        "vit": opts.vit,
        "measure_memory": opts.measure_memory,
        "gpu_bench_files": len(opts.gpu_bench),
    }


def _profile_digest(p: HwProfile) -> dict:
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
        "cores and chips, host I/O, static power, ...).",
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
    if any(b["kind"] == "estimated" for r in runs for b in r.gpu):
        out.append(
            "GPU figures labelled 'estimated' are a roofline from the GPU profile in two modes: latency (batch 1, "
            "one inference as it arrives) and throughput (energy per inference at batch 256, the GPU serving many). "
            "Energy spans idle power x time (floor) .. TDP x time (upper bound); a small network at batch 1 is "
            "launch-bound, so its time is kernels x launch latency, not arithmetic. A ratio against a GPU holds for "
            "the mode it names. ONNX Runtime measured on this CPU is the check on that time. Run `spikeport bench "
            "gpu` on a CUDA machine for measured GPU figures and pass its JSON with --gpu-bench."
        )
    if any(r.samples < 100 for r in runs):
        out.append("Some runs have fewer than 100 samples: accuracy and firing rates are from a small subset.")
    return out


CMOS_NOTE = (
    "cmos45nm is not a chip one can buy: it prices the same op counts at 45 nm CMOS arithmetic (Horowitz 2014; "
    "the E_MAC / E_AC convention of the spiking-transformer papers) with no memory or data movement, so it is the "
    "floor of a dedicated digital accelerator, not a competitor to Loihi 2's measured-anchored table."
)


def float_accuracy_of(data: dict | None) -> FloatAccuracy | None:
    """``ir.artifact.float_accuracy``'s dict as a record."""
    return None if not data else FloatAccuracy(float(data["accuracy"]), int(data["samples"]))
