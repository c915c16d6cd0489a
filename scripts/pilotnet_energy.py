"""The energy model against Intel's one public Loihi 2 measurement with public weights: PilotNet-LIF on Oheo Gulch.

lava-dl's PilotNet-LIF benchmark (tutorials/lava/lib/dl/netx/pilotnet_snn/benchmark.ipynb, the image as the input
layer's bias, 16 steps a frame) measured 408.91 frames/s and 0.679 W = 0.232 W static + 0.447 W dynamic on one chip
(74 cores): 1.661 mJ a frame, 1.094 mJ of it dynamic. This script runs the same network, fed as Intel fed it, on
spikeport's reference (lava-dl's own test files: gts/pilotnet_lif), attaches that measurement to the run report
(labelled as Intel's, published), prices the counts with the loihi2 profile (static + dynamic, as Intel splits; the
static part for the chips check-hw's core model places the network on: 74 cores on 1 chip, the cores Intel's compile
table shows), calibrates the profile on the run and prices them again.

    python scripts/pilotnet_energy.py [--out DIR]

The counts are of one frame (lava-dl's test image); Intel's figures are averaged over the PilotNet data set's frames.
With one measurement the calibrated estimate reproduces it by construction; a second measurement tests it.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from pathlib import Path

FPS = 408.91  # frames a second
STEPS = 16  # time steps a frame
POWER_W = {"total": 0.679, "static": 0.232, "dynamic": 0.447}
SOURCE = "lava-dl tutorials/lava/lib/dl/netx/pilotnet_snn/benchmark.ipynb (PilotNet-LIF, Oheo Gulch, 74 cores)"


def measured() -> dict:
    frame_s = 1 / FPS
    return {
        "label": f"measured by Intel, published ({SOURCE})",
        "method": "Loihi2Power / Loihi2ExecutionTime (Intel's run)",
        "per_inference": True,
        "total_J": POWER_W["total"] * frame_s,
        "static_J": POWER_W["static"] * frame_s,
        "dynamic_J": POWER_W["dynamic"] * frame_s,
        "static_power_W": POWER_W["static"],
        "time_per_step_s": frame_s / STEPS,
        "chips": 1,
        "cores": 74,
        "note": "Intel's figures average the PilotNet data set's frames; the counts beside them are one frame's",
    }


def main(argv: list[str] | None = None) -> int:
    from spikeport import api
    from spikeport.hw_profiles import load_profile
    from spikeport.metrics.calibrate import calibrate, write_profile
    from spikeport.metrics.energy import estimate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/pilotnet", help="folder for the run report and the calibrated profile")
    args = ap.parse_args(argv)
    gts = Path(sysconfig.get_paths()["purelib"]) / "tests" / "lava" / "lib" / "dl" / "netx" / "gts" / "pilotnet_lif"
    if not gts.is_dir():
        print(f"lava-dl's netx test data is not installed ({gts})", file=sys.stderr)
        return 2
    run = api.run(
        gts / "network.net", "reference", inputs=gts / "image.npy", input_layout="netx", input_drive="bias", steps=STEPS
    )
    run.energy_measured = measured()
    check = api.check_hw(gts / "network.net", input_shape=None)
    chips = check.chips or 1
    print(
        f"check-hw (the core model fitted to Lava's compile tables): {check.cores} cores on {chips} chip(s); Intel's "
        f"compile of this network: {run.energy_measured['cores']} cores on {run.energy_measured['chips']} chip"
    )
    out = Path(args.out)
    run.to_json(out / "pilotnet_lif_measured.json")
    m = run.energy_measured

    def line(name: str, profile) -> None:
        e = estimate(run, profile, chips=chips)
        assert e.static is not None
        print(
            f"{name}: total {e.total_J * 1e3:.3f} mJ ({e.total_J / m['total_J']:.2f}x measured), dynamic "
            f"{e.energy_J * 1e3:.3f} mJ ({e.energy_J / m['dynamic_J']:.2f}x), static {e.static.energy_J * 1e3:.3f} mJ "
            f"({e.static.energy_J / m['static_J']:.2f}x)"
        )

    print(
        f"measured (Intel): total {m['total_J'] * 1e3:.3f} mJ, dynamic {m['dynamic_J'] * 1e3:.3f} mJ, static "
        f"{m['static_J'] * 1e3:.3f} mJ a frame, {m['time_per_step_s'] * 1e6:.1f} us a step"
    )
    base = load_profile("loihi2")
    line("loihi2 (Loihi 1 per-op energies, static power x the measured time)", base)
    cal = calibrate([("pilotnet_lif_measured.json", run)], base)
    written = write_profile(cal, out / "loihi2-calibrated.yaml")
    line(f"{written.name} (per-op energies x {cal.scale:.4f}, fit on this run)", written)
    print(f"wrote {out / 'pilotnet_lif_measured.json'}, {out / 'loihi2-calibrated.yaml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
