"""Reference simulator vs Lava CPU simulator on the same converted network, side by side in one run.

    python benchmarks/bench_executors.py [--attention ssa] [--ref-samples 360] [--lava-samples 32]

Prints samples/s of each executor and the ratio (issue goals: the reference evaluates the digits test split
in seconds; it is >= 100x faster than Lava). The network is digits-tiny with BatchNorm parameters set so
every layer fires (no training needed); pass --artifact to time a converted model instead.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attention", default="ssa")
    ap.add_argument("--artifact")
    ap.add_argument("--ref-samples", type=int, default=360)
    ap.add_argument("--lava-samples", type=int, default=32)
    ap.add_argument(
        "--lava-models",
        choices=("fast", "lava", "both"),
        default="both",
        help="CPU models of Conv/Sparse/DelaySparse: spikeport's bit-exact fast ones, Lava's own, or both",
    )
    args = ap.parse_args()

    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.lava.run import run_lava, sim_config
    from spikeport.runtime.sim.reference import ReferenceSimulator

    if args.artifact:
        from spikeport.ir import artifact
        from spikeport.train.data import split_tensors

        graph = artifact.read(args.artifact)
        x = to_channels_last(
            split_tensors(graph.meta.get("dataset", "digits"), None, "test", args.ref_samples)[0].numpy()
        )
    else:
        from conftest import quantized_graph, random_images, spiky_model

        graph = quantized_graph(spiky_model(args.attention), random_images(16, seed=1))
        x = to_channels_last(random_images(args.ref_samples, seed=3).numpy())
    sim = ReferenceSimulator(graph)
    t0 = time.perf_counter()
    sim.run(x, None)  # default batch (64)
    ref = time.perf_counter() - t0
    r_sps = len(x) / ref
    print(f"reference (numpy, FastOps, counters on): {len(x)} samples in {ref:.2f} s = {r_sps:.1f} samples/s")
    for kind in ("fast", "lava") if args.lava_models == "both" else (args.lava_models,):
        t0 = time.perf_counter()
        report = run_lava(graph, x[: args.lava_samples], run_cfg=sim_config(fast=kind == "fast"))
        lava_total, lava_run = time.perf_counter() - t0, report.wall_time_s
        l_sps = args.lava_samples / lava_run
        print(
            f"lava-fixed_pt ({kind} CPU models), {report.lava.processes} processes, depth "
            f"{report.lava.max_depth}: {args.lava_samples} samples in {lava_run:.2f} s "
            f"({lava_total:.2f} s incl. build+compile) = {l_sps:.2f} samples/s, "
            f"{1000 * lava_run / report.lava.steps:.1f} ms per time step"
        )
        print(f"  ratio reference / lava ({kind} models), samples/s: {r_sps / l_sps:.0f}x")


if __name__ == "__main__":
    main()
