"""`spikeport report`: one summary of one or more run reports, JSON-ready (schema ``spikeport.report`` v1).

For every run report (any executor: reference, lava-fixed_pt, loihi2, ...) the summary holds, per
inference: accuracy, per-layer spikes / firing rates / synops / MACs / dendritic updates / state bytes,
the energy estimates of every profile (metrics/energy.py: native, and for CMOS profiles the literature
convention and the memory-inclusive variant; a measured figure when the run report carries one), the
state memory the executor counted, and the GPU baseline of the same network (baselines/gpu.py: measured on
CUDA, otherwise estimated from GPU profiles) with the GPU / neuromorphic energy ratio. Across runs: the
memory of SSA vs LRF-Dyn, from the runs and analytically (metrics/memory.py) for the run's model config.

Every figure keeps the label of how it was obtained ("estimated (...)" / "measured (...)") and which
executor produced the counts. ``report/html.py`` renders the summary as a page; the CLI prints it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from spikeport._version import __version__
from spikeport.errors import ConfigError, ReportError
from spikeport.hw_profiles import HwProfile, load_profile
from spikeport.metrics import energy as E
from spikeport.report import summary_memory
from spikeport.run_report import LAYER_COUNTERS, RunReport, as_dict

SCHEMA = "spikeport.report"
SCHEMA_VERSION = 1
COUNTERS = LAYER_COUNTERS

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


def load_run_report(path: str | Path) -> RunReport:
    """Read and validate a run report (schema spikeport.run v1); errors name the file and the field."""
    return RunReport.from_json(Path(path))


def validate_run_report(run: RunReport | dict, where: str = "run report") -> dict:
    """The run report as a JSON object, validated (``RunReport.from_dict``): a one-line ReportError naming
    ``where`` and the field otherwise."""
    return RunReport.from_dict(as_dict(run), where).to_dict()


def resolve_profiles(profiles, gpus) -> tuple[list[HwProfile], list[HwProfile]]:
    """(op-count profiles, GPU profiles): every name or path loaded (and validated) once; a GPU profile
    given among ``profiles`` joins the GPU baselines."""
    priced, gpu = [], []
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


# ---- per run -----------------------------------------------------------------------------------------


def model_config(run: dict, where: str = "run report"):
    """The run's ModelConfig, or None when the run report carries none (netx files: only a ``dataset``). A config
    that does not validate, or that describes another network than the run's layers (another attention core, depth,
    T...), is a ReportError naming ``where``: its memory and GPU figures would be another model's."""
    from spikeport.train.models import ModelConfig

    m = run.get("model") or {}
    known = {f.name for f in fields(ModelConfig)}
    if not set(m) - {"dataset"}:
        return None
    if "arch" not in m:
        raise ReportError(where, "model", "a model config without 'arch' (spikformer or vit)")
    try:
        cfg = ModelConfig.from_dict({k: v for k, v in m.items() if k in known})
    except (ConfigError, TypeError) as err:
        raise ReportError(where, "model", f"not a valid model config: {err}") from None
    problem = _config_mismatch(cfg, run)
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


def layer_rows(run: dict) -> list[dict]:
    """Per-layer counts per inference (the run report's sums over samples divided by ``samples``)."""
    s = run["samples"]
    rows = []
    for layer in run["layers"]:
        T = max(len(layer["spikes"]), 1)
        neurons = int(layer.get("neurons", 0) or 0)
        row = {
            "name": layer["name"],
            "op": layer["op"],
            "input_kind": layer.get("input_kind"),
            "neurons": neurons,
            "fan_out": layer.get("fan_out"),
        }
        for key in COUNTERS + ("synops_valued",):
            if key in layer:
                row[key] = sum(layer[key]) / s
        row["spikes_per_step"] = [v / s for v in layer["spikes"]]
        # firing rate: spikes / (neurons x T), the fraction of neuron-steps that spike (LIF layers)
        row["firing_rate"] = row["spikes"] / (neurons * T) if neurons else None
        row["state_bytes"] = int(layer.get("state_bytes", 0) or 0)
        row["weight_bytes"] = int(layer.get("weight_bytes", 0) or 0)
        rows.append(row)
    return rows


