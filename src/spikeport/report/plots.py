"""The report's plots as inline SVG strings (matplotlib, Agg/SVG, no files, no network).

Each function takes part of a ``spikeport.report`` summary and returns ``<svg ...>...</svg>``; text stays
text (``svg.fonttype: none``) so the page is small and searchable, and each figure gets its own id salt
so that several inline SVGs never share an element id. matplotlib comes with the ``train`` extra: where it is not
installed (a deploy install) the page says so in each plot's place (``available``, ``MISSING``).
"""

from __future__ import annotations

import importlib.util
import io
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport import counters
from spikeport.ir import kernels
from spikeport.metrics.energy import CLASSES
from spikeport.report.format import fmt_si, short_name
from spikeport.report.model import Accounting, MemorySection, ModelSummary, RunSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# one colour per priced class (metrics/energy.py: the value-kind classes, then each counter priced on its own), the
# same in every run's plot
ENERGY_CLASSES = CLASSES
COLORS = {
    "neuromorphic": "#1f77b4",
    "cmos": "#2ca02c",
    "gpu estimated": "#ff7f0e",
    "gpu measured": "#d62728",
    "measured": "#9467bd",
}
MISSING = "plot left out: matplotlib is not installed here; pip install 'spikeport[train]' adds it"


def available() -> bool:
    """Whether matplotlib can be found here (looked up, not imported)."""
    return importlib.util.find_spec("matplotlib") is not None


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
    rows = [r for r in run.layers if kernels.fires(r.op)]  # the ops whose record says their output is spikes
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
    counters = [c for c in ENERGY_CLASSES if c in seen] + sorted(seen - set(ENERGY_CLASSES))
    fig, ax = _figure(8.0, 0.55 * len(ests) + 1.6)
    a = ax[0][0]
    from matplotlib import colormaps

    cmap, labelled = colormaps["tab10"], set()
    for i, e in enumerate(ests):
        left = 0.0
        for j, c in enumerate(counters):
            share = e["by_counter"].get(c, 0.0) / e["energy_J"] * 100
            if share:
                k = ENERGY_CLASSES.index(c) if c in ENERGY_CLASSES else len(ENERGY_CLASSES) + j
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
    """Energy per inference of each model in the report's accounting, in two panels. Above, on a linear scale so
    that each part reads as its share: every estimate and measured figure on the chip (and CMOS), its dynamic and
    static parts stacked, the static share written. Below, on a log scale, totals only (no parts to misread): the
    chip beside the GPU in each mode, an estimate's bounds (idle power x time .. TDP x time) as a line. A zero is
    drawn as a zero: no bar, '0 J' written."""
    chip_bars: list[tuple[str, float, float | None, str]] = []  # label, dynamic J, static J (stacked), colour key
    totals: list[tuple[str, float, str, tuple[float, float] | None]] = []  # label, J, colour key, bounds
    for m in models:
        for e in m.energy:
            kind = "measured" if e.kind == "measured" else ("neuromorphic" if e.static_J is not None else "cmos")
            if accounting is not None and e.profile == accounting.chip and e.kind == "estimated":
                kind = "neuromorphic"
            static = e.static_J if e.static_included else None
            label = f"{m.name}: {e.profile} ({e.kind})"
            chip_bars.append((label, e.energy_J - (static or 0.0), static, kind))
            totals.append((label, e.energy_J, kind, None))
        for g in m.gpu:
            if g.energy_J is not None:
                span = (g.low_J, g.high_J) if g.low_J and g.high_J else None
                label = f"{m.name}: GPU {g.device} {g.mode} mode, batch {g.batch} ({g.kind})"
                totals.append((label, g.energy_J, f"gpu {g.kind}", span))
    fig, ax = _figure(8.5, 0.42 * (len(chip_bars) + len(totals)) + 3.2, 2)
    _stacked(ax[0][0], chip_bars)
    _log_totals(ax[1][0], totals)
    included = accounting is not None and accounting.static_included
    ax[0][0].set_title(
        "on the chip: dynamic and static parts, linear scale (static power "
        + ("included" if included else "on neither side")
        + ")",
        fontsize=10,
    )
    ax[1][0].set_title("the models against the GPU: totals, log scale", fontsize=10)
    fig.tight_layout(h_pad=2.0)
    return _svg(fig, salt)


