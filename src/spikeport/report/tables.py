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
from spikeport.report.inputs import Baseline, ChipFootprint
from spikeport.report.model import ReportSummary, RunSummary, VariantMemory
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


def run_title(run: RunSummary) -> str:
    """A run's column heading: its variant and executor."""
    return f"{run.variant} ({run.executor})"


def gpu_mode_label(b: Baseline) -> str:
    """'h100 latency mode, batch 1 (estimated)': the device, the mode and its batch, the kind."""
    return f"{b.device_name} {b.mode} mode, batch {b.batch} ({b.kind})"


def gpu_energy_cell(b: Baseline) -> str:
    """An estimated GPU energy as its bracket, idle power x time .. TDP x time; a measured one as it is."""
    floor = b.idle_floor_J
    if b.kind == "estimated" and floor:
        return f"{fmt_si(floor, 'J')} .. {fmt_si(b.energy_J, 'J')}"
    return fmt_si(b.energy_J, "J")


def gpu_assumption(b: Baseline) -> str:
    """What an estimated GPU figure assumes, in one line, from the estimate's own details."""
    d = b.details
    if b.kind != "estimated" or not d:
        return f"{gpu_mode_label(b)}: {b.label}"
    bounds = {"launch": d.get("launch_bound_s"), "compute": d.get("compute_bound_s"), "memory": d.get("memory_bound_s")}
    bound = max(bounds, key=lambda k: bounds[k] or 0)
    kernels = d.get("kernels")
    launch = (d.get("launch_bound_s") or 0) / kernels if kernels else None
    return (
        f"{gpu_mode_label(b)}: {fmt_si(b.latency_s, 's')} a call, {bound}-bound ({kernels} kernels"
        + (f" x {fmt_si(launch, 's')} launch" if launch else "")
        + f"; compute {fmt_si(d.get('compute_bound_s'), 's')} at {d.get('u_compute', 0):.0%} of peak, memory "
        f"{fmt_si(d.get('memory_bound_s'), 's')} at {d.get('u_memory', 0):.0%} of bandwidth); energy = idle "
        f"{d.get('idle_W', 0):g} W .. TDP {d.get('tdp_W', 0):g} W x that time, per inference"
    )


def _chip_cells(chip: ChipFootprint | None, note: str) -> tuple[str, str, str, str]:
    """(cores and chips, synaptic memory, neuron state on the chip, state on the host) of a footprint."""
    if chip is None:
        return (f"{DASH} ({note})" if note else DASH), DASH, DASH, DASH
    where = f"~{chip.cores:,} cores" + (f", {plural(chip.chips, 'chip')}" if chip.chips else "")
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


def answer(s: ReportSummary) -> Table:
    """The first table: one column per run, the figures a reader came for (accuracy float and integer, whether
    the integer executors agree, the chip footprint, energy per inference on each profile, the GPU in both modes,
    ONNX Runtime measured here)."""
    runs = s.runs
    rows: list[list[Cell]] = []

    def row(label: str, cells: list[str]) -> None:
        rows.append([label, *cells])

    row(
        "float accuracy (conversion report)",
        [fmt_accuracy(r.float_accuracy.accuracy, r.float_accuracy.samples) if r.float_accuracy else DASH for r in runs],
    )
    row("integer accuracy", [fmt_accuracy(r.accuracy, r.samples) for r in runs])
    row("bit-exact with the reference", [_exactness(r) for r in runs])
    if any(r.chip for r in runs):
        profile = next(r.chip.profile for r in runs if r.chip)
        chip = [_chip_cells(r.chip, r.chip_note) for r in runs]
        row(f"{profile}: cores, chips (check-hw)", [c[0] for c in chip])
        row(f"{profile}: synaptic memory", [c[1] for c in chip])
        row(f"{profile}: neuron state on the chip", [c[2] for c in chip])
        row(f"{profile}: state on the host", [c[3] for c in chip])
    else:
        row("chip footprint (check-hw)", [f"{DASH} ({r.chip_note})" if r.chip_note else DASH for r in runs])
    profiles = list(dict.fromkeys(e["profile"] or e["method"] for r in runs for e in r.energy if e["energy_J"]))
    for p in profiles:
        marks = {e["kind"] for r in runs for e in r.energy if (e["profile"] or e["method"]) == p}
        kind = "measured" if marks == {"measured"} else "estimated"
        row(
            f"{p} energy ({kind}){' *' if p == 'cmos45nm' else ''}",
            [_energy(r, p) for r in runs],
        )
    keys = list(dict.fromkeys(gpu_mode_label(b) for r in runs for b in r.gpu if b.network == "snn"))
    for key in keys:
        row(f"GPU {key}", [_gpu(r, key) for r in runs])
    cpu_keys = list(dict.fromkeys(_cpu_label(b) for r in runs for b in r.cpu))
    for key in cpu_keys:
        row(key, [_cpu(r, key) for r in runs])
    notes = []
    if any(p == "cmos45nm" for p in profiles):
        notes.append("* " + CMOS_NOTE)
    shown: dict[str, Baseline] = {}
    for r in runs:
        for b in r.gpu:
            if b.network == "snn":
                shown.setdefault(gpu_mode_label(b), b)
    notes += [gpu_assumption(b) for b in shown.values()]
    if cpu_keys:
        notes.append(
            "ONNX Runtime on this machine's CPU: the float network's ONNX file, timed here (the check on the GPU "
            "estimate's time; a CPU is not faster than a GPU that is used well)"
        )
    return Table(
        "answer",
        "the answer, per run and per inference (energy: estimated unless labelled measured)",
        ["", *[run_title(r) for r in runs]],
        rows,
        notes,
        text=tuple(range(1, len(runs) + 1)),
    )