def state_memory(run: dict) -> dict:
    """The state the executor counted (run report ``state_bytes``, Loihi precision, one sample)."""
    kinds = {
        "attention": "K^T V (16-bit entries, H x d_h x d_h per block; host core past 64 tokens)",
        "dendritic": "dendritic token kernel (chip-native: weights, no state between steps)",
    }
    chip_attention = "coincidence pairs (chip-native: recounted every step, no state between steps)"

    def kind(layer: dict) -> str:
        held_bytes = int(layer.get("state_bytes", 0) or 0)
        return kinds[layer["op"]] if layer["op"] != "attention" or held_bytes else chip_attention

    attention = sum(int(layer.get("state_bytes", 0)) for layer in run["layers"] if layer["op"] in kinds)
    neurons = sum(int(layer.get("state_bytes", 0)) for layer in run["layers"] if layer["op"] == "lif")
    other = sum(int(layer.get("state_bytes", 0)) for layer in run["layers"]) - attention - neurons
    weights = sum(int(layer.get("weight_bytes", 0)) for layer in run["layers"])
    held = sorted({kind(layer) for layer in run["layers"] if layer["op"] in kinds})
    return {
        "label": f"counted by executor '{run['executor']}' (run report state_bytes: Loihi precision, "
        "LIF u and v at 24 bits, docs/counting.md)",
        "attention_state_bytes": attention,
        "attention_state_kind": held,
        "neuron_state_bytes": neurons,
        "other_state_bytes": other,
        "state_bytes": attention + neurons + other,
        "weight_bytes": weights,
        "per_layer": [
            {"name": layer["name"], "op": layer["op"], "state_bytes": int(layer["state_bytes"])}
            for layer in run["layers"]
            if layer.get("state_bytes")
        ],
    }


def energy_section(run: dict, profiles: list[HwProfile], rule: E.CountingRule) -> list[dict]:
    """Every estimate (and the measured figure, if any) per inference, with per-layer energies."""
    out, kinds = [], {p.name: p.kind for p in profiles}
    for est in E.energy_report(run, profiles, rule=rule).estimates:
        d = est.to_dict()
        d["profile_kind"] = kinds.get(est.profile)
        d["per_layer_J"] = {layer["name"]: layer["energy_J"] for layer in d["layers"] if layer["energy_J"]}
        out.append(d)
    return out


def static_energy(run: dict, profiles: list[HwProfile]) -> tuple[dict, list[str]]:
    """Static power x T time steps x the profile's time step, per neuromorphic profile that has both: the
    order of magnitude of what the op-count estimate leaves out (the time step is a measured anchor of
    another network, so this is not an estimate of this network's runtime)."""
    out, notes = {}, []
    # a streamed Lava run spends reset_interval steps per sample (T rounded up to a power of 2)
    T = (run.get("lava") or {}).get("reset_interval") or run.get("T") or (run.get("model") or {}).get("T")
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


def host_io(run: dict, profiles: list[HwProfile]) -> tuple[dict, list[str]]:
    """Time and energy of the host <-> chip crossings a Lava mapping with host-side computing processes
    makes: every time step of every sample waits for the host round trip, priced at the profile's
    ``timing.host_io_step`` (an IO-bound measurement of another network) with its static power. Labelled
    estimates; the op-count estimate prices those processes' ops as if they ran on the chip."""
    lava = run.get("lava") or {}
    hosted = [name for name in lava.get("host_only", []) if name != "input"]
    steps = lava.get("reset_interval") or run.get("T")
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


def run_section(run: dict, source: str, opts: ReportOptions, profiles: list[HwProfile]) -> dict:
    layers = layer_rows(run)
    model = run.get("model") or {}
    totals = {k: sum(r.get(k, 0.0) for r in layers) for k in COUNTERS}
    lif = [r for r in layers if r["op"] == "lif"]
    neuron_steps = sum(r["neurons"] * len(r["spikes_per_step"]) for r in lif)
    totals["firing_rate"] = sum(r["spikes"] for r in lif) / neuron_steps if neuron_steps else None
    static, notes = static_energy(run, profiles)
    host = [n for n in (run.get("lava") or {}).get("host_only", []) if n != "input"]
    if host:
        notes.append(
            f"in this Lava mapping {', '.join(host)} run on the host, not on neuromorphic cores; the op-count "
            "estimates price their ops as if they ran on chip, and the crossings are priced apart below"
        )
    crossings, crossing_notes = host_io(run, profiles)
    notes += crossing_notes
    return {
        "source": source,
        "executor": run["executor"],
        "counts_by": f"{run['executor']}: {EXECUTORS.get(run['executor'], 'executor named in the run report')}",
        "artifact": run.get("artifact"),
        "attention": model.get("attention"),
        "model": model,
        "T": run.get("T", model.get("T")),
        "samples": run["samples"],
        "accuracy": run.get("accuracy"),
        "wall_time_s": run.get("wall_time_s"),
        "latency_timesteps": run.get("latency_timesteps"),
        "compare": _compare_digest(run.get("compare")),
        "per": "inference",
        "totals": totals,
        "layers": layers,
        "energy": energy_section(run, profiles, opts.rule),
        "state_memory": state_memory(run),
        "static_energy_J": static,
        "host_io": crossings,
        "host_computing": host,
        "float_accuracy": float_accuracy(run.get("artifact"), run.get("artifact_digest")),
        "gpu": [],
        "comparison": [],
        "notes": notes,
    }


