"""PilotNet-LIF (lava-dl's shipped netx network), streamed frames: time per frame, side by side in one run.

    PYTHONPATH=src python benchmarks/bench_netx_pilotnet.py [--frames 8] [--steps 16]

Three executors run the same file, fed as lava-dl's own test feeds it (the image as the input neuron's
bias_mant; ``gts/pilotnet_lif/image.npy``, the same frame repeated):

  netx-lava       lava-dl's ``netx.hdf5.Network`` (reset_interval = steps) on Lava's CPU fixed_pt models
  netx-fast       the same network on spikeport's bit-exact faster Conv / Sparse models (``sim_config()``)
  spikeport-lava  spikeport's Lava backend on the imported graph (``runtime.netx_run.run_netx``), recording
                  every spiking layer for --compare as ``spikeport run`` does
  spikeport-ref   spikeport's numpy integer reference (counters on)

Times are wall clock on this machine, per frame of ``steps`` time steps, compile and start-up excluded where the
executor reports them (netx-lava: the first frame is its own row). Issue 13 requirement 5.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def netx_tests() -> Path:
    import lava.lib.dl.netx as netx_pkg

    site = Path(netx_pkg.__file__).resolve().parents[4]  # .../site-packages
    return site / "tests" / "lava" / "lib" / "dl" / "netx"


def netx_lava(path: Path, image: np.ndarray, frames: int, steps: int, fast: bool) -> tuple[float, float]:
    """(seconds for the first frame incl. compile and start, seconds per later frame)."""
    from spikeport.runtime.lava import compat
    from spikeport.runtime.lava.run import sim_config
    from spikeport.runtime.lava.session import LavaSession

    Network = compat.netx_network()  # lava-dl's, with the numpy-2 step for input transforms
    net = Network(net_config=str(path), reset_interval=steps)
    net.in_layer.neuron.bias_mant.init = image.astype(int)
    with LavaSession(net, sim_config(fast=fast)) as session:
        t0 = time.perf_counter()
        session.run(steps)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        session.run(steps * (frames - 1))
        rest = (time.perf_counter() - t0) / max(frames - 1, 1)
    return first, rest


def spikeport(path: Path, image: np.ndarray, frames: int, steps: int, backend: str) -> float:
    """Seconds per frame of spikeport's ``backend`` on ``frames`` bias-driven frames (its report's wall time)."""
    from spikeport.runtime.netx_run import run_netx

    images = np.repeat(image.transpose(1, 0, 2)[None], frames, axis=0)  # (x, y, f) -> [S, H, W, C]
    report = run_netx(path, images, backend=backend, input_drive="bias", steps=steps)
    return float(report.wall_time_s or 0.0) / frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--steps", type=int, default=16, help="time steps per frame (lava-dl's test: 16)")
    args = parser.parse_args()
    from spikeport.runtime.lava.compat import import_lava

    import_lava()
    root = netx_tests() / "gts" / "pilotnet_lif"
    path, image = root / "network.net", np.load(root / "image.npy")
    first, netx_frame = netx_lava(path, image, args.frames, args.steps, fast=False)
    _, fast_frame = netx_lava(path, image, args.frames, args.steps, fast=True)
    lava_frame = spikeport(path, image, args.frames, args.steps, "lava")
    ref_frame = spikeport(path, image, args.frames, args.steps, "reference")
    print(f"PilotNet-LIF, {args.frames} frames x {args.steps} steps, wall clock on this machine")
    print(f"{'executor':<16}{'s / frame':>12}{'vs netx-lava':>14}")
    rows = (
        ("netx-lava", netx_frame),
        ("netx-fast", fast_frame),
        ("spikeport-lava", lava_frame),
        ("spikeport-ref", ref_frame),
    )
    for name, value in rows:
        print(f"{name:<16}{value:>12.3f}{value / netx_frame:>13.2f}x")
    print(
        f"(netx-lava's first frame, compile and start-up included: {first:.2f} s; spikeport-lava's figure "
        "includes its compile, start-up and recording of every layer)"
    )


if __name__ == "__main__":
    main()
