"""Figures of ``spikeport analyze``: cosine histograms per layer, head-correlation heatmaps per block,
attention mass by Manhattan distance and the locality / entropy bars. Input: the analysis.json dict."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from spikeport.analysis.io import save_figure  # noqa: E402

KIND_STYLE = {
    "attention": ("C0", "attention maps"),
    "effective": ("C3", "effective (attention + local)"),
    "local_only": ("C2", "local term only"),
}


def _grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(n, max_cols)
    return (n + cols - 1) // cols, cols


def plot_cosine(result: dict, path: Path, title: str) -> Path:
    reps = result["representations"]
    rows, cols = _grid(len(reps))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.5 * rows), squeeze=False)
    for ax in axes.flat[len(reps) :]:
        ax.axis("off")
    for ax, rep in zip(axes.flat, reps, strict=False):
        c = rep["cosine"]
        edges = np.asarray(c["bin_edges"])
        hist = np.asarray(c["hist"], dtype=float)
        dens = hist / max(hist.sum(), 1) / np.diff(edges)
        ax.bar(edges[:-1], dens, width=np.diff(edges), align="edge", color="C0")
        mean = c["mean"]
        ax.set_title(
            f"layer {rep['layer']} ({rep['name']})\nmean {mean:.3f}"
            if mean is not None
            else f"layer {rep['layer']}: no pairs",
            fontsize=8,
        )
        ax.set_xlim(-1, 1)
        ax.set_xlabel("cosine similarity", fontsize=7)
    fig.suptitle(f"pairwise token cosine similarity - {title}", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_heads(result: dict, path: Path, title: str) -> Path:
    blocks = result["blocks"]
    rows, cols = _grid(len(blocks))
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.9 * rows), squeeze=False)
    for ax in axes.flat[len(blocks) :]:
        ax.axis("off")
    im = None
    for ax, blk in zip(axes.flat, blocks, strict=False):
        hc = blk["head_correlation"]
        mat = np.array([[np.nan if v is None else v for v in row] for row in hc["matrix"]], dtype=float)
        im = ax.imshow(mat, vmin=-1, vmax=1, cmap="RdBu_r")
        mean = hc["mean_offdiag"]
        ax.set_title(
            f"block {blk['block']}: mean off-diag {mean:.2f}" if mean is not None else f"block {blk['block']}",
            fontsize=8,
        )
        ax.set_xticks(range(len(mat)))
        ax.set_yticks(range(len(mat)))
        ax.tick_params(labelsize=6)
    if im is not None:
        bar = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8)
        bar.set_label("Pearson correlation of two heads' attention maps", fontsize=7)
    fig.suptitle(f"attention-head correlation - {title}", fontsize=9)
    return save_figure(fig, path)


def plot_locality(result: dict, path: Path, title: str) -> Path:
    overall = result["locality_overall"]
    blocks = result["blocks"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 3.8))
    any_kind = next(iter(overall.values()))
    radius = any_kind["radius"]
    ax1.plot(any_kind["uniform_mass_by_distance"], "k--", lw=1, label="uniform (chance)")
    for kind, stats in overall.items():
        color, label = KIND_STYLE.get(kind, ("C7", kind))
        ax1.plot(
            stats["mass_by_distance"],
            color=color,
            lw=2,
            label=f"{label}: {100 * stats['share_within_radius']:.1f}% within {radius}",
        )
        for blk in blocks:
            ax1.plot(blk["locality"][kind]["mass_by_distance"], color=color, lw=0.6, alpha=0.5)
    ax1.axvline(radius + 0.5, color="0.6", lw=0.8)
    ax1.set_xlabel("Manhattan distance query -> key (token grid)")
    ax1.set_ylabel("attention mass")
    ax1.legend(fontsize=7)
    ax1.set_title("mass by distance (thick: all blocks, thin: per block)", fontsize=8)
    kinds = list(overall)
    x = np.arange(len(blocks) + 1)
    width = 0.8 / len(kinds)
    for k, kind in enumerate(kinds):
        share = [b["locality"][kind]["share_within_radius"] for b in blocks] + [overall[kind]["share_within_radius"]]
        ent = [b["locality"][kind]["normalised_entropy"] for b in blocks] + [overall[kind]["normalised_entropy"]]
        color, label = KIND_STYLE.get(kind, ("C7", kind))
        ax2.bar(
            x + k * width,
            np.nan_to_num(np.asarray(share, dtype=float)),
            width,
            color=color,
            label=f"{label}: share <= {radius}",
        )
        ax2.plot(
            x + k * width,
            np.asarray(ent, dtype=float),
            "o",
            color="k",
            ms=4,
            label="normalised entropy" if k == 0 else None,
        )
    ax2.axhline(any_kind["uniform_share_within_radius"], color="k", ls="--", lw=1, label="uniform share")
    ax2.set_xticks(x + 0.4 - width / 2, [f"block {b['block']}" for b in blocks] + ["all"], fontsize=7)
    ax2.set_ylim(0, 1.05)
    ax2.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not over them
    ax2.set_title("share within the radius (bars) and entropy / log N (dots)", fontsize=8)
    fig.suptitle(f"attention locality - {title}", fontsize=9)
    return save_figure(fig, path)


def write_all(result: dict, out: Path, title: str) -> list[str]:
    out = Path(out)
    plot_cosine(result, out / "cosine.png", title)
    plot_heads(result, out / "heads.png", title)
    plot_locality(result, out / "locality.png", title)
    return ["cosine.png", "heads.png", "locality.png"]