def float_accuracy(artifact: str | None, digest: str | None = None) -> dict | None:
    """The float model's accuracy from the conversion report beside an artifact (``spikeport convert`` writes
    both; the test images it compared on), or None, also when that report names the artifact with another root
    digest than the run's (another conversion)."""
    if not artifact:
        return None
    from spikeport.ir.artifact import REPORT_NAME, stale_report

    if digest and stale_report(digest, artifact):
        return None
    try:
        comparison = json.loads(Path(artifact).with_name(REPORT_NAME).read_text()).get("comparison") or {}
        return {"accuracy": float(comparison["accuracy"]["torch-float"]), "samples": int(comparison["samples"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def answer_table(summary: dict) -> tuple[list[str], list[list[str]]]:
    """(columns, formatted rows) of ``answer_rows``: what the HTML report and the terminal summary both open with."""
    rows = answer_rows(summary)
    profiles = list(dict.fromkeys(k for r in rows for k in r["energy_J"]))
    gpus = list(dict.fromkeys(k for r in rows for k in r["gpu_J"]))
    columns = [
        "variant",
        "counts by",
        "float accuracy",
        "integer accuracy (samples)",
        "integer executors",
        *[f"{k} (estimated)" for k in profiles],
        *[f"GPU {k}" for k in gpus],
        "state",
        "weights",
        "computing on the host",
    ]
    body = [
        [
            r["attention"] or r["run"],
            r["executor"],
            "-" if not r["float_accuracy"] else f"{r['float_accuracy']['accuracy']:.4f}",
            "-" if r["accuracy"] is None else f"{r['accuracy']:.4f} ({r['samples']})",
            r["bit_exact"],
            *[fmt_si(r["energy_J"].get(k), "J") for k in profiles],
            *[fmt_si(r["gpu_J"].get(k), "J") for k in gpus],
            fmt_bytes(r["state_bytes"]),
            fmt_bytes(r["weight_bytes"]),
            ", ".join(r["host_computing"]) or "none",
        ]
        for r in rows
    ]
    return columns, body


def answer_rows(summary: dict) -> list[dict]:
    """The report's first table, one row per run: what a reader asks first (accuracy float and integer, whether
    the integer executors agree, energy per inference on each profile and on the GPU in both modes, memory,
    what stays on the host)."""
    rows = []
    for r in summary["runs"]:
        c = r.get("compare")
        exact = (
            "not compared"
            if not c
            else f"{'identical' if c['identical'] else 'DIFFERENT'} vs {c['against']} ({r['samples']} samples)"
        )
        snn = [b for b in r["gpu"] if b.get("network") == "snn" and b.get("energy_J")]
        rows.append(
            {
                "run": r["source"],
                "attention": r["attention"],
                "executor": r["executor"],
                "float_accuracy": r.get("float_accuracy"),
                "accuracy": r["accuracy"],
                "samples": r["samples"],
                "bit_exact": exact,
                "energy_J": {e["profile"] or e["method"]: e["energy_J"] for e in r["energy"] if e["energy_J"]},
                "gpu_J": {
                    f"{b['device'].replace(' (profile)', '')} {b.get('mode', '')} ({b['kind']})": b["energy_J"]
                    for b in snn
                },
                "state_bytes": r["state_memory"]["state_bytes"],
                "weight_bytes": r["state_memory"]["weight_bytes"],
                "host_computing": r.get("host_computing", []),
            }
        )
    return rows


def _compare_digest(c: dict | None) -> dict | None:
    if not c:
        return None
    return {k: c.get(k) for k in ("against", "identical", "first_divergence", "prediction_agreement")}


def comparison_rows(run: dict) -> list[dict]:
    """Neuromorphic / CMOS estimates against each GPU baseline of the same network: GPU J / estimate J."""
    rows = []
    snn = [b for b in run["gpu"] if b.get("network") == "snn" and b.get("energy_J")]
    for e in run["energy"]:
        if not e["energy_J"]:
            continue
        for b in snn:
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
                    "gpu_floor_over_estimate": (
                        floor / e["energy_J"]
                        if (floor := (b.get("details") or {}).get("energy_idle_floor_J"))
                        else None
                    ),
                }
            )
    return rows


# ---- the whole report ---------------------------------------------------------------------------------


def build_summary(
    run_reports: list[RunReport | dict],
    profiles=None,
    gpus=None,
    sources: list[str] | None = None,
    options: ReportOptions | None = None,
    progress=None,
) -> dict:
    """The report (schema spikeport.report v1) of run reports already loaded (see ``load_run_report``).

    ``profiles`` (names, .yaml paths, HwProfile) and ``gpus`` (GPU profiles) replace ``options``'s when
    given; ``sources`` names each run report in the output (file paths)."""
    opts = replace(
        options or ReportOptions(),
        **{k: tuple(v) for k, v in (("profiles", profiles), ("gpus", gpus)) if v is not None},
    )
    if not run_reports:
        raise ConfigError("give at least one run report")
    sources = list(sources or [f"run report {i + 1}" for i in range(len(run_reports))])
    if len(sources) != len(run_reports):
        raise ConfigError(f"{len(run_reports)} run reports but {len(sources)} source names")
    run_reports = [validate_run_report(run, src) for run, src in zip(run_reports, sources, strict=True)]
    configs = [model_config(run, src) for run, src in zip(run_reports, sources, strict=True)]
    priced, gpu_profiles = resolve_profiles(opts.profiles, opts.gpus)
    if not priced:
        raise ConfigError("no neuromorphic or CMOS profile to price the op counts with (e.g. --profile loihi2)")
    say = progress or (lambda msg: None)
    runs = [run_section(r, s, opts, priced) for r, s in zip(run_reports, sources, strict=True)]
    notes: list[str] = []
    if opts.gpu_baseline:
        from spikeport.report import summary_gpu

        cache: dict = {}
        for run, cfg in zip(runs, configs, strict=True):
            run["gpu"], extra = summary_gpu.baselines(cfg, gpu_profiles, opts, cache, say)
            run["notes"] += extra
            run["comparison"] = comparison_rows(run)
    memory = summary_memory.memory_section(runs, configs, opts.measure_memory, say)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "per": "inference (one sample, all T time steps)",
        "generator": _generator(),
        "options": _options_dict(opts, priced, gpu_profiles),
        "runs": runs,
        "memory": memory,
        "profiles": [_profile_digest(p) for p in priced + gpu_profiles],
        "caveats": caveats(runs, priced, gpu_profiles),
        "notes": notes,
    }


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


