"""Reproduce the seed papers' particle findings (seed 002 Figs. 3, 4, 5, 8; seed 000 Fig. 1) and print the
cluster counts over time, side by side, plus the robustness over seeds and the wall time of one run.

    python scripts/particle_goals.py --out sims/goals

Writes one folder per scenario (``spikeport simulate particles`` outputs) and goals.png / goals.json.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from spikeport.analysis.clusters import trajectory_stats
from spikeport.analysis.io import write_json
from spikeport.analysis.particles import ParticleConfig, simulate
from spikeport.analysis.plots import plot_cluster_counts
from spikeport.analysis.simulate import simulate_particles

SCENARIOS = {
    "fig3-self-b1": (ParticleConfig(dynamics="self", beta=1.0), [0, 3, 6, 12, 15]),
    "fig3-self-b1-randomQK": (ParticleConfig(dynamics="self", beta=1.0, qk="random"), [0, 3, 6, 12, 15]),
    "fig4-self-b9": (ParticleConfig(dynamics="self", beta=9.0), [0, 3, 6, 12, 15]),
    "fig5-self-negeig-circle": (ParticleConfig(dynamics="self", value="neg-eig", d=2), [0.1, 1.2, 5, 15]),
    "fig5-causal-negeig-circle": (ParticleConfig(dynamics="causal", value="neg-eig", d=2), [0.1, 1.2, 5, 15]),
    "fig5-self-negeig-circle-b9": (ParticleConfig(dynamics="self", value="neg-eig", d=2, beta=9.0), [0.1, 1.2, 5, 15]),
    "fig8-causal-identity": (ParticleConfig(dynamics="causal"), [0.6, 3, 6, 9, 15]),
    "fig8-causal-negeig": (ParticleConfig(dynamics="causal", value="neg-eig"), [0.6, 3, 6, 9, 15]),
    "s000-fig1-ssa-b1-t2": (ParticleConfig(dynamics="ssa", beta=1.0, tau=2.0), [0, 3, 6, 12, 15]),
}
MARKS = [0, 1, 3, 6, 9, 12, 15]


def at(stats: dict, key: str, t: float):
    times = np.asarray(stats["times"])
    return stats[key][int(np.argmin(np.abs(times - t)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="sims/goals")
    ap.add_argument("--seeds", type=int, default=10, help="seeds for the robustness table")
    ap.add_argument("--no-animation", dest="animation", action="store_false")
    args = ap.parse_args()
    out = Path(args.out)
    summary, curves = {}, []
    print(f"{'scenario':28s} " + " ".join(f"t={t:<4g}" for t in MARKS) + "  diam(15) polar axial  lead_share lead_cos")
    for name, (cfg, snaps) in SCENARIOS.items():
        t0 = time.perf_counter()
        res = simulate_particles(cfg, out / name, snaps, animation=args.animation)
        total = time.perf_counter() - t0
        counts = [at(res, "cluster_counts", t) for t in MARKS]
        lead = res["first_token"]
        fin = res["final"]
        print(
            f"{name:28s} "
            + " ".join(f"{c:<6d}" for c in counts)
            + f"  {fin['max_pairwise_distance']:.3g}  {fin['polar_order']:.3f} {fin['axial_order']:.3f}"
            f"  {lead['share_in_its_cluster'][-1]:.3f}     {lead['mean_cos_to_others'][-1]:.3f}"
        )
        seeds = []
        for seed in range(args.seeds):
            run = simulate(replace(cfg, seed=seed))
            seeds.append(trajectory_stats(run.t, run.x)["final"]["clusters"])
        summary[name] = {
            "config": cfg.to_dict(),
            "counts_at": dict(zip(map(str, MARKS), counts, strict=True)),
            "final": fin,
            "first_token_final": {k: (v[-1] if isinstance(v, list) else v) for k, v in lead.items()},
            "final_clusters_over_seeds": seeds,
            "integration_s": res["wall_time_s"],
            "with_outputs_s": total,
        }
        curves.append((name, res))
    print(f"\nclusters at t=15 over seeds 0..{args.seeds - 1}:")
    for name, s in summary.items():
        print(f"  {name:28s} {s['final_clusters_over_seeds']}")
    runs = [simulate(ParticleConfig()) for _ in range(5)]
    wall = sorted(r.wall_time_s for r in runs)[2]
    print(
        f"\nwall time of one 64-particle run (self, d=3, Euler, 150 steps), median of 5: {1000 * wall:.1f} ms; "
        f"with all outputs ({'snapshots, GIF' if args.animation else 'snapshots, no GIF'}, JSON, NPZ): "
        f"{summary['fig3-self-b1']['with_outputs_s']:.2f} s"
    )
    plot_cluster_counts(curves, out / "goals.png", "seed papers' scenarios, n=64, Euler dt=0.1, seed 0")
    write_json({"scenarios": summary, "wall_time_one_run_s": wall}, out / "goals.json")


if __name__ == "__main__":
    main()
