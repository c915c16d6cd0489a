"""The report's plots as inline SVG strings (matplotlib, Agg/SVG, no files, no network).

Each function takes part of a ``spikeport.report`` summary and returns ``<svg ...>...</svg>``; text stays
text (``svg.fonttype: none``) so the page is small and searchable, and each figure gets its own id salt
so that several inline SVGs never share an element id.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport import counters
from spikeport.metrics.energy import CLASSES
from spikeport.report.format import fmt_si, short_name
from spikeport.report.model import Accounting, MemorySection, ModelSummary, RunSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# one colour per priced class (metrics/energy.py: the value-kind classes, then each counter priced on its own), the
# same in every run's plot
COUNTERS = CLASSES
COLORS = {
    "neuromorphic": "#1f77b4",
    "cmos": "#2ca02c",
    "gpu estimated": "#ff7f0e",
    "gpu measured": "#d62728",
    "measured": "#9467bd",
}


def _svg(fig: Figure, salt: str) -> str:
    import matplotlib
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: inline in HTML


def _figure(width: float, height: float, rows: int = 1) -> tuple[Figure, Any]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt.subplots(rows, 1, figsize=(width, height), squeeze=False)


def layers_svg(run: RunSummary, salt: str) -> str:
    """Spikes per inference and firing rate of every spiking layer (LIF, maxpool); below, for each diagnostic counter
    (``Column.NONZERO``) the run counted, its count per inference in the layers that counted it."""
    rows = [r for r in run.layers if r.op in ("lif", "maxpool")]
    diagnostics = [c for c in counters.columns(run.totals) if c.column is counters.Column.NONZERO]
    fig, ax = _figure(max(6.0, 0.22 * len(rows) + 2), 5.2 + 2.2 * len(diagnostics), 2 + len(diagnostics))
    for a, c in zip(ax[2:], diagnostics, strict=True):
        counted = [r for r in run.layers if r.counts.get(c.name)]
        a[0].bar(range(len(counted)), [r.counts[c.name] for r in counted], color="#d62728")
        a[0].set_ylabel(f"{c.unit} / inference", fontsize=8)
        a[0].set_title(f"{c.label}: {c.doc}", fontsize=8)
        a[0].set_xticks(list(range(len(counted))))
        a[0].set_xticklabels([short_name(r.name) for r in counted], rotation=90, fontsize=7)
    x = range(len(rows))
    ax[0][0].bar(x, [r.spikes for r in rows], color=COLORS["neuromorphic"])
    ax[0][0].set_ylabel("spikes / inference")
    ax[0][0].set_title(f"{run.source}: counts by {run.executor}", fontsize=10)
    rates = [r.firing_rate if r.firing_rate is not None else 0.0 for r in rows]
    ax[1][0].bar(x, rates, color="#444")
    ax[1][0].set_ylabel("firing rate (spikes / neuron / step)")
    ax[1][0].set_xticks(list(x))
    ax[1][0].set_xticklabels([short_name(r.name) for r in rows], rotation=90, fontsize=7)
    ax[0][0].set_xticks([])
    return _svg(fig, salt)


def energy_svg(run: RunSummary, salt: str) -> str:
    """Per estimate: the share of each priced counter (stacked to 100 %), the total written beside it."""
    ests = [e for e in run.energy if e["energy_J"]]
    seen = {c for e in ests for c in e["by_counter"]}
    counters = [c for c in COUNTERS if c in seen] + sorted(seen - set(COUNTERS))
    fig, ax = _figure(8.0, 0.55 * len(ests) + 1.6)
    a = ax[0][0]
    from matplotlib import colormaps

    cmap, labelled = colormaps["tab10"], set()
    for i, e in enumerate(ests):
        left = 0.0
        for j, c in enumerate(counters):
            share = e["by_counter"].get(c, 0.0) / e["energy_J"] * 100
            if share:
                k = COUNTERS.index(c) if c in COUNTERS else len(COUNTERS) + j
                a.barh(i, share, left=left, color=cmap(k % 10), label=None if c in labelled else c)
                labelled.add(c)
            left += share
        a.text(101, i, fmt_si(e["energy_J"], "J", 3), va="center", fontsize=8)
    a.set_yticks(range(len(ests)))
    a.set_yticklabels([f"{e['profile'] or e['method']} / {e['method']}" for e in ests], fontsize=8)
    a.set_xlim(0, 118)
    a.set_xlabel("share of the estimate (%)")
    a.set_title(f"energy per inference by counter ({run.executor} counts)", fontsize=10)
    a.invert_yaxis()
    a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=4, frameon=False)
    return _svg(fig, salt)


def models_svg(models: list[ModelSummary], accounting: Accounting | None, salt: str) -> str:
    """Energy per inference of each model, log scale, in the report's accounting: its estimates (the chip's static
    part hatched), any measured figure, and the GPU in each mode (an estimate's range, idle .. TDP x time, a line)."""
    bars: list[
        tuple[str, float, str, float | None, tuple[float, float] | None]
    ] = []  # label, J, colour, hatched, range
    gaps: list[int] = []
    for m in models:
        if bars:
            gaps.append(len(bars))
        for e in m.energy:
            kind = "measured" if e.kind == "measured" else ("neuromorphic" if e.static_J is not None else "cmos")
            if accounting is not None and e.profile == accounting.chip and e.kind == "estimated":
                kind = "neuromorphic"
            hatched = e.static_J if e.static_included else None
            bars.append((f"{m.name}: {e.profile} ({e.kind})", e.energy_J, kind, hatched, None))
        for g in m.gpu:
            if g.energy_J:
                span = (g.low_J, g.high_J) if g.low_J and g.high_J else None
                label = f"{m.name}: GPU {g.device} {g.mode} mode, batch {g.batch} ({g.kind})"
                bars.append((label, g.energy_J, f"gpu {g.kind}", None, span))
    ys = [i + sum(1 for g in gaps if g <= i) * 0.6 for i in range(len(bars))]  # a gap between models
    fig, ax = _figure(8.5, 0.42 * len(bars) + 0.3 * len(gaps) + 1.4)
    a = ax[0][0]
    a.barh(ys, [v for _, v, _, _, _ in bars], color=[COLORS.get(k, "#777") for _, _, k, _, _ in bars])
    for y, (_, v, _, hatched, span) in zip(ys, bars, strict=True):
        if hatched:
            a.barh(y, hatched, left=v - hatched, color="white", alpha=0.45, hatch="//", edgecolor="#333", linewidth=0)
        if span:
            a.plot(span, [y, y], color="#333", linewidth=1.2)
        a.text((span[1] if span else v) * 1.2, y, fmt_si(v, "J", 3), va="center", fontsize=8)
    values = [v for _, v, _, _, _ in bars] + [x for *_, span in bars if span for x in span]
    a.set_xscale("log")
    a.set_xlim(min(values) / 3, max(values) * 40)
    a.set_yticks(ys)
    a.set_yticklabels([n for n, _, _, _, _ in bars], fontsize=8)
    a.invert_yaxis()
    a.set_xlabel("energy per inference (J, log scale)")
    included = accounting is not None and accounting.static_included
    a.set_title(
        "the models: chip, CMOS and GPU, static power " + ("included" if included else "on neither side"), fontsize=10
    )
    return _svg(fig, salt)


def memory_svg(memory: MemorySection, salt: str) -> str:
    """Held state per category for each attention variant, at Loihi precision and in fp32 (log scale)."""
    assert memory.analytic is not None
    results = memory.analytic.results
    cats = [
        ("weights", "weights"),
        ("neuron_state", "LIF state"),
        ("attention_core", "attention core (K^T V / X)"),
        ("attention_buffers", "attention buffers (Q,K,V / LRF window)"),
    ]
    fig, ax = _figure(8.0, 6.0, 2)
    width = 0.8 / len(results)
    for k, (prec, title) in enumerate(
        (("loihi", "Loihi precision (8-bit weights, 24-bit state)"), ("fp32", "torch fp32"))
    ):
        a = ax[k][0]
        for i, res in enumerate(results):
            breakdown = res.analytic_loihi if prec == "loihi" else res.analytic
            vals = [max(breakdown["totals"][c], 1) for c, _ in cats]
            a.barh(np.arange(len(cats)) + i * width, vals, height=width, label=res.attention)
        a.set_xscale("log")
        a.set_yticks(np.arange(len(cats)) + width * (len(results) - 1) / 2)
        a.set_yticklabels([c for _, c in cats], fontsize=8)
        a.invert_yaxis()
        a.set_title(f"held state, {title}", fontsize=10)
        a.set_xlabel("bytes (log scale)")
        a.legend(fontsize=8)
    fig.tight_layout(h_pad=2.0)
    return _svg(fig, salt)
