"""Figures of the particle simulations: snapshots on the circle / sphere with dashed trajectories (as in
the seed papers' figures), the animation, cluster counts over time, and the beta x tau sweep grid.

Every figure carries the dynamics, parameters and integration method that produced it in its title.
matplotlib runs headless (Agg); outputs are written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from mpl_toolkits.mplot3d import Axes3D  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Line3DCollection  # noqa: E402

from spikeport.analysis.clusters import cluster_labels  # noqa: E402
from spikeport.analysis.io import save_figure  # noqa: E402
from spikeport.analysis.particles import ParticleRun  # noqa: E402
from spikeport.atomic import atomic_write  # noqa: E402

DOT, TRAIL, LEADER = "#1f5fbf", "#7fa7e0", "#d62728"


def _axes(fig: Figure, d: int, *grid: int) -> Axes:
    return fig.add_subplot(*grid, projection="3d") if d == 3 else fig.add_subplot(*grid)


def draw_state(
    ax: Axes,
    x: np.ndarray,
    idx: int,
    t: float,
    highlight_first: bool = False,
    title: str | None = None,
    trail: bool = True,
) -> None:
    """Particles at step ``idx`` of the trajectory ``x [S, n, d]``, their paths so far dashed."""
    d = x.shape[-1]
    ax.clear()
    if d > 3:  # no faithful picture: the cosine-similarity (Gram) matrix, tokens sorted by final cluster
        order = np.argsort(cluster_labels(x[-1])[1], kind="stable")
        u = x[idx, order]
        ax.imshow(u @ u.T, vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set_xticks([])
        ax.set_yticks([])
    elif d == 2:
        th = np.linspace(0, 2 * np.pi, 200)
        ax.plot(np.cos(th), np.sin(th), color="0.8", lw=0.8)
        if trail and idx > 0:
            ax.add_collection(
                LineCollection(
                    list(np.swapaxes(x[: idx + 1], 0, 1)), colors=TRAIL, linewidths=0.6, linestyles="--", alpha=0.7
                )
            )
        ax.scatter(x[idx, :, 0], x[idx, :, 1], s=12, color=DOT, zorder=3)
        ax.set_aspect("equal")
        ax.set_xlim(-1.15, 1.15)
        ax.set_ylim(-1.15, 1.15)
        ax.axis("off")
    else:
        assert isinstance(ax, Axes3D)  # d == 3 is drawn on a 3-D projection (_axes)
        ax.computed_zorder = False  # draw in call order: sphere, trails, particles on top
        u, v = np.mgrid[0 : 2 * np.pi : 24j, 0 : np.pi : 12j]
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.4)
        if trail and idx > 0:  # one collection, not n line artists: the GIF renders ~10x faster
            ax.add_collection3d(
                Line3DCollection(
                    np.swapaxes(x[: idx + 1], 0, 1), colors=TRAIL, linewidths=0.6, linestyles="--", alpha=0.7
                )
            )
        ax.scatter(x[idx, :, 0], x[idx, :, 1], x[idx, :, 2], s=10, color=DOT, depthshade=False, zorder=3)
        ax.set_box_aspect((1, 1, 1))
        ax.view_init(elev=20, azim=35)
        ax.set_axis_off()
    if highlight_first and d <= 3:
        cols = [x[: idx + 1, 0, k] for k in range(d)]
        ax.plot(*cols, "-", color=LEADER, lw=1.4)
        tip = [c[-1:] for c in cols]
        if isinstance(ax, Axes3D):  # scatter(xs, ys, zs, ...)
            ax.scatter(*tip, s=40, color=LEADER, zorder=4)
        else:
            ax.scatter(tip[0], tip[1], s=40, color=LEADER, zorder=4)
    ax.set_title(title if title is not None else f"t = {t:g}", fontsize=9)


def plot_snapshots(run: ParticleRun, times: list[float], path: str | Path, highlight_first: bool | None = None) -> Path:
    """One panel per requested time (nearest recorded step)."""
    cfg = run.config
    lead = cfg.dynamics == "causal" if highlight_first is None else highlight_first
    fig = plt.figure(figsize=(3.2 * len(times), 3.6))
    for k, t in enumerate(times):
        idx = run.index_at(t)
        count = cluster_labels(run.x[idx])[0]
        ax = _axes(fig, cfg.d, 1, len(times), k + 1)
        draw_state(
            ax, run.x, idx, run.t[idx], lead, title=f"t = {run.t[idx]:g}   ({count} cluster{'s' * (count != 1)})"
        )
    fig.suptitle(cfg.label() + ("   [red: token 0]" if lead else ""), fontsize=8)
    return save_figure(fig, path)


def write_animation(run: ParticleRun, path: str | Path, max_frames: int = 60, fps: int = 10) -> Path:
    """GIF of the whole trajectory (at most ``max_frames`` evenly spaced steps) via matplotlib's PillowWriter."""
    from matplotlib.animation import FuncAnimation, PillowWriter

    cfg = run.config
    frames = np.unique(np.linspace(0, len(run.t) - 1, min(max_frames, len(run.t))).round().astype(int))
    fig = plt.figure(figsize=(4.2, 4.4))
    ax = _axes(fig, cfg.d, 1, 1, 1)
    fig.suptitle(cfg.label(), fontsize=6)
    lead = cfg.dynamics == "causal"

    def update(idx: int) -> list[Artist]:
        draw_state(ax, run.x, idx, run.t[idx], lead, trail=True)
        return []

    anim = FuncAnimation(fig, update, frames=frames, blit=False)
    with atomic_write(path) as tmp:
        anim.save(tmp, writer=PillowWriter(fps=fps))
    plt.close(fig)
    return Path(path)


def plot_cluster_counts(curves: list[tuple[str, dict]], path: str | Path, title: str = "") -> Path:
    """Cluster count (left, log scale) and largest pairwise distance (right) over time, one line per run."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, stats in curves:
        ax1.plot(stats["times"], stats["cluster_counts"], label=label)
        ax2.plot(stats["times"], stats["max_pairwise_distance"], label=label)
    ax1.set_yscale("log")
    ax1.set_xlabel("t")
    ax1.set_ylabel("clusters")
    ax1.set_title(f"clusters ({curves[0][1]['rule']['link']})", fontsize=8)
    ax2.set_xlabel("t")
    ax2.set_ylabel("largest pairwise distance")
    ax2.set_ylim(-0.05, 2.05)
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)


def plot_sweep(
    runs: Mapping[tuple[float, float], ParticleRun], betas: list[float], taus: list[float], path: str | Path
) -> Path:
    """The beta x tau grid (seed 000 Sec. 6.4): final state of each run with dashed trajectories."""
    some = next(iter(runs.values())).config
    fig = plt.figure(figsize=(3.0 * len(taus), 3.1 * len(betas)))
    for r, beta in enumerate(betas):
        for c, tau in enumerate(taus):
            run = runs[(beta, tau)]
            count = cluster_labels(run.x[-1])[0]
            ax = _axes(fig, some.d, len(betas), len(taus), r * len(taus) + c + 1)
            draw_state(
                ax,
                run.x,
                len(run.t) - 1,
                run.t[-1],
                title=f"beta={beta:g}, tau={tau:g}: {count} cluster{'s' * (count != 1)}",
            )
    fig.suptitle(
        f"{some.dynamics} dynamics at t={some.t_end:g}: n={some.n}, d={some.d}, V={Path(some.value).name}, "
        f"{some.method} dt={some.dt:g}, seed={some.seed}",
        fontsize=9,
    )
    return save_figure(fig, path)
