"""Seed 004's locality claim on trained models: share of attention mass within Manhattan distance 5 and
normalised entropy, side by side (e.g. ssa vs lrf_ssa vs ViT on digits), with the uniform chance level.

    python scripts/locality_goal.py --out analysis_out/locality ssa=runs/ssa/checkpoint.pt \
        lrf_ssa=runs/lrf/checkpoint.pt vit=runs/vit/checkpoint.pt

Runs ``spikeport analyze`` on each checkpoint (outputs in <out>/<label>/), then writes locality.png and
locality.json comparing them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spikeport.analysis.io import save_figure, write_json  # noqa: E402
from spikeport.analysis.model_analysis import analyze_checkpoint  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="label=checkpoint")
    ap.add_argument("--out", default="analysis_out/locality")
    ap.add_argument("--samples", type=int, default=360)
    args = ap.parse_args()
    out = Path(args.out)
    rows, fig = {}, plt.figure(figsize=(7, 4))
    ax = fig.gca()
    for item in args.models:
        label, path = item.split("=", 1)
        res = analyze_checkpoint(path, out / label, samples=args.samples)
        for kind, s in res["locality_overall"].items():
            name = label if kind == "attention" else f"{label} ({kind})"
            rows[name] = {
                k: s[k]
                for k in (
                    "share_within_radius",
                    "normalised_entropy",
                    "mean_distance",
                    "uniform_share_within_radius",
                    "empty_rows",
                    "rows",
                )
            }
            rows[name]["accuracy_on_samples"] = res["accuracy_on_samples"]
            ax.plot(
                s["mass_by_distance"],
                lw=2 if kind == "attention" else 1,
                ls="-" if kind != "local_only" else ":",
                label=f"{name}: {100 * s['share_within_radius']:.1f}% <= 5, H={s['normalised_entropy']:.3f}",
            )
        uniform = s["uniform_mass_by_distance"]
    ax.plot(uniform, "k--", lw=1, label=f"uniform: {100 * s['uniform_share_within_radius']:.1f}% <= 5, H=1")
    ax.axvline(5.5, color="0.6", lw=0.8)
    ax.set_xlabel("Manhattan distance query -> key")
    ax.set_ylabel("attention mass (rows normalised)")
    ax.legend(fontsize=7)
    ax.set_title("attention locality, all blocks (spikeport analyze, torch float, eval)", fontsize=9)
    save_figure(fig, out / "locality.png")
    write_json(rows, out / "locality.json")
    print(f"{'model':28s} share<=5  entropy  mean_dist  uniform_share  acc")
    for name, r in rows.items():
        print(
            f"{name:28s} {100 * r['share_within_radius']:6.1f}%  {r['normalised_entropy']:.3f}   "
            f"{r['mean_distance']:.2f}      {100 * r['uniform_share_within_radius']:.1f}%   {r['accuracy_on_samples']}"
        )


if __name__ == "__main__":
    main()