def _stacked(a: Any, bars: list[tuple[str, float, float | None, str]]) -> None:
    """Horizontal bars, dynamic then static stacked on a linear axis, the static share written."""
    ys = range(len(bars))
    top = max((d + (st or 0.0) for _, d, st, _ in bars), default=0.0) or 1.0
    for y, (_, dynamic, static, kind) in zip(ys, bars, strict=True):
        total = dynamic + (static or 0.0)
        if total <= 0:
            a.text(0, y, " 0 J", va="center", fontsize=8)
            continue
        a.barh(y, dynamic, color=COLORS.get(kind, "#777"))
        if static:
            a.barh(y, static, left=dynamic, color=COLORS.get(kind, "#777"), alpha=0.35, hatch="//", edgecolor="#333")
        share = f" (static {static / total:.0%})" if static else ""
        a.text(total + top * 0.01, y, fmt_si(total, "J", 3) + share, va="center", fontsize=8)
    a.set_xlim(0, top * 1.45)
    a.set_yticks(list(ys))
    a.set_yticklabels([label for label, *_ in bars], fontsize=8)
    a.invert_yaxis()
    a.set_xlabel("energy per inference (J, linear scale; hatched: static power x time)")


def _log_totals(a: Any, bars: list[tuple[str, float, str, tuple[float, float] | None]]) -> None:
    """Horizontal bars of totals on a log axis (no parts), an estimate's bounds as a line; a zero written, not drawn."""
    ys = list(range(len(bars)))
    values = [v for _, v, _, _ in bars if v > 0] + [x for *_, span in bars if span for x in span if x > 0]
    low = min(values, default=1e-9) / 3
    for y, (_, v, kind, span) in zip(ys, bars, strict=True):
        if v <= 0:
            a.text(low, y, " 0 J (not drawn on a log scale)", va="center", fontsize=8)
            continue
        a.barh(y, v - low, left=low, color=COLORS.get(kind, "#777"))  # from the axis' left end to the value
        if span:
            a.plot(span, [y, y], color="#333", linewidth=1.2)
        a.text((span[1] if span else v) * 1.2, y, fmt_si(v, "J", 3), va="center", fontsize=8)
    a.set_xscale("log")
    a.set_xlim(low, max(values, default=1.0) * 40)
    a.set_yticks(ys)
    a.set_yticklabels([label for label, *_ in bars], fontsize=8)
    a.invert_yaxis()
    a.set_xlabel("energy per inference (J, log scale; a line: an estimate's idle .. TDP bounds)")


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
            vals = [float(breakdown["totals"][c]) for c, _ in cats]
            ys = np.arange(len(cats)) + i * width
            bars = a.barh(ys, [v if v > 0 else np.nan for v in vals], height=width, label=res.attention)
            for y, v in zip(ys, vals, strict=True):  # a zero is written, never drawn as a bar down to 10^0
                if v <= 0:
                    a.text(1, y, " 0 B", va="center", fontsize=7, color=bars.patches[0].get_facecolor())
        a.set_xscale("log")
        a.set_yticks(np.arange(len(cats)) + width * (len(results) - 1) / 2)
        a.set_yticklabels([c for _, c in cats], fontsize=8)
        a.invert_yaxis()
        a.set_title(f"held state, {title}", fontsize=10)
        a.set_xlabel("bytes (log scale)")
        a.legend(fontsize=8)
    fig.tight_layout(h_pad=2.0)
    return _svg(fig, salt)
