"""The report's tables, built once from the summary records and printed by both views (``report.terminal``,
``report.html``): the same rows, the same formatted numbers, in a terminal and on the page.

A ``Table`` holds formatted cells (strings; a list of strings is a bulleted cell on the page and one
'; '-joined cell in the terminal) and the lines that explain it (``notes``), printed under it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from spikeport import counters
from spikeport.report.format import (
    DASH,
    Ratio,
    fmt_accuracy,
    fmt_bytes,
    fmt_count,
    fmt_pct,
    fmt_ratio,
    fmt_si,
    plural,
    short_name,
)
from spikeport.report.inputs import STATE_PARTS, Baseline, ChipFootprint, CpuBaseline
from spikeport.report.model import ModelEnergy, ModelGpu, ModelSummary, ReportSummary, RunSummary, VariantMemory
from spikeport.report.per_model import gpu_assumption
from spikeport.report.summary import CMOS_NOTE

Cell = str | list[str]


@dataclass
class Table:
    name: str  # the page's data-table attribute
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)
    left: int = 1  # leading columns of labels (aligned left)
    text: tuple[int, ...] = ()  # other columns of text (aligned left, folded in a narrow terminal)
    optional: tuple[int, ...] = ()  # columns a narrow terminal leaves out first, in this order


def gpu_energy_cell(b: Baseline) -> str:
    """An estimated GPU energy with its bracket, idle power x time .. TDP x time; a measured one as it is."""
    floor, bound = b.idle_floor_J, b.tdp_bound_J
    if b.kind == "estimated" and floor and bound:
        return f"{fmt_si(b.energy_J, 'J')} ({fmt_si(floor, 'J')} .. {fmt_si(bound, 'J')})"
    return fmt_si(b.energy_J, "J")


def _chip_cells(chip: ChipFootprint | None, note: str) -> tuple[str, str, str, str]:
    """(cores and chips, synaptic memory, chip state, host state) of a footprint (docs/glossary.md)."""
    if chip is None:
        return (f"{DASH} ({note})" if note else DASH), DASH, DASH, DASH
    span = f"-{chip.cores_high:,}" if chip.cores_high and chip.cores_high > chip.cores else ""
    where = f"~{chip.cores:,}{span} cores" + (f", {plural(chip.chips, 'chip')}" if chip.chips else "")
    if chip.measured_cores is not None:
        where += f"; measured {chip.measured_cores:,} ({chip.measured_from})"
    bits = f" at {chip.weight_bits} bits" if chip.weight_bits else ""
    host = fmt_bytes(chip.state_bytes_on_host)
    if chip.host_computing:
        host += f" ({', '.join(chip.host_computing)} compute there)"
    return (
        where,
        f"{fmt_bytes(chip.synapse_bytes)} ({chip.stored_weights:,} weights{bits})",
        (fmt_bytes(chip.state_bytes_on_chip)),
        host,
    )


def state_parts_cell(chip: ChipFootprint | None) -> str:
    """'the model's neurons (LIF u and v) 562.2 kB; synapse input buffers 624.1 kB; ...': what holds the chip state
    (its first part is the executors' LIF state, docs/glossary.md)."""
    if chip is None or not chip.state_parts:
        return DASH
    return "; ".join(f"{STATE_PARTS.get(k, k)} {fmt_bytes(v)}" for k, v in chip.state_parts.items())


def answer(s: ReportSummary) -> Table:
    """The first table: one column per model (its runs merged, ``report.per_model``), the figures a reader came for:
    which runs, accuracy float and integer, whether the other executors are bit-exact with the reference and on how
    many samples, the chip footprint, energy per inference in the report's accounting with the models' ratio, the GPU
    as one figure per mode with its ratio to the chip, and ONNX Runtime measured here."""
    models = s.models
    acc = s.accounting
    chip = acc.chip if acc is not None else None
    rows: list[list[Cell]] = []

    def row(label: str, cells: Sequence[Cell]) -> None:
        rows.append([label, *cells])

    row("runs merged (executor, samples)", [_runs_cell(m) for m in models])
    row(
        "float accuracy (conversion report)",
        [
            fmt_accuracy(m.float_accuracy.accuracy, m.float_accuracy.samples) if m.float_accuracy else DASH
            for m in models
        ],
    )
    row("integer accuracy", [_accuracy_cell(m) for m in models])
    row("bit-exact with the reference", [_exact_cell(m) for m in models])
    if any(m.chip for m in models):
        profile = next(m.chip.profile for m in models if m.chip)
        cells = [_chip_cells(m.chip, m.chip_note) for m in models]
        row(f"{profile}: cores, chips (check-hw)", [c[0] for c in cells])
        row(f"{profile}: synaptic memory (check-hw)", [c[1] for c in cells])
        row(f"{profile}: chip state; host state (check-hw)", [f"{c[2]}; {c[3]}" for c in cells])
    else:
        row("chip footprint (check-hw)", [f"{DASH} ({m.chip_note})" if m.chip_note else DASH for m in models])
    profiles = list(dict.fromkeys(e.profile for m in models for e in m.energy))
    rows += _energy_rows(s, profiles, chip)
    # throughput mode first: the headline's (a GPU serves many; batch 1 alone flatters the chip)
    modes = sorted(
        dict.fromkeys((g.mode, g.batch) for m in models for g in m.gpu), key=lambda mb: mb[0] != "throughput"
    )
    for mode, batch in modes:
        gpus = [next((g for g in m.gpu if g.mode == mode), None) for m in models]
        kind = sorted({f"{g.device}, {g.kind}" + (", power model" if g.kind == "estimated" else "") for g in gpus if g})
        row(
            f"GPU {mode} mode, batch {batch} ({'; '.join(kind)})",
            [DASH if g is None else _gpu_cell(g, chip) for g in gpus],
        )
    cpu_modes = list(dict.fromkeys((b.mode, b.batch) for m in models for b in m.cpu))
    if cpu_modes:
        row(
            "CPU here (ONNX Runtime, measured): " + "; ".join(f"batch {b}" for _, b in cpu_modes),
            ["; ".join(_cpu(m.cpu, mode) for mode, _ in cpu_modes) for m in models],
        )
    notes = []  # the accounting, the per-op energies and the GPU's range are the headline's, above the table
    if any(p == "cmos45nm" for p in profiles):
        notes.append("* " + CMOS_NOTE)
    shown = {(g.mode, g.batch): g for m in models for g in sorted(m.gpu, key=lambda g: g.mode != "throughput")}
    notes += [g.assumption for g in shown.values()]
    if cpu_modes:
        notes.append(
            "ONNX Runtime on this machine's CPU: the float network's ONNX file, timed here (the check on the GPU "
            "estimate's time; a CPU is not faster than a GPU that is used well)"
        )
    notes += [n for m in models for n in m.notes]
    return Table(
        "answer",
        "the answer, per model and per inference (energy: estimated unless labelled measured)",
        ["", *[m.name for m in models]],
        rows,
        notes,
        text=tuple(range(1, len(models) + 1)),
    )


def _energy_rows(s: ReportSummary, profiles: list[str], chip: str | None) -> list[list[Cell]]:
    """A row per priced profile (its kinds of figure, whether static power is in), then each model's energy against
    the base model's on the chip."""
    models = s.models
    rows: list[list[Cell]] = []
    for p in profiles:
        figures = [next((e for e in m.energy if e.profile == p), None) for m in models]
        kinds = sorted({e.kind for e in figures if e is not None})
        static = any(e is not None and e.static_included for e in figures)
        what = "static included" if static else ("arithmetic only" if p == "cmos45nm" else "no static part")
        label = f"{p} energy ({' / '.join(kinds)}, {what}){' *' if p == 'cmos45nm' else ''}"
        rows.append([label, *[_energy_cell(e) for e in figures]])
    among = {r.model: r for r in s.ratios if r.mode is None}
    if among:
        base = next(m.name for m in models if m.name not in among)
        ratios = [str(among[m.name].ratio) if m.name in among else "1 (the base)" for m in models]
        rows.append([f"energy / {base}'s ({chip})", *ratios])
    return rows


def _energy_cell(e: ModelEnergy | None) -> str:
    """'775.2 uJ (static 142 uJ)': the accounting's figure, its static part where it holds one."""
    if e is None:
        return DASH
    static = f" (static {fmt_si(e.static_J, 'J')})" if e.static_included and e.static_J else ""
    return fmt_si(e.energy_J, "J") + static


def _accuracy_cell(m: ModelSummary) -> str:
    if m.accuracy is None:
        return DASH
    return f"{fmt_accuracy(m.accuracy)} ({m.counts_by}, {plural(m.counted_samples, 'sample')})"


def _runs_cell(m: ModelSummary) -> str:
    return "; ".join(f"{e} ({plural(n, 'sample')})" for e, n in zip(m.executors, m.samples, strict=True))


def _exact_cell(m: ModelSummary) -> str:
    """Each run checked against the reference: 'lava-fixed_pt: identical on 24 samples'."""
    if not m.exactness:
        return "the reference only (nothing compared)" if set(m.executors) == {"reference"} else "not compared"
    return "; ".join(
        f"{x.executor}: {'identical' if x.identical else 'DIFFERENT'} on {plural(x.samples, 'sample')}"
        + ("" if x.against == "reference" else f" (against {x.against})")
        for x in m.exactness
    )


def run_role(s: ReportSummary, r: RunSummary) -> str:
    """What a run is to its model: the run whose counts price it, or a bit-exact check (on how many samples)."""
    model = next((m for m in s.models if r.source in m.runs), None)
    if model is None:
        return "not in a model"
    if model.counts_from == r.source:
        return f"model {model.name}: its counts price the model (the answer's column)"
    if r.compare:
        verdict = "identical" if r.compare["identical"] else "DIFFERENT"
        check = f"{verdict} vs {r.compare['against']} on {plural(r.samples, 'sample')}"
    else:
        check = "not compared"
    return (
        f"model {model.name}: a bit-exact check ({check}); its own figures average its {plural(r.samples, 'sample')}, "
        f"the model's are {model.counts_from}'s ({plural(model.counted_samples, 'sample')})"
    )


def model_state_line(r: RunSummary) -> str:
    """The run's model state (docs/glossary.md) in one line."""
    sm = r.state_memory
    return (
        f"model state ({sm.label}): LIF state {fmt_bytes(sm.neuron_state_bytes)}, attention state "
        f"{fmt_bytes(sm.attention_state_bytes)} ({', '.join(sm.attention_state_kind) or 'no attention'}), total "
        f"{fmt_bytes(sm.state_bytes)}; weights {fmt_bytes(sm.weight_bytes)}"
    )


def _time(t: float | None, batch: int | None) -> str:
    """'4.2 ms a call' (batch 1), '2.3 ms an inference in a batch' (the time of a batch over its inferences)."""
    if not batch or batch == 1 or t is None:
        return f"{fmt_si(t, 's')} a call"
    return f"{fmt_si(t / batch, 's')} an inference in a batch"


def _cpu(baselines: list[CpuBaseline], mode: str) -> str:
    b = next((b for b in baselines if b.mode == mode), None)
    return DASH if b is None else _time(b.latency_s, b.batch)


def _gpu_cell(g: ModelGpu, chip: str | None) -> str:
    """'2.089 J (2,695x loihi2); 2.985 ms a call': the GPU's energy per inference, GPU / chip, its time."""
    return f"{fmt_si(g.energy_J, 'J')} ({fmt_ratio(g.over_chip)} {chip}); {_time(g.latency_s, g.batch)}"


def memory_story(s: ReportSummary) -> Table:
    """Per variant: what the chip holds (check-hw) beside what a GPU holds for the same float network."""
    variants = s.memory.chip
    rows: list[list[Cell]] = []
    profile = next((v.chip.profile for v in variants if v.chip), "chip")
    cells = [_chip_cells(v.chip, v.chip_note) for v in variants]

    def count(v: VariantMemory, key: str) -> str:
        return DASH if v.chip is None else f"{getattr(v.chip, key):,}"

    rows.append([f"{profile}: cores, chips", *[c[0] for c in cells]])
    rows.append([f"{profile}: neurons", *[count(v, "neurons") for v in variants]])
    rows.append([f"{profile}: synapses", *[count(v, "synapses") for v in variants]])
    rows.append([f"{profile}: synaptic memory (weights stored)", *[c[1] for c in cells]])
    rows.append([f"{profile}: chip state", *[c[2] for c in cells]])
    if any(v.chip and v.chip.state_parts for v in variants):  # why it is larger than the executors' LIF state
        rows.append([f"{profile}: chip state held by", *[state_parts_cell(v.chip) for v in variants]])
    rows.append([f"{profile}: host state", *[c[3] for c in cells]])
    gpu = next((v for v in variants if v.gpu_device), None)
    if gpu is not None:
        rows.append(["GPU: float weights (fp32)", *[fmt_bytes(v.gpu_weights_bytes) for v in variants]])
    for mode in ("latency", "throughput") if gpu is not None else ():
        rows.append(
            [
                f"GPU: peak memory, {mode} mode (weights + activations)",
                *[
                    DASH
                    if v.gpu_peak_bytes.get(mode) is None
                    else f"{fmt_bytes(v.gpu_peak_bytes[mode])} (batch {v.gpu_batch[mode]})"
                    for v in variants
                ],
            ]
        )
    notes = [
        f"{profile} figures: check-hw on each variant's artifact (runtime/loihi2/check_hw.py): synaptic memory at the "
        "chip's weight precision (delay bits added where a group delays; a Conv kernel once per core holding it)",
    ]
    if gpu is not None:
        notes.append(
            f"GPU: {gpu.gpu_device}, {gpu.gpu_kind}; peak = weights + the activations of one call "
            "(estimated: an eager allocation replay; measured: torch.cuda.max_memory_allocated)"
        )
    return Table(
        "memory-chip",
        "memory per model: on the chip and on the GPU",
        ["", *[v.variant for v in variants]],
        rows,
        notes,
        text=tuple(range(1, len(variants) + 1)),
    )


def claim(s: ReportSummary) -> Table | None:
    """The paper's state claim in bytes, and the two LRF-Dyn lowerings on the chip."""
    c = s.memory.claim
    if c is None:
        return None
    serial, chosen = c.lowerings[c.serial], c.lowerings[c.chosen]
    rows: list[list[Cell]] = [
        [
            "streaming attention state (the paper's claim, per layer)",
            f"SSA K^T V: {c.ssa_entries:,} entries, {fmt_bytes(c.ssa_bytes)}",
            f"LRF-Dyn X: {c.dyn_entries:,} entries, {fmt_bytes(c.dyn_bytes)} ({c.ratio})",
        ],
        [
            f"LRF-Dyn on {c.profile}: neurons / chip state",
            f"{chosen['neurons']:,} / {fmt_bytes(chosen['neuron_state_bytes'])}",
            f"{serial['neurons']:,} / {fmt_bytes(serial['neuron_state_bytes'])} "
            f"(dendrites {fmt_bytes(serial['dendrite_state_bytes'])})",
        ],
        [
            f"LRF-Dyn on {c.profile}: weights stored",
            f"{chosen['stored_weights']:,} ({fmt_bytes(chosen['weight_bytes'])})",
            f"{serial['stored_weights']:,} ({fmt_bytes(serial['weight_bytes'])})",
        ],
        [f"LRF-Dyn on {c.profile}: cores", f"~{chosen['cores']:,}", f"~{serial['cores']:,}"],
        [f"LRF-Dyn on {c.profile}: latency (time steps)", str(chosen["latency_steps"]), str(serial["latency_steps"])],
    ]
    return Table(
        "claim",
        f"the paper's O(d^2) vs O(kd), per attention layer ({c.layers} in the network)",
        ["", f"{c.chosen} (built)", f"{c.serial} (holds X)"],
        rows,
        [c.statement],
    )


def shown_counters(runs: Sequence[RunSummary]) -> list[counters.Counter]:
    """The counters the per-layer tables of these runs show (``counters.columns``)."""
    return counters.columns(*(r.totals for r in runs))


def counter_cells(
    values: Mapping[str, float | None], firing_rate: float | None, shown: list[counters.Counter]
) -> list[Cell]:
    """One cell per counter shown, the firing rate after the spikes."""
    cells: list[Cell] = []
    for c in shown:
        cells.append(fmt_count(values.get(c.name)))
        if c.name == "spikes":
            cells.append(fmt_pct(firing_rate))
    return cells


def counter_headings(shown: list[counters.Counter], rate: str = "rate") -> list[str]:
    return [h for c in shown for h in ((c.label, rate) if c.name == "spikes" else (c.label,))]


def layers(run: RunSummary, i: int) -> Table:
    """Per layer, per inference: the same table in the terminal and on the page, a column per counter shown."""
    shown = shown_counters([run])
    rows: list[list[Cell]] = [
        [short_name(x.name), x.op, *counter_cells(x.counts, x.firing_rate, shown), fmt_bytes(x.state_bytes)]
        for x in run.layers
        if x.op not in ("input", "add")  # rows without work: nothing to count
    ]
    t = run.totals
    rows.append(["total", "", *counter_cells(t, t["firing_rate"], shown), fmt_bytes(run.state_memory.state_bytes)])
    notes = []
    if any(short_name(x.name) != x.name for x in run.layers):
        notes.append("layer names: stem = patch_embed, bI.a / bI.m = block I attention / MLP")
    columns = ["layer", "op", *counter_headings(shown), "model state"]
    # a narrow terminal leaves out first the counters past the first three (the last first), then op, then rate
    extra = [columns.index(c.label) for c in shown[3:]]
    return Table(
        f"layers-{i}",
        f"per layer, per inference (counts by {run.executor})",
        columns,
        rows,
        notes,
        left=2,
        optional=(*extra[::-1], 1, *([columns.index("rate")] if "rate" in columns else [])),
    )


def energy(run: RunSummary, i: int) -> Table:
    """Each estimate and measurement per inference; where one has Intel's split (a neuromorphic estimate with its
    static power x time, a Loihi 2 measurement), the dynamic and static parts beside the total."""
    split = any(e.get("static") for e in run.energy)
    rows: list[list[Cell]] = []
    for e in run.energy:
        row: list[Cell] = [e["profile"] or DASH, e["method"], fmt_si(e.get("total_J", e["energy_J"]), "J")]
        if split:
            static = e.get("static")
            row += [fmt_si(e["energy_J"], "J") if static else DASH, fmt_si(static["energy_J"], "J") if static else DASH]
        rows.append([*row, e["kind"]])
    columns = ["profile", "method", "energy", *(["dynamic", "static"] if split else []), "kind"]
    notes = [
        f"{e['profile'] or e['method']} / {e['method']}: {e['label']}; leaves out: {'; '.join(e['left_out'])}"
        for e in run.energy
    ]
    return Table(
        f"energy-{i}",
        f"energy per inference (counts by {run.executor})",
        columns,
        rows,
        notes,
        left=2,
    )


def gpu(run: RunSummary, i: int) -> Table | None:
    """The GPU baselines of the run's network, each with its mode, and the CPU measured here beside them."""
    if not run.gpu and not run.cpu:
        return None
    rows: list[list[Cell]] = []
    for b in [*run.gpu, *run.cpu]:
        rows.append(
            [
                b.short_name,
                b.device_name,
                f"{b.mode} (batch {b.batch})",
                b.kind,
                fmt_si(b.latency_s, "s"),
                gpu_energy_cell(b) if b.energy_J else DASH,
                fmt_bytes(b.peak_memory_bytes),
            ]
        )
    notes = [gpu_assumption(b) for b in run.gpu if b.network == "snn"]
    notes += list(dict.fromkeys(f"{b.short_name} on {b.device}: {b.label}" for b in [*run.gpu, *run.cpu]))
    return Table(
        f"gpu-{i}",
        "GPU baseline of the same network, and the CPU here (latency mode: batch 1; throughput mode: per inference "
        "at a large batch)",
        ["network", "device", "mode", "kind", "time a call", "energy / inference", "peak memory"],
        rows,
        notes,
        left=4,
        optional=(3, 6),
    )


def comparison(run: RunSummary, i: int) -> Table | None:
    if not run.comparison:
        return None
    rows: list[list[Cell]] = [
        [
            c["profile"] or DASH,
            c["method"],
            fmt_si(c["estimate_total_J"], "J"),
            f"{c['gpu_device'].replace(' (profile)', '')} {c['gpu_mode']} (batch {c['gpu_batch']}, {c['gpu_kind']})",
            fmt_si(c["gpu_energy_J"], "J"),
            fmt_ratio(c["gpu_over_total"])
            + (
                f" ({fmt_ratio(c['gpu_floor_over_total'])} .. {fmt_ratio(c['gpu_tdp_over_total'])})"
                if c["gpu_floor_over_total"] and c.get("gpu_tdp_over_total")
                else ""
            ),
        ]
        for c in run.comparison
    ]
    return Table(
        f"comparison-{i}",
        "estimate vs GPU, energy per inference (each ratio holds for the GPU mode it names)",
        ["profile", "method", "estimate", "GPU, mode", "GPU energy", "GPU / estimate"],
        rows,
        [
            "estimate: the op-count energy plus static power x time where the profile has static power (the GPU's "
            "figure holds the board's static power); GPU / estimate: the GPU figure over it (an estimated GPU figure: "
            "the utilisation power model, its bounds idle power x time .. TDP x time in brackets)"
        ],
        left=2,
        text=(3,),
    )


def counted_state(s: ReportSummary) -> Table:
    m = s.memory
    rows: list[list[Cell]] = [
        [
            r["source"],
            r["executor"],
            r["attention"] or DASH,
            fmt_bytes(r["attention_state_bytes"]),
            fmt_bytes(r["neuron_state_bytes"]),
            fmt_bytes(r["state_bytes"]),
            fmt_bytes(r["weight_bytes"]),
        ]
        for r in m.from_runs
    ]
    notes = []
    if m.runs_ratio:
        rr = m.runs_ratio
        reasons = rr.get("ratio_reasons", {})
        ratio = {k: str(Ratio(rr["ratio"][k], reasons.get(k, ""))) for k in ("attention_state_bytes", "state_bytes")}
        notes.append(
            f"{rr['label']}: attention state {ratio['attention_state_bytes']}, model state {ratio['state_bytes']}"
        )
    kinds = sorted({k for r in m.from_runs for k in r["attention_state_kind"]})
    notes += [f"attention state held as: {k}" for k in kinds]
    for c in m.check:
        notes.append(
            f"check {c['source']} ({c['attention']}): counted attention state {fmt_bytes(c['counted'])} = analytic at "
            f"Loihi precision for the lowering that ran {fmt_bytes(c['analytic'])}: "
            f"{'agrees' if c['agrees'] else 'DIFFERENT'}"
        )
    return Table(
        "memory-runs",
        "model state counted by the executors (Loihi precision, per sample)",
        ["run report", "executor", "attention", "attention state", "LIF state", "model state", "weights"],
        rows,
        notes + m.notes,
        left=3,
        text=(0,),
    )


# baselines.torch_memory's figure names, in the report's terms (docs/glossary.md): the attention state of its
# breakdown is what a token-streaming runtime holds, the streaming attention state
ANALYTIC_NAMES = {
    "attn core state": "streaming attention state, core (fp32, all blocks)",
    "attn state": "streaming attention state, core + buffers (fp32, all blocks)",
    "attn core state @Loihi": "streaming attention state @Loihi, core (all blocks: blocks x the claim's)",
    "attn state @Loihi": "streaming attention state @Loihi, core + buffers (all blocks)",
    "LIF state": "LIF state, torch fp32 (v, 4 B a neuron)",
    "LIF state @Loihi": "LIF state @Loihi (u and v at 24 bits, as counted)",
}


def analytic(s: ReportSummary) -> Table | None:
    an = s.memory.analytic
    if not an:
        return None
    atts = [r.attention for r in an.results]
    base = atts[0]
    rows: list[list[Cell]] = [
        [
            ANALYTIC_NAMES.get(r["figure"], r["figure"]),
            *[fmt_bytes(r["bytes"][a]) for a in atts],
            *[fmt_ratio(r[f"ratio_to_{base}"][a]) for a in atts[1:]],
        ]
        for r in an.summary
        if any(v is not None for v in r["bytes"].values())
    ]
    return Table(
        "memory-analytic",
        f"memory, analytic for the run's model ({' vs '.join(atts)}, batch 1; torch fp32 unless the row says Loihi)",
        ["figure", *atts, *[f"{a} / {base}" for a in atts[1:]]],
        rows,
        [an.label],
    )
