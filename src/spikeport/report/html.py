"""A ``spikeport.report`` summary as one self-contained HTML page: tables, inline SVG plots, no scripts,
no external resources (it opens offline and can be mailed as one file). Written atomically.

Every plot is a ``<figure class="plot" data-plot="...">`` holding one ``<svg>``; every table of numbers
carries ``data-table="..."``; the tests count both in a headless browser's DOM.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from spikeport.analysis.html import STYLE
from spikeport.atomic import atomic_write
from spikeport.report import plots
from spikeport.report.summary import answer_table, fmt_bytes, fmt_ratio, fmt_si, memory_rows

EXTRA_STYLE = """figure.plot{margin:1em 0}figure.plot svg{max-width:100%;height:auto}
.label{font-size:12px;color:#335}.caveats li{margin:.3em 0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em}
td.l,th.l{text-align:left}ul.left-out{margin:0;padding-left:1.2em;font-size:12px;color:#555}"""


def esc(v) -> str:
    return html.escape("-" if v is None else str(v))


def table(name: str, columns: list[str], rows: list[list], left: int = 1) -> str:
    """Cells are already formatted (strings or HTML from ``raw``); the first ``left`` columns align left."""
    texts = {i for i, v in enumerate(rows[0] if rows else []) if isinstance(v, raw)}  # labels, lists

    def cell(i, v, tag):
        cls = " class='l'" if i < left or i in texts else ""
        return f"<{tag}{cls}>{v.html if isinstance(v, raw) else esc(v)}</{tag}>"

    head = "".join(cell(i, c, "th") for i, c in enumerate(columns))
    body = "".join("<tr>" + "".join(cell(i, v, "td") for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table data-table='{esc(name)}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class raw:
    """Trusted HTML for a table cell (built here from escaped parts)."""

    def __init__(self, text: str):
        self.html = text


def figure(name: str, svg: str, caption: str) -> str:
    return (
        f"<figure class='plot' data-plot='{esc(name)}'>{svg}"
        f"<figcaption class='note'>{esc(caption)}</figcaption></figure>"
    )


def _num(v, digits: int = 4) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 or (float(v).is_integer() and abs(v) >= 1) else f"{v:.{digits}g}"


def _pct(v) -> str:
    return "-" if v is None else f"{v:.2%}"


def answer_part(s: dict) -> str:
    """The first screen: one row per run (per variant), the figures a reader came for."""
    columns, body = answer_table(s)
    return (
        "<h2 id='answer'>The answer, per variant and per inference</h2>"
        + table("answer", columns, body, 2)
        + "<p class='note'>Energy on neuromorphic and CMOS profiles: op counts x the profile's cost table "
        "(estimated). GPU: latency mode = batch 1, throughput mode = energy per inference at batch 256; "
        "'estimated' = roofline x TDP from the GPU profile, 'measured' = on a CUDA device. Float accuracy: the "
        "conversion report beside the artifact. Methods and caveats below; per-layer tables folded under each "
        "run.</p>"
    )


def overview(s: dict) -> str:
    rows = [
        [
            r["source"],
            r["counts_by"],
            r["attention"] or "-",
            _num(r["T"]),
            _num(r["samples"]),
            "-" if r["accuracy"] is None else f"{r['accuracy']:.4f}",
            _num(r["totals"]["spikes"]),
            _pct(r["totals"]["firing_rate"]),
            _num(r["totals"]["synops"]),
            _num(r["totals"]["macs"]),
            _num(r["totals"]["dendritic_updates"]),
            fmt_bytes(r["state_memory"]["state_bytes"]),
        ]
        for r in s["runs"]
    ]
    return table(
        "runs",
        [
            "run report",
            "counts produced by (executor)",
            "attention",
            "T",
            "samples",
            "accuracy",
            "spikes",
            "firing rate",
            "synops",
            "MACs",
            "dendritic updates",
            "state",
        ],
        rows,
        2,
    )


def layer_table(run: dict, i: int) -> str:
    rows = [
        [
            r["name"],
            r["op"],
            r["input_kind"] or "-",
            _num(r["spikes"]),
            _pct(r["firing_rate"]),
            _num(r["synops"]),
            _num(r["macs"]),
            _num(r["neuron_updates"]),
            _num(r["dendritic_updates"]),
            fmt_bytes(r["state_bytes"]),
        ]
        for r in run["layers"]
        if r["op"] not in ("input", "add")
    ]
    return table(
        f"layers-{i}",
        [
            "layer",
            "op",
            "input",
            "spikes",
            "firing rate",
            "synops",
            "MACs",
            "neuron updates",
            "dendritic updates",
            "state",
        ],
        rows,
        3,
    )


def energy_table(run: dict, i: int) -> str:
    rows = []
    for e in run["energy"]:
        left = "".join(f"<li>{esc(x)}</li>" for x in e["left_out"])
        rows.append(
            [
                e["profile"] or "-",
                e["method"],
                fmt_si(e["energy_J"], "J"),
                e["kind"],
                raw(f"<span class='label'>{esc(e['label'])}</span>"),
                raw(f"<ul class='left-out'>{left}</ul>"),
            ]
        )
    return table(f"energy-{i}", ["profile", "method", "energy / inference", "kind", "label", "left out"], rows, 2)


def gpu_tables(run: dict, i: int) -> str:
    if not run["gpu"]:
        return "<p class='note'>No GPU baseline. " + esc(" ".join(run["notes"])) + "</p>"
    rows = [
        [
            b["name"],
            b["executor"],
            b["device"],
            f"{b.get('mode', '-')} (batch {b.get('batch')})",
            b["kind"],
            fmt_si(b.get("latency_s"), "s"),
            fmt_si(b.get("energy_J"), "J"),
            fmt_si(b.get("energy_dynamic_J"), "J"),
            fmt_bytes(b.get("peak_memory_bytes")),
            fmt_si(b.get("flops"), "FLOP"),
            raw(f"<span class='label'>{esc(b['label'])}</span>"),
        ]
        for b in run["gpu"]
    ]
    out = table(
        f"gpu-{i}",
        [
            "network",
            "executor",
            "device",
            "mode",
            "kind",
            "latency",
            "energy / inference",
            "dynamic energy",
            "peak memory",
            "FLOPs",
            "label",
        ],
        rows,
        4,
    )
    comp = [
        [
            c["profile"] or "-",
            c["method"],
            fmt_si(c["energy_J"], "J"),
            c["gpu_device"],
            f"{c['gpu_mode']} (batch {c['gpu_batch']})",
            c["gpu_kind"],
            fmt_si(c["gpu_energy_J"], "J"),
            fmt_ratio(c["gpu_over_estimate"]),
            fmt_ratio(c["gpu_floor_over_estimate"]),
        ]
        for c in run["comparison"]
    ]
    if comp:
        out += (
            "<h4>Neuromorphic / CMOS estimate vs GPU (same network; latency mode: batch 1, throughput mode: the "
            "GPU's energy per inference at batch 256)</h4>"
        )
        out += table(
            f"comparison-{i}",
            [
                "profile",
                "method",
                "estimate / inference",
                "GPU",
                "GPU mode",
                "GPU figure",
                "GPU energy / inference",
                "GPU / estimate",
                "GPU idle floor / estimate",
            ],
            comp,
            2,
        )
    return out


def run_part(run: dict, i: int) -> str:
    sm = run["state_memory"]
    acc = "-" if run["accuracy"] is None else f"{run['accuracy']:.4f}"
    parts = [
        f"<h2 id='run-{i}'>Run {i + 1}: {esc(run['source'])}</h2>",
        f"<p>Counts produced by <b>{esc(run['counts_by'])}</b>; attention {esc(run['attention'])}, "
        f"T = {esc(run['T'])}, {run['samples']} samples, accuracy {acc}. All figures per inference.</p>",
    ]
    if run.get("compare"):
        c = run["compare"]
        verdict = (
            "identical spikes and predictions"
            if c["identical"]
            else "DIFFERENT: first divergence " + esc(c["first_divergence"])
        )
        parts.append(
            f"<p class='note'>Compared with {esc(c['against'])} during the run: {verdict}"
            f"; prediction agreement {_pct(c['prediction_agreement'])}.</p>"
        )
    parts += [
        f"<details><summary>Per layer ({len(run['layers'])} layers)</summary>",
        layer_table(run, i),
        figure(
            f"layers-{i}",
            plots.layers_svg(run, f"layers-{i}"),
            "Spikes per inference and firing rate (spikes / neuron / time step) of every spiking layer.",
        ),
        "</details>",
        "<h3>Energy per inference</h3>",
        energy_table(run, i),
    ]
    if any(e["energy_J"] for e in run["energy"]):
        parts.append(
            figure(
                f"energy-{i}",
                plots.energy_svg(run, f"energy-{i}"),
                "Share of each priced counter in each estimate (docs/counting.md: priced classes); "
                "the total is written beside each bar.",
            )
        )
    parts += [
        "<h3>State memory</h3>",
        f"<p>{esc(sm['label'])}: attention state {fmt_bytes(sm['attention_state_bytes'])} "
        f"({esc(', '.join(sm['attention_state_kind']) or 'none')}), neuron state "
        f"{fmt_bytes(sm['neuron_state_bytes'])}, total state {fmt_bytes(sm['state_bytes'])}; weights "
        f"{fmt_bytes(sm['weight_bytes'])}.</p>",
        "<h3>GPU baseline</h3>",
        gpu_tables(run, i),
    ]
    if any(b.get("energy_J") for b in run["gpu"]):
        parts.append(
            figure(
                f"gpu-{i}",
                plots.gpu_svg(run, f"gpu-{i}"),
                "Energy per inference, log scale: op-count estimates (neuromorphic, CMOS) and the "
                "GPU baseline of the same network; colours: blue neuromorphic, green CMOS, orange "
                "GPU estimated, red GPU measured.",
            )
        )
    if run["notes"]:
        parts.append("<ul class='note'>" + "".join(f"<li>{esc(n)}</li>" for n in run["notes"]) + "</ul>")
    return "".join(parts)


def memory_part(memory: dict) -> str:
    parts = ["<h2 id='memory'>Memory: SSA vs LRF-Dyn</h2>"]
    rows = [
        [
            r["source"],
            r["executor"],
            r["attention"] or "-",
            fmt_bytes(r["attention_state_bytes"]),
            ", ".join(r["attention_state_kind"]) or "-",
            fmt_bytes(r["neuron_state_bytes"]),
            fmt_bytes(r["state_bytes"]),
            fmt_bytes(r["weight_bytes"]),
        ]
        for r in memory["from_runs"]
    ]
    parts += [
        "<h3>Counted by the executors</h3>",
        table(
            "memory-runs",
            ["run report", "executor", "attention", "attention state", "held as", "neuron state", "state", "weights"],
            rows,
            3,
        ),
    ]
    if memory["runs_ratio"]:
        rr = memory["runs_ratio"]
        parts.append(
            f"<p>{esc(rr['label'])}: attention state x{_num(rr['ratio']['attention_state_bytes'])}, "
            f"total state x{_num(rr['ratio']['state_bytes'])}.</p>"
        )
    an = memory["analytic"]
    if an:
        atts = [r["attention"] for r in an["results"]]
        base = atts[0]
        rows = [
            [
                r["figure"],
                *[fmt_bytes(r["bytes"][a]) for a in atts],
                *[_num(r[f"ratio_to_{base}"][a]) for a in atts[1:]],
                r["note"],
            ]
            for r in memory_rows(an)
        ]
        parts += [
            "<h3>Analytic (model config of the run)</h3>",
            f"<p class='label'>{esc(an['label'])}</p>",
            table("memory-analytic", ["figure", *atts, *[f"{a} / {base}" for a in atts[1:]], "what"], rows, 1),
            figure(
                "memory",
                plots.memory_svg(memory, "memory"),
                "Held state per category (analytic), per attention variant.",
            ),
        ]
    if memory["check"]:
        parts.append(
            "<p class='note'>Cross-check, attention state counted by the executor = analytic at Loihi "
            "precision: "
            + esc(
                "; ".join(
                    f"{c['source']} ({c['attention']}): {c['counted']} vs "
                    f"{c['analytic']} B {'ok' if c['agrees'] else 'DIFFERENT'}"
                    for c in memory["check"]
                )
            )
            + "</p>"
        )
    parts += [f"<p class='note'>{esc(n)}</p>" for n in memory["notes"]]
    return "".join(parts)


def profiles_part(s: dict) -> str:
    rows = [[p["name"], p["kind"], key, e["cite"]] for p in s["profiles"] for key, e in p["entries"].items()]
    return "<h2 id='profiles'>Hardware profiles used</h2>" + table(
        "profiles", ["profile", "kind", "entry", "value (confidence; source)"], rows, 4
    )


def render(summary: dict, title: str = "spikeport report") -> str:
    o = summary["options"]
    head = (
        f"<p class='note'>{esc(summary['generator'])}; schema {esc(summary['schema'])} "
        f"v{summary['schema_version']}; figures {esc(summary['per'])}; profiles {esc(', '.join(o['profiles']))}; "
        f"GPU profiles {esc(', '.join(o['gpus']) or '-')}; counting rule {esc(o['counting_rule'])}.</p>"
    )
    caveats = (
        "<h2 id='caveats'>Read before quoting a number</h2><ul class='caveats'>"
        + "".join(f"<li>{esc(c)}</li>" for c in summary["caveats"])
        + "</ul>"
    )
    body = [answer_part(summary), head, caveats, "<h2>Runs</h2>", overview(summary)]
    body += [run_part(r, i) for i, r in enumerate(summary["runs"])]
    body += [memory_part(summary["memory"]), profiles_part(summary)]
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<style>{STYLE}{EXTRA_STYLE}</style></head><body><h1>{esc(title)}</h1>{''.join(body)}</body></html>\n"
    )


def write_html(summary: dict, path: str | os.PathLike, title: str = "spikeport report") -> Path:
    """Render and write atomically (:func:`spikeport.atomic.atomic_write`)."""
    path = Path(path)
    with atomic_write(path) as tmp:
        tmp.write_text(render(summary, title))
    return path
