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
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from spikeport.atomic import write_or_fallback
from spikeport.errors import SpikeportError
from spikeport.ir import artifact
from spikeport.ir.graph import Graph
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.backend import SIMULATED, on_hardware
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.plan_run import Expected, run_plan

FILES = ("model.spk.h5", "inputs.npy", "labels.npy", "expected.npz", "expected.json")


class BundleError(SpikeportError):
    """A bundle whose files are missing, changed or unreadable."""


def load_manifest(folder: Path) -> dict[str, Any]:
    """bundle.json, every field the run reads typed, and every data file as its SHA-256 says; a BundleError naming
    the file and the field otherwise."""
    path = folder / "bundle.json"
    if not path.is_file():  # a FIFO would block the read
        raise BundleError(f"{path}: missing or not a regular file (run.sh runs the folder it is in)")
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise BundleError(f"{path}: {path.stat().st_size} bytes, not a bundle manifest")
        manifest = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as err:
        raise BundleError(f"{path}: not a readable bundle manifest (truncated? {str(err)[:200]})") from None
    if not isinstance(manifest, dict) or manifest.get("schema") != "spikeport.bundle":
        raise BundleError(f"{path}: not a spikeport bundle manifest (schema 'spikeport.bundle')")
    for key, (ok, expected) in MANIFEST_FIELDS.items():
        if not ok(manifest.get(key)):
            got = json.dumps(manifest.get(key))
            raise BundleError(f"{path}: field '{key}': expected {expected}, got {got[:80]}")
    files = manifest["files"]
    for name in FILES:
        file = folder / name
        if not file.is_file() or _sha256(file) != files[name]:
            raise BundleError(f"{file}: missing or changed since the bundle was written (SHA-256 differs)")
    return manifest


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _digest(v: Any) -> bool:
    return isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v)


MAX_MANIFEST_BYTES = 1 << 24  # a manifest holds the plan: kilobytes
# what the run reads of bundle.json: (check, what is expected)
MANIFEST_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "schema_version": (lambda v: v == 1, "1"),
    "samples": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 10**8, "an integer >= 1"),
    "labels": (lambda v: isinstance(v, bool), "true or false"),
    "drive": (lambda v: v in {d.value for d in ChipDrive}, " or ".join(repr(d.value) for d in ChipDrive)),
    "states": (_strings, "a list of layer names"),
    "partition": (lambda v: isinstance(v, str) and v != "", "a SLURM partition's name"),
    "artifact_digest": (_digest, "the artifact's root digest (64 hex digits)"),
    "files": (
        lambda v: isinstance(v, dict) and set(v) == set(FILES) and all(_digest(d) for d in v.values()),
        f"{', '.join(FILES)} with their SHA-256",
    ),
}


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def read_data(folder: Path, manifest: dict[str, Any], graph: Graph) -> tuple[np.ndarray, np.ndarray | None, Expected]:
    """The bundle's inputs, labels and expected values, each checked by shape and format against the manifest and
    the artifact before it is used: a file whose digest was re-sealed in bundle.json is intact, not right (an
    inputs.npy of another shape ended in an AssertionError, a truncated expected.npz in zipfile.BadZipFile, string
    labels scored accuracy 0). A BundleError naming the file otherwise."""
    S, T = manifest["samples"], graph.T
    sample = tuple(graph.nodes["input"].shape)
    found = _header(folder / "inputs.npy")[0]
    if found[1:] == sample and found[0] != S:
        raise BundleError(f"{folder / 'bundle.json'}: field 'samples': {S}, inputs.npy holds {found[0]}")
    images = _array(folder / "inputs.npy", "fiu", (S, *sample), "the network's inputs, one per sample")
    if images.dtype.kind == "f" and not np.isfinite(images).all():
        raise BundleError(f"{folder / 'inputs.npy'}: holds NaN or infinite values")
    labels = None
    if manifest["labels"]:
        labels = _array(folder / "labels.npy", "iu", (S,), "one integer class per sample")
        if labels.size and labels.min() < 0:
            raise BundleError(f"{folder / 'labels.npy'}: a negative class ({labels.min()}), expected classes >= 0")
    else:
        _array(folder / "labels.npy", "iu", (0,), "no labels (bundle.json says labels: false)")
    report = RunReport.from_json(folder / "expected.json")
    if report.samples != S:
        raise BundleError(f"{folder / 'expected.json'}: {report.samples} samples, bundle.json says {S}")
    path = folder / "expected.npz"
    try:
        expected = Expected.load(str(path), report)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as err:
        raise BundleError(f"{path}: not a readable .npz of expected values ({type(err).__name__}: {err})") from None
    plan = manifest.get("plan")
    outputs = plan.get("outputs") if isinstance(plan, dict) else None
    if isinstance(outputs, list) and sorted(expected.outputs) != sorted(outputs):
        raise BundleError(f"{path}: outputs {sorted(expected.outputs)}, the bundle's plan reads {sorted(outputs)}")
    for name, values in expected.outputs.items():
        if values.dtype.kind not in "iu" or values.ndim != 3 or values.shape[:2] != (S, T):
            raise BundleError(f"{path}: out/{name}: {values.dtype} {values.shape}, expected integers ({S}, {T}, n)")
    for layer, held in expected.states.items():
        for var, values in held.items():
            if values.dtype.kind not in "iu" or values.ndim != 2 or values.shape[0] != S:
                raise BundleError(f"{path}: state/{layer}/{var}: {values.dtype} {values.shape}, expected ({S}, n)")
    return images, labels, expected


def _header(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a .npy file's header declares (nothing else read)."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
            if version not in read_header:
                raise ValueError(f"npy format {version}")
            found, _, dtype = read_header[version](f)
    except (OSError, ValueError, EOFError) as err:
        raise BundleError(f"{path}: not a .npy array ({err})") from None
    return tuple(found), dtype


def _array(path: Path, kinds: str, shape: tuple[int, ...], what: str) -> np.ndarray:
    """A .npy file's array, its header checked first (numbers of ``kinds``, exactly ``shape``: ``what``)."""
    found, dtype = _header(path)
    if dtype.kind not in kinds or dtype.hasobject or tuple(found) != shape:
        names = {"f": "floats", "i": "integers", "u": "unsigned integers"}
        kind = " or ".join(names[k] for k in kinds)
        raise BundleError(f"{path}: {dtype} {tuple(found)}, expected {kind} of shape {shape}: {what}")
    try:
        array: np.ndarray = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise BundleError(f"{path}: truncated or damaged ({err})") from None
    return array


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
    if graph.digest != manifest["artifact_digest"]:
        raise BundleError(f"{folder / 'bundle.json'}: field 'artifact_digest': is not model.spk.h5's root digest")
    images, labels, expected = read_data(folder, manifest, graph)
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
    # a run's result is not lost to a folder that cannot be written (read-only, full): it is saved elsewhere, named
    written = write_or_fallback(folder / "result.json", report.to_json, "the run's result")
    print(f"wrote {written.name}")
    return 0 if run.outputs_identical and run.states_identical in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
