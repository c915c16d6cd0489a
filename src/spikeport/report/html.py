"""A report summary (``report.model.ReportSummary``) as one self-contained HTML page: the tables of
``report.tables`` (the terminal prints the same ones), inline SVG plots, no scripts, no external resources (it
opens offline and can be mailed as one file). Written atomically.

The first screen holds the headline (energy per model in one accounting, its ratios, the chip footprint), the
answer table per model and the memory story per model; the plot comparing the models follows. Each run's detail is
folded (``<details>``), and the terms the figures are named by close the page (``report.glossary``). Every plot is
a ``<figure class="plot" data-plot="...">`` holding one ``<svg>``; every table of numbers carries
``data-table="..."``; the tests count both in a headless browser's DOM.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path

from spikeport.atomic import write_text
from spikeport.page_style import STYLE
from spikeport.report import plots, tables as T
from spikeport.report.format import fmt_accuracy, fmt_bytes, fmt_count, fmt_pct, plural
from spikeport.report.glossary import TERMS
from spikeport.report.model import ReportSummary, RunSummary

EXTRA_STYLE = """figure.plot{margin:1em 0}figure.plot svg{max-width:100%;height:auto}
.label{font-size:12px;color:#335}.caveats li{margin:.3em 0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em}
td.l,th.l{text-align:left}ul.cell{margin:0;padding-left:1.2em;font-size:12px;color:#555}
h1{font-size:1.7em;margin:0 0 .3em}h2#answer{margin:.3em 0}p.headline{font-size:15px;margin:.25em 0}
table[data-table=answer] td:first-child{white-space:nowrap}table[data-table=answer] td{padding:2px 8px}
ul.notes{font-size:12px;color:#555;margin:.2em 0 1em 0}details>summary{cursor:pointer;margin:.4em 0}
dt{font-weight:bold}dd{margin:0 0 .5em 1.2em}"""


def esc(v: object) -> str:
    return html.escape("-" if v is None else str(v))


def render_table(t: T.Table, heading: str | None = "h3") -> str:
    """A shared table on the page: its title as a heading, the cells, its notes as a list under it."""

    def cell(i: int, v: T.Cell, tag: str) -> str:
        cls = " class='l'" if i < t.left or i in t.text or isinstance(v, list) else ""
        body = (
            "<ul class='cell'>" + "".join(f"<li>{esc(x)}</li>" for x in v) + "</ul>" if isinstance(v, list) else esc(v)
        )
        return f"<{tag}{cls}>{body}</{tag}>"

    head = "".join(cell(i, c, "th") for i, c in enumerate(t.columns))
    body = "".join("<tr>" + "".join(cell(i, v, "td") for i, v in enumerate(r)) + "</tr>" for r in t.rows)
    title = f"<{heading}>{esc(t.title[:1].upper() + t.title[1:])}</{heading}>" if heading else ""
    notes = "<ul class='notes'>" + "".join(f"<li>{esc(n)}</li>" for n in t.notes) + "</ul>" if t.notes else ""
    return (
        f"{title}<table data-table='{esc(t.name)}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{notes}"
    )


def figure(name: str, svg: Callable[[], str], caption: str) -> str:
    """The plot ``svg`` makes, captioned; without matplotlib, a note in its place (``plots.MISSING``)."""
    if not plots.available():
        return f"<p class='note' data-plot-missing='{esc(name)}'>{esc(name)} {esc(plots.MISSING)}</p>"
    return (
        f"<figure class='plot' data-plot='{esc(name)}'>{svg()}"
        f"<figcaption class='note'>{esc(caption)}</figcaption></figure>"
    )


def first_screen(s: ReportSummary) -> str:
    """The headline, the answer table per model, the memory story per model and the plot comparing the models."""
    head = "".join(f"<p class='headline'>{esc(line)}</p>" for line in s.headline)
    parts = [
        "<h2 id='answer'>The answer, per model and per inference</h2>",
        head,
        render_table(T.answer(s), None),
        render_table(T.memory_story(s), "h3"),
    ]
    if any(m.energy or m.gpu for m in s.models):
        parts.append(
            figure(
                "models",
                lambda: plots.models_svg(s.models, s.accounting, "models"),
                "Energy per inference of each model in the report's accounting. Above, linear scale: the chip "
                "estimate (blue; its static part hatched, its share written), CMOS arithmetic (green), measured "
                "figures (purple). Below, log scale, totals only: the chip beside the GPU in throughput and latency "
                "mode (orange: estimated by the utilisation power model, a line from idle power x time to TDP x "
                "time; red: measured).",
            )
        )
    return "".join(parts)


def overview(s: ReportSummary) -> str:
    shown = T.shown_counters(s.runs)
    model_of = {source: m.name for m in s.models for source in m.runs}
    rows: list[list[T.Cell]] = [
        [
            r.source,
            model_of.get(r.source, "-"),
            r.counts_by,
            fmt_count(r.T),
            fmt_count(r.samples),
            fmt_accuracy(r.accuracy),
            *T.counter_cells(r.totals, r.totals["firing_rate"], shown),
            fmt_bytes(r.state_memory.state_bytes),
        ]
        for r in s.runs
    ]
    columns = [
        "run report",
        "model",
        "counts produced by (executor)",
        "T",
        "samples",
        "accuracy",
        *T.counter_headings(shown, "firing rate"),
        "model state",
    ]
    return render_table(T.Table("runs", "runs", columns, rows, left=3), None)


def run_part(s: ReportSummary, run: RunSummary, i: int) -> str:
    """One run, folded: what it is to its model, its per-layer counts, every estimate, the GPU and CPU tables, its
    model state and notes. The plots of the runs whose counts price a model (the others' are the same network's)."""
    prices = any(m.counts_from == run.source for m in s.models)
    parts = [
        f"<details id='run-{i}'><summary>Run {i + 1}: {esc(run.source)} ({esc(run.executor)}, "
        f"{esc(plural(run.samples, 'sample'))}): {esc(T.run_role(s, run))}</summary>",
        f"<p>Counts produced by <b>{esc(run.counts_by)}</b>; attention {esc(run.attention)}, "
        f"T = {esc(run.T)}, {esc(plural(run.samples, 'sample'))}, accuracy {esc(fmt_accuracy(run.accuracy))}. "
        "All figures per inference, averaged over this run's samples.</p>",
    ]
    if run.compare:
        c = run.compare
        verdict = (
            "identical spikes and predictions"
            if c["identical"]
            else "DIFFERENT: first divergence " + esc(c["first_divergence"])
        )
        parts.append(
            f"<p class='note'>Compared with {esc(c['against'])} during the run: {verdict}"
            f"; prediction agreement {esc(fmt_pct(c['prediction_agreement']))}.</p>"
        )
    parts += [
        f"<h3>Per layer ({len(run.layers)} layers)</h3>",
        render_table(T.layers(run, i), None),
    ]
    if prices:
        parts.append(
            figure(
                f"layers-{i}",
                lambda: plots.layers_svg(run, f"layers-{i}"),
                "Spikes per inference and firing rate (spikes / neuron / time step) of every spiking layer.",
            )
        )
    parts.append(render_table(T.energy(run, i)))
    if prices and any(e["energy_J"] for e in run.energy):
        parts.append(
            figure(
                f"energy-{i}",
                lambda: plots.energy_svg(run, f"energy-{i}"),
                "Share of each priced counter in each estimate (docs/counting.md: priced classes); "
                "the total is written beside each bar.",
            )
        )
    parts.append(f"<h3>Model state</h3><p>{esc(T.model_state_line(run))}.</p>")
    gpu = T.gpu(run, i)
    parts.append(render_table(gpu) if gpu else "<h3>GPU baseline</h3><p class='note'>No GPU baseline.</p>")
    comparison = T.comparison(run, i)
    if comparison:
        parts.append(render_table(comparison, "h4"))
    if run.notes:
        parts.append("<ul class='note'>" + "".join(f"<li>{esc(n)}</li>" for n in run.notes) + "</ul>")
    parts.append("</details>")
    return "".join(parts)


def terms_part() -> str:
    """The terms the page's figures are named by (report.glossary; docs/glossary.md says the same)."""
    items = "".join(f"<dt>{esc(term)}</dt><dd>{esc(text)}</dd>" for term, text in TERMS.items())
    return (
        f"<h2 id='terms'>Terms</h2><details><summary>What each figure's name means</summary><dl>{items}</dl></details>"
    )


def memory_part(s: ReportSummary) -> str:
    memory = s.memory
    parts = ["<h2 id='memory'>Memory: SSA vs LRF-Dyn</h2>"]
    claim = T.claim(s)
    if claim is not None:
        parts.append(render_table(claim))
    parts.append(render_table(T.counted_state(s)))
    analytic = T.analytic(s)
    if analytic is not None:
        parts += [
            render_table(analytic),
            figure(
                "memory",
                lambda: plots.memory_svg(memory, "memory"),
                "Held state per category (analytic), per attention variant: on the chip (Loihi precision, "
                "chip-native lowering) and in torch fp32.",
            ),
        ]
    return "".join(parts)


def profiles_part(s: ReportSummary) -> str:
    rows: list[list[T.Cell]] = [
        [p["name"], p["kind"], key, e["cite"]] for p in s.profiles for key, e in p["entries"].items()
    ]
    table = T.Table(
        "profiles", "hardware profiles used", ["profile", "kind", "entry", "value (confidence; source)"], rows, left=4
    )
    return "<h2 id='profiles'>Hardware profiles used</h2>" + render_table(table, None)


def render(summary: ReportSummary, title: str = "spikeport report") -> str:
    o = summary.options
    head = (
        f"<p class='note'>{esc(summary.generator)}; schema {esc(summary.schema)} "
        f"v{summary.schema_version}; figures {esc(summary.per)}; profiles {esc(', '.join(o['profiles']))}; "
        f"GPU profiles {esc(', '.join(o['gpus']) or '-')}; counting rule {esc(o['counting_rule'])}.</p>"
    )
    caveats = (
        "<h2 id='caveats'>Read before quoting a number</h2><ul class='caveats'>"
        + "".join(f"<li>{esc(c)}</li>" for c in summary.caveats)
        + "</ul>"
    )
    body = [first_screen(summary), head, caveats, "<h2>Runs</h2>", overview(summary)]
    body += [run_part(summary, r, i) for i, r in enumerate(summary.runs)]
    body += [memory_part(summary), profiles_part(summary), terms_part()]
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<style>{STYLE}{EXTRA_STYLE}</style></head><body><h1>{esc(title)}</h1>{''.join(body)}</body></html>\n"
    )


def write_html(summary: ReportSummary, path: str | os.PathLike[str], title: str = "spikeport report") -> Path:
    """Render and write atomically (:func:`spikeport.atomic.write_text`)."""
    return write_text(path, render(summary, title))