def caveats(runs: list[dict], priced: list[HwProfile], gpu_profiles: list[HwProfile]) -> list[str]:
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
    if any(e["method"] == "literature" for r in runs for e in r["energy"]):
        out.append(
            "The literature convention prices an accumulate at 0.9 pJ, an fp32 add (Horowitz 45 nm); an "
            "8-bit accumulate on a neuromorphic core is not an fp32 add (int8: MAC 0.23 pJ, AC 0.03 pJ)."
        )
    if any(e["method"] == "native" for r in runs for e in r["energy"]) and any(
        p.kind == "neuromorphic" for p in priced
    ):
        out.append(
            "Neuromorphic estimates price every neuron as active at every time step (an upper bound on "
            "neuron-update energy)."
        )
    if any(b["kind"] == "estimated" for r in runs for b in r["gpu"]):
        out.append(
            "GPU figures labelled 'estimated' are a roofline from the GPU profile, energy = TDP x time (an upper "
            "bound), in two modes: latency (batch 1, one inference as it arrives) and throughput (energy per "
            "inference at batch 256, the GPU serving many); a ratio against a GPU holds for the mode it names. Run "
            "`spikeport bench gpu` on a CUDA machine for measured ones and pass its JSON with --gpu-bench."
        )
    if any(r["samples"] < 100 for r in runs):
        out.append("Some runs have fewer than 100 samples: accuracy and firing rates are from a small subset.")
    return out


# ---- formatting shared by the CLI and the HTML page -------------------------------------------------


def fmt_si(value: float | None, unit: str, digits: int = 4) -> str:
    """12.3 uJ, 4.5 ms, 1.2 MB ... (None -> '-')."""
    if value is None:
        return "-"
    if value == 0:
        return f"0 {unit}"
    for factor, prefix in (
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1, ""),
        (1e-3, "m"),
        (1e-6, "u"),
        (1e-9, "n"),
        (1e-12, "p"),
    ):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    return f"{value / 1e-15:.{digits}g} f{unit}"


def fmt_ratio(x: float | None) -> str:
    """78,465x / 2.5x / 0.123x."""
    if x is None:
        return "-"
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def memory_rows(analytic: dict) -> list[dict]:
    """The analytic summary rows that have a value (measured rows only after --memory)."""
    return [r for r in analytic["summary"] if any(v is not None for v in r["bytes"].values())]


def fmt_bytes(n: int | float | None) -> str:
    if n is None:
        return "-"
    return f"{int(n):,} B" if abs(n) < 1e3 else fmt_si(float(n), "B")
