"""The runner inside a bundle (``bundle.py``): ``python -m spikeport.runtime.loihi2.bundle_run BUNDLE``, which the
bundle's run.sh calls. It imports no torch (the deploy side only), checks the bundle's files against their digests,
selects the Loihi 2 host the way Lava's own utilities do where lava-loihi imports (else says it simulates), runs the
hardware plan on the bundle's samples, compares the outputs and states with the reference's and writes
``result.json``. Exit status: 0 identical, 1 a difference (named), 2 a bad bundle or a failed run (one line).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from spikeport.errors import SpikeportError
from spikeport.ir import artifact
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.backend import SIMULATED, on_hardware
from spikeport.runtime.loihi2.plan_run import Expected, run_plan

FILES = ("model.spk.h5", "inputs.npy", "labels.npy", "expected.npz", "expected.json")


class BundleError(SpikeportError):
    """A bundle whose files are missing, changed or unreadable."""


def load_manifest(folder: Path) -> dict[str, Any]:
    path = folder / "bundle.json"
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise BundleError(f"{path}: not a readable bundle manifest ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != "spikeport.bundle":
        raise BundleError(f"{path}: not a spikeport bundle manifest (schema 'spikeport.bundle')")
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(FILES):
        raise BundleError(f"{path}: 'files' must list {', '.join(FILES)} with their SHA-256")
    for name, digest in files.items():
        if _sha256(folder / name) != digest:
            raise BundleError(f"{folder / name}: missing or changed since the bundle was written (SHA-256 differs)")
    return manifest


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def select_host(partition: str | None, board: str | None) -> str:
    """Point Lava at a Loihi 2 system as Intel's utilities do: ``lava.utils.loihi.use_slurm_host`` (Lava >= 0.8),
    else the older ``lava.utils.system.Loihi2`` (every lava-dl tutorial). Returns what was chosen."""
    try:
        from lava.utils import loihi
    except ImportError:
        from lava.utils.system import Loihi2

        Loihi2.preferred_partition = partition
        if not Loihi2.is_loihi2_available:
            raise BundleError("lava.utils.system.Loihi2 finds no Loihi 2 compiler (lava-loihi)") from None
        return f"partition {Loihi2.partition}"
    if board:
        loihi.use_slurm_host(board=board)
        return f"board {board}"
    loihi.use_slurm_host(partition=partition)
    return f"partition {partition}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="run.sh", description="Run this spikeport bundle's hardware plan.")
    ap.add_argument("bundle", help="the bundle folder (run.sh passes its own)")
    ap.add_argument("--simulate", action="store_true", help="run the plan's simulation even where lava-loihi is")
    ap.add_argument("--partition", help="the SLURM partition (default: bundle.json's, or $PARTITION)")
    ap.add_argument("--board", help="a SLURM board name instead of a partition (or $BOARD)")
    args = ap.parse_args(argv)
    try:
        return _run(Path(args.bundle), args)
    except (SpikeportError, OSError, ValueError) as err:
        print(f"spikeport bundle: error: {err}", file=sys.stderr)
        return 2


def _run(folder: Path, args: argparse.Namespace) -> int:
    manifest = load_manifest(folder)
    hardware = on_hardware() and not args.simulate
    if hardware:
        where = select_host(args.partition or os.environ.get("PARTITION") or manifest["partition"],
                            args.board or os.environ.get("BOARD"))  # fmt: skip
        print(f"spikeport bundle: Loihi 2 (Loihi2HwCfg, lava.proc.embedded_io), {where}", flush=True)
    else:
        why = "--simulate" if args.simulate else SIMULATED.split(":")[0]
        print(f"spikeport bundle: SIMULATION (Loihi2SimCfg, simulated embedded IO): {why}", flush=True)
    graph = artifact.read(folder / "model.spk.h5")
    images = np.load(folder / "inputs.npy", allow_pickle=False)
    labels = np.load(folder / "labels.npy", allow_pickle=False) if manifest.get("labels") else None
    expected = Expected.load(str(folder / "expected.npz"), RunReport.from_json(folder / "expected.json"))
    report = run_plan(
        graph,
        images,
        labels,
        drive=manifest["drive"],
        states=tuple(manifest["states"]),
        hardware=hardware,
        expected=expected,
        progress=lambda line: print(line, flush=True),
    )
    report.artifact, report.artifact_digest = "model.spk.h5", graph.digest
    run = report.hardware
    assert run is not None
    if run.outputs_identical and run.states_identical in (None, True):
        states = f" and the {len(manifest['states'])} read states" if manifest["states"] else ""
        print(f"outputs{states}: identical to the reference at every step ({run.samples} samples)")
    else:
        print(f"MISMATCH with the reference: {json.dumps(run.first_mismatch)}")
    if report.accuracy is not None:
        print(f"accuracy {report.accuracy:.4f} on {run.samples} samples")
    measured = report.energy_measured or {}
    if measured.get("available"):
        energy, step = measured["total_J"] * 1e3, measured["time_per_step_s"] * 1e6
        print(f"measured: {energy:.4g} mJ an inference, {step:.4g} us a step (lava.utils.loihi2_profiler)")
    report.to_json(folder / "result.json")
    print("wrote result.json")
    return 0 if run.outputs_identical and run.states_identical in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
