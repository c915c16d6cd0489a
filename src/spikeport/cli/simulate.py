"""spikeport simulate particles | sweep: tokens as particles on the sphere (spikeport.analysis.simulate)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from spikeport import api
from spikeport.cli._common import (
    command,
    echo,
    emit_json,
    finite_float,
    json_flag,
    json_to_stdout,
    nonnegative_int,
    output_dir,
    positive_float,
    positive_int,
    quiet_flag,
    refuse_flags,
)
from spikeport.errors import ConfigError

if TYPE_CHECKING:
    from spikeport.analysis.particles import ParticleConfig

V_THRESHOLD, TAU, TAUS = 0.5, 2.0, "1,2,4"  # ssa's sigma_tau when the flags are not given


def _floats(text: str, flag: str) -> list[float]:

    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = [math.nan]
    if not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{flag}: expected comma-separated finite numbers, got {text!r}")
    if not values:
        raise ConfigError(f"{flag}: expected at least one number")
    return values


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dynamics", default="self", help="self | causal | ssa (default self)")
    p.add_argument(
        "--value",
        default="identity",
        help="value matrix V: identity | neg-eig (eigenvalues linspace(-1,-2,d)) | PATH.npy (d x d)",
    )
    p.add_argument("--qk", default="identity", help="Q, K: identity | random | PATH.npz with arrays Q, K")
    p.add_argument("--v-threshold", type=positive_float, help=f"ssa: threshold of sigma_tau (default {V_THRESHOLD})")
    p.add_argument("--n", type=positive_int, default=64, help="particles (default 64)")
    p.add_argument("--d", type=positive_int, default=3, help="dimension: particles live on S^(d-1) (default 3)")
    p.add_argument("--t-end", type=positive_float, default=15.0, help="horizon (default 15)")
    p.add_argument("--dt", type=positive_float, default=0.1, help="step (default 0.1)")
    p.add_argument("--method", default="euler", help="euler | rk4 (default euler)")
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument(
        "--eps",
        type=positive_float,
        default=None,
        help="cluster rule: linked when cos >= 1 - eps (single linkage; default 1e-3)",
    )
    p.add_argument("--out", type=output_dir, required=True, help="output folder")
    json_flag(p, "the result (also written to the output folder)")
    quiet_flag(p, "summary")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        sub,
        "simulate",
        help="particle dynamics of (spiking) self-attention on the sphere",
        description="Tokens as particles on the sphere S^(d-1) moving under self-attention (Geshkovski et al.'s "
        "model), causal attention, or Spikformer's spiking self-attention (a sigmoid surrogate of the spike); "
        "'particles' runs one configuration, 'sweep' a beta x tau grid from the same initial positions.",
        examples=[
            "spikeport simulate particles --dynamics ssa --out sim/ssa",
            "spikeport simulate sweep --beta 0.5,1,2 --tau 1,2,4 --out sim/sweep",
        ],
    )
    s = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    one = command(
        s,
        "particles",
        help="one run: trajectories, snapshots, animation, cluster counts",
        description="One run of the particle dynamics: trajectories, snapshots at chosen times, a GIF, and the "
        "number of clusters (single linkage, cos >= 1 - eps) over time, written to --out.",
        examples=[
            "spikeport simulate particles --out sim/self",
            "spikeport simulate particles --dynamics ssa --tau 4 --n 128 --d 3 --out sim/ssa --no-animation",
        ],
    )
    _common(one)
    one.add_argument("--beta", type=finite_float, default=1.0, help="inverse temperature (default 1)")
    one.add_argument("--tau", type=positive_float, help=f"ssa: sigmoid steepness (default {TAU:g})")
    one.add_argument("--snapshots", help="comma-separated times (default 0, t_end/3, 2 t_end/3, t_end)")
    one.add_argument("--no-animation", dest="animation", action="store_false", help="skip the GIF")
    one.set_defaults(func=run_particles)
    grid = command(
        s,
        "sweep",
        help="a beta x tau grid of runs from the same initial positions",
        description="A grid of particle runs over the inverse temperature beta and (ssa) the sigmoid steepness tau, "
        "from the same initial positions: the final cluster counts per cell, sweep.png and sweep.json in --out.",
        examples=["spikeport simulate sweep --beta 0.5,1,2 --tau 1,2,4 --out sim/sweep"],
    )
    _common(grid)
    grid.add_argument("--beta", default="0.5,1,2", help="comma-separated betas (default 0.5,1,2)")
    grid.add_argument("--tau", help=f"comma-separated taus (default {TAUS}; ssa only)")
    grid.set_defaults(func=run_sweep, dynamics="ssa")


def _config(args: argparse.Namespace, **extra: Any) -> ParticleConfig:
    from spikeport.analysis.particles import ParticleConfig

    if args.dynamics != "ssa":
        refuse_flags(
            {"--v-threshold": args.v_threshold, "--tau": args.tau},
            f"to --dynamics {args.dynamics} (they shape ssa's sigma_tau)",
        )
    return ParticleConfig(
        dynamics=args.dynamics,
        n=args.n,
        d=args.d,
        value=args.value,
        qk=args.qk,
        v_threshold=V_THRESHOLD if args.v_threshold is None else args.v_threshold,
        t_end=args.t_end,
        dt=args.dt,
        method=args.method,
        seed=args.seed,
        **extra,
    )


def run_particles(args: argparse.Namespace) -> int:
    cfg = _config(args, beta=args.beta, tau=TAU if args.tau is None else args.tau)
    snaps = _floats(args.snapshots, "--snapshots") if args.snapshots else None
    res = api.simulate_particles(cfg, args.out, snaps, animation=args.animation, eps=args.eps)
    emit_json(args, res, "the result")
    if args.quiet or json_to_stdout(args):
        return 0
    marks = ", ".join(f"{k}: {v}" for k, v in res["counts_at_snapshots"].items())
    echo(
        f"{cfg.label()}\nclusters ({res['rule']['link']}): {marks}; largest pairwise distance at "
        f"t={cfg.t_end:g}: {res['final']['max_pairwise_distance']:.4g}; integration {res['wall_time_s']:.3f} s\n"
        f"wrote {', '.join(res['files'])} to {args.out}"
    )
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    betas = _floats(args.beta, "--beta")
    taus = _floats(args.tau or (TAUS if args.dynamics == "ssa" else "2"), "--tau")
    res = api.simulate_sweep(_config(args), betas, taus, args.out, eps=args.eps)
    emit_json(args, res, "the result")
    if args.quiet or json_to_stdout(args):
        return 0
    for cell in res["cells"]:
        echo(
            f"beta={cell['beta']:g} tau={cell['tau']:g}: {cell['final']['clusters']} clusters at "
            f"t={args.t_end:g}, sizes {cell['final']['sizes'][:6]}"
        )
    echo(f"wrote sweep.png, sweep.json to {args.out}")
    return 0