def _exactness(r: RunSummary) -> str:
    if r.compare:
        verdict = "identical" if r.compare["identical"] else "DIFFERENT"
        return f"{verdict} vs {r.compare['against']} ({plural(r.samples, 'sample')})"
    return "is the reference" if r.executor == "reference" else "not compared"


def _energy(r: RunSummary, profile: str) -> str:
    e = next((e for e in r.energy if (e["profile"] or e["method"]) == profile and e["method"] == "native"), None)
    e = e or next((e for e in r.energy if (e["profile"] or e["method"]) == profile), None)
    return fmt_si(e.get("total_J", e["energy_J"]), "J") if e and e["energy_J"] else DASH


def _gpu(r: RunSummary, key: str) -> str:
    b = next((b for b in r.gpu if b.network == "snn" and gpu_mode_label(b) == key), None)
    return DASH if b is None else f"{gpu_energy_cell(b)}; {_call_time(b)}"


def _call_time(b: Baseline) -> str:
    """'4.2 ms a call', or for a batch '596 ms a batch of 256 (2.3 ms an inference)'."""
    t, batch = b.latency_s, b.batch or 1
    if batch == 1 or t is None:
        return f"{fmt_si(t, 's')} a call"
    return f"{fmt_si(t, 's')} a batch of {batch} ({fmt_si(t / batch, 's')} an inference)"


def _cpu_label(b: Baseline) -> str:
    executor = "ONNX Runtime" if b.executor == "onnxruntime" else b.executor
    return f"CPU here ({executor}, measured), {b.mode} mode, batch {b.batch}"


def _cpu(r: RunSummary, key: str) -> str:
    b = next((b for b in r.cpu if _cpu_label(b) == key), None)
    return DASH if b is None else _call_time(b)


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
    rows.append([f"{profile}: neuron state on the chip", *[c[2] for c in cells]])
    rows.append([f"{profile}: state on the host", *[c[3] for c in cells]])
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
        "memory per variant: on the chip and on the GPU",
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
            "attention state of one token stream (the paper's claim)",
            f"SSA K^T V: {c.ssa_entries:,} entries, {fmt_bytes(c.ssa_bytes)}",
            f"LRF-Dyn X: {c.dyn_entries:,} entries, {fmt_bytes(c.dyn_bytes)} ({c.ratio})",
        ],
        [
            f"LRF-Dyn on {c.profile}: neurons / their state",
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
    columns = ["layer", "op", *counter_headings(shown), "state"]
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
            fmt_si(c["energy_J"], "J"),
            f"{c['gpu_device'].replace(' (profile)', '')} {c['gpu_mode']} (batch {c['gpu_batch']}, {c['gpu_kind']})",
            fmt_si(c["gpu_energy_J"], "J"),
            (f"{fmt_ratio(c['gpu_floor_over_estimate'])} .. " if c["gpu_floor_over_estimate"] else "")
            + fmt_ratio(c["gpu_over_estimate"]),
        ]
        for c in run.comparison
    ]
    return Table(
        f"comparison-{i}",
        "estimate vs GPU, energy per inference (each ratio holds for the GPU mode it names)",
        ["profile", "method", "estimate", "GPU, mode", "GPU energy", "GPU / estimate"],
        rows,
        [
            "GPU / estimate: the GPU figure over the op-count estimate; for an estimated GPU figure the ratio spans "
            "its idle floor (idle power x time) .. TDP x time"
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
            f"{rr['label']}: attention state {ratio['attention_state_bytes']}, total state {ratio['state_bytes']}"
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
        "state counted by the executors (Loihi precision, per sample)",
        ["run report", "executor", "attention", "attention state", "neuron state", "state", "weights"],
        rows,
        notes + m.notes,
        left=3,
        text=(0,),
    )


def analytic(s: ReportSummary) -> Table | None:
    an = s.memory.analytic
    if not an:
        return None
    atts = [r.attention for r in an.results]
    base = atts[0]
    rows: list[list[Cell]] = [
        [
            r["figure"],
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
