"""The CPU time of `spikeport report` on a run report of 18,000 layers (issue 41: <= 8 s with --no-cpu).

    python benchmarks/bench_report_scale.py                       # build the run report, report it, print the CPU
    python benchmarks/bench_report_scale.py --run RUN.json        # report a run report already written
    python benchmarks/bench_report_scale.py --profile 25          # the same in this process under cProfile

The run report is a Spikformer's layer rows, as the reference writes them: the patch embedding's rows, then one
block's 16 rows (q/k/v dense and LIF, the SSA core, its LIF, the projection, the residual adds, the MLP) repeated
under the converter's names (``block.<i>.attn.q_lif``...) until it holds ``--layers`` rows, then the head. Every
counter is a per-time-step list drawn from a fixed seed within what the row's op counts (a LIF row's spikes at
most its neurons x samples); the file is read back through ``RunReport.from_json`` before it is timed, so it is
a run report the validator accepts. It names no artifact and no model config (a netx-like run: no check-hw, no
analytic memory, no GPU baseline): what is timed is reading, checking, pricing and summarising the rows.

The timed command is ``spikeport report RUN.json --no-cpu --no-gpu --no-cache --quiet`` in a child process; the
figure is the child's user + system CPU time (``resource.getrusage(RUSAGE_CHILDREN)``), not wall time: read it on
an idle machine. ``--profile N`` runs the same command in this process under cProfile and prints the N functions
with the most cumulative time and the N with the most own time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from spikeport.run_report import LAYER_COUNTER_NAMES, LayerReport, RunReport

GOAL_S = 8.0  # issue 41
FLAGS = ("--no-cpu", "--no-gpu", "--no-cache", "--quiet")
SAMPLES, T = 4, 4
TOKENS, DIM, HEADS = 64, 64, 4  # digits-tiny's token grid and width: the sizes of a block's rows

# (name, op, input kind, neurons per sample, weight bytes, fan-out): the patch embedding, one block, the head
STEM = [
    ("input", "input", "none", 0, 0, 72.0),
    ("patch_embed.proj_conv", "conv", "analog", 0, 72, 0.0),
    ("patch_embed.proj_lif", "lif", "activation", 512, 32, 144.0),
    ("patch_embed.proj_conv1", "conv", "spikes", 0, 1152, 0.0),
    ("patch_embed.proj_lif1", "lif", "activation", 1024, 64, 288.0),
    ("patch_embed.rpe_conv", "conv", "spikes", 0, 36864, 0.0),
    ("patch_embed.rpe_lif", "lif", "activation", TOKENS * DIM, 256, 0.0),
    ("patch_embed.rpe_add", "add", "spikes", 0, 0, 192.0),
]
BLOCK = [
    ("attn.q_linear", "dense", "integer", 0, DIM * DIM, 0.0),
    ("attn.q_lif", "lif", "activation", TOKENS * DIM, 256, 16.0),
    ("attn.k_linear", "dense", "integer", 0, DIM * DIM, 0.0),
    ("attn.k_lif", "lif", "activation", TOKENS * DIM, 256, 16.0),
    ("attn.v_linear", "dense", "integer", 0, DIM * DIM, 0.0),
    ("attn.v_lif", "lif", "activation", TOKENS * DIM, 256, 16.0),
    ("attn.core", "attention", "spikes", HEADS * TOKENS * TOKENS * 8, 0, 0.0),
    ("attn.attn_lif", "lif", "activation", TOKENS * DIM, 256, 64.0),
    ("attn.proj_linear", "dense", "spikes", 0, DIM * DIM, 0.0),
    ("attn.proj_lif", "lif", "activation", TOKENS * DIM, 256, 0.0),
    ("attn_add", "add", "integer", 0, 0, 256.0),
    ("mlp.fc1_linear", "dense", "integer", 0, 4 * DIM * DIM, 0.0),
    ("mlp.fc1_lif", "lif", "activation", 4 * TOKENS * DIM, 1024, 64.0),
    ("mlp.fc2_linear", "dense", "spikes", 0, 4 * DIM * DIM, 0.0),
    ("mlp.fc2_lif", "lif", "activation", TOKENS * DIM, 256, 0.0),
    ("mlp_add", "add", "integer", 0, 0, 0.0),
]
HEAD = ("head", "readout", "integer", 0, 680, 0.0)


def _row(rng: random.Random, name: str, op: str, kind: str, neurons: int, weights: int, fan_out: float) -> LayerReport:
    """One layer row with the counters its op makes, each a per-step list summed over ``SAMPLES``."""

    def steps(low: int, high: int) -> list[int]:
        return [rng.randint(low, high) for _ in range(T)]

    zeros = [0] * T
    counts = {key: list(zeros) for key in LAYER_COUNTER_NAMES}
    if op == "lif":
        most = neurons * SAMPLES
        counts["spikes"] = steps(most // 10, most // 3)
        counts["neuron_updates"] = [most] * T
    elif op in ("dense", "conv") and kind == "analog":
        counts["macs"] = [18432 * SAMPLES] * T
    elif op in ("dense", "conv"):
        counts["synops"] = steps(10**5, 10**6)
        counts["synops_valued"] = [v * 3 // 2 if kind == "integer" else v for v in counts["synops"]]
    elif op == "attention":
        counts["synops"] = steps(4 * 10**5, 15 * 10**5)
        counts["macs"] = steps(10**4, 7 * 10**4)
        counts["neuron_updates"] = [neurons * SAMPLES] * T
    elif op == "readout":
        counts["synops_valued"] = steps(10**4, 3 * 10**4)
        counts["macs"] = [2560] * T
    state = 6 * neurons if op == "lif" else 0
    return LayerReport(name, op, kind, neurons, fan_out, state, weights, counts)


def build(layers: int, seed: int = 0) -> RunReport:
    """A reference run report of a Spikformer with as many blocks as make ``layers`` rows (the stem, the blocks,
    the head; a last block is cut short where ``layers`` falls inside it)."""
    rng = random.Random(seed)
    rows = [_row(rng, *spec) for spec in STEM]
    block = 0
    while len(rows) < layers - 1:
        for suffix, *spec in BLOCK[: layers - 1 - len(rows)]:
            rows.append(_row(rng, f"block.{block}.{suffix}", *spec))  # type: ignore[arg-type]
        block += 1
    rows.append(_row(rng, *HEAD))
    return RunReport(
        executor="reference",
        samples=SAMPLES,
        layers=rows,
        model={"dataset": "cifar10"},
        T=T,
        predictions=[rng.randrange(10) for _ in range(SAMPLES)],
        accuracy=0.5,
        wall_time_s=1.0,
        latency_timesteps=T,
    )


def child_cpu_s(command: list[str]) -> float:
    """The user + system CPU seconds of ``command`` run to its end (it must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def profile(run: Path, top: int) -> None:
    """The timed command in this process under cProfile: the ``top`` functions by cumulative and by own time."""
    from spikeport.cli import main as spikeport

    profiler = cProfile.Profile()
    profiler.enable()
    status = spikeport(["report", str(run), *FLAGS])
    profiler.disable()
    assert status == 0, status
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=18_000, help="layer rows of the built run report (default 18000)")
    p.add_argument("--run", type=Path, help="report this run report instead of building one")
    p.add_argument("--keep", type=Path, help="write the built run report here (default: a temporary folder)")
    p.add_argument("--repeat", type=int, default=1, help="reports timed; the least CPU time is printed")
    p.add_argument("--profile", type=int, metavar="N", help="profile in this process instead, printing N rows")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run
        if run is None:
            run = args.keep or Path(tmp) / "run.json"
            build(args.layers).to_json(run)
        layers = len(RunReport.from_json(run).layers)  # the validator accepts it
        if args.profile:
            profile(run, args.profile)
            return 0
        command = [sys.executable, "-m", "spikeport", "report", str(run), *FLAGS]
        cpu = min(child_cpu_s(command) for _ in range(max(args.repeat, 1)))
    print(f"spikeport report {' '.join(FLAGS)} on {layers:,} layers: {cpu:.2f} s CPU (goal <= {GOAL_S:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
