"""Python API behind ``spikeport simulate``: run a particle system and write its outputs to a folder.

``simulate_particles`` writes::

    trajectories.npz   t [S], x [S, n, d], V, Q, K, config (JSON)
    snapshots.png      the requested times, trajectories dashed
    clusters.png       cluster count and largest pairwise distance over time
    animation.gif      the whole run (unless animation=False)
    clusters.json      schema spikeport.particles v1: config, the cluster rule, counts over time, ...

``sweep`` runs one system per (beta, tau) and writes sweep.png (the grid) and sweep.json.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from spikeport.analysis.clusters import DEFAULT_EPS, cluster_rule, counts_at, trajectory_stats
from spikeport.analysis.particles import ParticleConfig, ParticleRun, save_trajectories, simulate
from spikeport.atomic import write_json
from spikeport.errors import ConfigError

SCHEMA, SCHEMA_VERSION = "spikeport.particles", 1
SWEEP_SCHEMA = "spikeport.particles-sweep"


def default_snapshots(t_end: float) -> list[float]:
    return [0.0, round(t_end / 3, 6), round(2 * t_end / 3, 6), float(t_end)]


def summary(run: ParticleRun, eps: float = DEFAULT_EPS, snapshots: list[float] | None = None) -> dict:
    stats = trajectory_stats(run.t, run.x, eps)
    marks = snapshots if snapshots is not None else default_snapshots(run.config.t_end)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "method": f"numpy explicit {run.config.method}, dt={run.config.dt:g}, renormalised to the sphere "
        "after every step",
        "config": run.config.to_dict(),
        "V_eigenvalues": _eig(run.V),
        "counts_at_snapshots": counts_at(stats, marks),
        "wall_time_s": run.wall_time_s,
        **stats,
    }


def _eig(v: np.ndarray) -> list[float]:
    return sorted(np.real(np.linalg.eigvals(v)).round(6).tolist(), reverse=True)


def simulate_particles(
    cfg: ParticleConfig,
    out: str | Path,
    snapshots: list[float] | None = None,
    animation: bool = True,
    eps: float = DEFAULT_EPS,
) -> dict:
    """Simulate and write all outputs; returns the clusters.json content."""
    from spikeport.analysis import plots

    out = Path(out)
    snapshots = default_snapshots(cfg.t_end) if snapshots is None else list(snapshots)
    for t in snapshots:
        if not 0 <= t <= cfg.t_end + 1e-9:
            raise ConfigError(f"--snapshots: time {t:g} is outside [0, t_end={cfg.t_end:g}]")
    run = simulate(cfg)
    result = summary(run, eps, snapshots)
    save_trajectories(run, out / "trajectories.npz")
    plots.plot_snapshots(run, snapshots, out / "snapshots.png")
    plots.plot_cluster_counts([(cfg.dynamics, result)], out / "clusters.png", cfg.label())
    if animation:
        plots.write_animation(run, out / "animation.gif")
    result["files"] = sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) + ["clusters.json"]
    write_json(out / "clusters.json", result)
    return result


def sweep(
    base: ParticleConfig, betas: list[float], taus: list[float], out: str | Path, eps: float = DEFAULT_EPS
) -> dict:
    """One run per (beta, tau) from the same initial positions (same seed); tau matters for ssa only."""
    from spikeport.analysis import plots

    if not betas or not taus:
        raise ConfigError("sweep needs at least one beta and one tau")
    if base.dynamics != "ssa" and len(taus) > 1:
        raise ConfigError(f"tau only acts in ssa dynamics; got {len(taus)} taus for --dynamics {base.dynamics}")
    out = Path(out)
    runs, cells = {}, []
    for beta in betas:
        for tau in taus:
            run = simulate(dataclasses.replace(base, beta=beta, tau=tau))
            runs[(beta, tau)] = run
            stats = trajectory_stats(run.t, run.x, eps)
            cells.append(
                {
                    "beta": beta,
                    "tau": tau,
                    "final": stats["final"],
                    "counts_at": counts_at(stats, default_snapshots(base.t_end)),
                    "wall_time_s": run.wall_time_s,
                }
            )
    plots.plot_sweep(runs, betas, taus, out / "sweep.png")
    result = {
        "schema": SWEEP_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "config": base.to_dict(),
        "betas": betas,
        "taus": taus,
        "rule": cluster_rule(eps),
        "cells": cells,
        "files": ["sweep.png", "sweep.json"],
    }
    write_json(out / "sweep.json", result)
    return result
