"""``spikeport bundle``: a folder an INRC member copies to a vLab login VM and runs as it is.

The folder holds the artifact, the deploy side of spikeport (``lib/spikeport``: no torch), N samples' inputs, the
reference's expected outputs and states (``expected.npz``) and run report (``expected.json``), ``run.sh`` (the
hardware plan with whatever ``python`` is first on PATH: Loihi 2 through Lava's own host selection where lava-loihi
imports, else the plan's simulation, said on the first line), ``run.slurm`` (the same as a SLURM batch job), the
deploy requirements, a README with the commands and what they print, and ``bundle.json`` (what is in it, with
SHA-256 digests that the run checks). The run writes ``result.json``, a run report that ``spikeport report`` reads.
Nothing in run.sh or run.slurm names the folder: they find it from their own path, so a folder with spaces,
quotes, ``$()`` or non-ASCII in its name runs as any other.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spikeport._version import __version__
from spikeport.atomic import atomic_folder
from spikeport.brief import brief_repr
from spikeport.ir.graph import Graph
from spikeport.runtime.loihi2.check_hw import check_hw
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.plan_run import choose_drive, expect

SCHEMA = "spikeport.bundle"
SCHEMA_VERSION = 1
# Partition names seen in Intel's own notebooks (docs/loihi2_sources.md section 7): one chip an Oheo Gulch, up to
# eight a Kapoho Point, more a stack of them
PARTITIONS = ((1, "oheogulch"), (8, "kp"), (None, "kp_stack"))
FILES = ("model.spk.h5", "inputs.npy", "labels.npy", "expected.npz", "expected.json")
DEPLOY_REQUIREMENTS = """\
# The deploy side of a spikeport bundle: no torch. On INRC vLab, install Intel's lava / lava-loihi release
# tarballs instead of lava-nc from PyPI (/nfs/ncl/releases/lava/<version>; lava-loihi brings the chip), then:
#   python -m pip install -r requirements-deploy.txt
# lava-nc 0.10.0 declares Python 3.10 and numpy < 2 (a 3.10 virtual environment is the simple way).
lava-nc==0.10.0
numpy<2
scipy
h5py
PyYAML
tqdm
rich
threadpoolctl
"""


@dataclass(frozen=True)
class Bundle:
    folder: Path
    manifest: dict[str, Any]

    __repr__ = brief_repr


def partition_for(chips: int) -> str:
    for most, name in PARTITIONS:
        if most is None or chips <= most:
            return name
    return PARTITIONS[-1][1]


def write_bundle(
    graph: Graph,
    artifact: str | os.PathLike[str],
    images: np.ndarray,
    labels: np.ndarray | None,
    out: str | os.PathLike[str],
    *,
    drive: ChipDrive | str | None = None,
    states: tuple[str, ...] = (),
    partition: str | None = None,
    replace: bool = False,
) -> Bundle:
    """The bundle of ``graph`` (read from ``artifact``) on ``images`` [S, H, W, C], written to ``out`` atomically
    (refused where ``out`` holds files, unless ``replace``). ``drive`` None: the bias drive where the network takes
    it and these samples' biases fit Loihi 2's 13 bits, else the adapter drive (the manifest says why)."""
    chosen, why, _ = choose_drive(graph, images, drive)
    check = check_hw(graph, drive=chosen, states=states)
    assert check.plan is not None
    chips = check.chips or 1
    part = partition or partition_for(chips)
    expected = expect(graph, images, labels, check.plan.outputs, states)
    lib = Path(__file__).resolve().parents[2]  # the spikeport package
    with atomic_folder(out, replace=replace, what="bundle folder") as tmp:
        shutil.copyfile(artifact, tmp / "model.spk.h5")
        np.save(tmp / "inputs.npy", np.asarray(images))
        np.save(tmp / "labels.npy", np.asarray(labels if labels is not None else np.zeros(0, np.int64)))
        expected.save(str(tmp / "expected.npz"))
        expected.report.to_json(tmp / "expected.json")
        shutil.copytree(lib, tmp / "lib" / "spikeport", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        manifest = {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "spikeport": __version__,
            "artifact_digest": graph.digest,
            "samples": int(len(images)),
            "labels": labels is not None,
            "drive": chosen.value,
            "drive_reason": why,
            "states": list(states),
            "partition": part,
            "chips": chips,
            "system": None if check.system is None else check.system.phrase,
            "verdict": check.verdict,
            "plan": check.plan.to_dict(),
            "files": {name: _sha256(tmp / name) for name in FILES},
        }
        (tmp / "bundle.json").write_text(json.dumps(manifest, indent=1))
        (tmp / "requirements-deploy.txt").write_text(DEPLOY_REQUIREMENTS)
        _script(tmp / "run.sh", RUN_SH)
        _script(tmp / "run.slurm", RUN_SLURM.replace("@PARTITION@", part))
        (tmp / "README.md").write_text(readme(manifest))
    return Bundle(Path(out), manifest)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# Both scripts find the bundle from their own path and pass it quoted: no path is ever spliced into shell code.
RUN_SH = """#!/usr/bin/env bash
# Runs this bundle's hardware plan with the first `python` on PATH: on Loihi 2 where lava-loihi imports (Lava
# selects the host: SLURM partition from bundle.json, or $PARTITION / $BOARD), else in simulation (said first).
# Arguments go to the runner: --simulate, --partition NAME, --board NAME.
set -euo pipefail
here="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$here/lib${PYTHONPATH:+:$PYTHONPATH}"
exec python -m spikeport.runtime.loihi2.bundle_run "$here" "$@"
"""

RUN_SLURM = """#!/usr/bin/env bash
# sbatch run.slurm (from this folder): the bundle as a batch job, e.g. where compiling needs more memory than the
# login VM has (lava-dl#252). Lava itself still submits the chip's part to the partition below.
#SBATCH --job-name=spikeport-bundle
#SBATCH --partition=@PARTITION@
#SBATCH --output=slurm-%j.out
#SBATCH --time=01:00:00
set -euo pipefail
here="${SLURM_SUBMIT_DIR:-$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)}"
exec bash "$here/run.sh" "$@"
"""


def readme(manifest: dict[str, Any]) -> str:
    plan = manifest["plan"]
    traffic = plan["host_traffic"]
    pitfalls = "\n".join(f"- {p['what']} ({p['where']}): {p['message']} ({p['source']})" for p in plan["pitfalls"])
    crossings = "\n".join(
        f"- `{b['adapter']}`: {b['host']} / {b['chip']}, {b['values']:,} values a {b['per']} ({b['source']})"
        for b in plan["boundaries"]
    )
    return f"""# spikeport bundle: a Loihi 2 run of artifact {manifest["artifact_digest"][:12]}

Made by spikeport {manifest["spikeport"]}. {manifest["samples"]} samples, input drive `{manifest["drive"]}`
({manifest["drive_reason"]}), partition `{manifest["partition"]}` (check-hw: {manifest["verdict"]}).

## Run it

On an INRC vLab login VM (`ssh` to it, `source /nfs/ncl/.bashrc`, `sinfo` lists the partitions):

```bash
python3.10 -m venv venv && . venv/bin/activate
python -m pip install <Intel's lava, lava-loihi release tarballs>   # /nfs/ncl/releases/lava/<version>
python -m pip install -r requirements-deploy.txt
bash run.sh                      # or: sbatch run.slurm ; bash run.sh --partition kp ; bash run.sh --simulate
```

Anywhere else (no lava-loihi), the same commands run the plan in simulation (`pip install lava-nc==0.10.0`).

## What it prints

The first line says where it runs, one of:

```
spikeport bundle: Loihi 2 (Loihi2HwCfg, lava.proc.embedded_io), partition {manifest["partition"]}
spikeport bundle: SIMULATION (Loihi2SimCfg, simulated embedded IO): lava-loihi is not installed here
```

then the run's progress, and at the end:

```
outputs: identical to the reference at every step ({manifest["samples"]} samples)
wrote result.json
```

Exit status 0 when the outputs{" and states" if manifest["states"] else ""} equal the reference's, 1 when they differ
(the line before names the output, sample, step and value of the first difference), 2 on a bad bundle.

## What crosses between host and chip

{crossings}

Every step: {traffic["values_per_step"]:,} values ({traffic["bytes_per_step"]:,} B); once a sample:
{traffic["values_per_sample"]:,} ({traffic["bytes_per_sample"]:,} B).

## Known pitfalls for this network

{pitfalls or "- none detected"}

## Bring the result back

`result.json` is a spikeport run report with the measured energy and time per step (on the chip), the per-core table
Lava's compiler printed (`hardware.compile_table`) and the memory and activity profilers' figures per core
(`hardware.chip_profile`). Copy it back beside this folder's `model.spk.h5` and run `spikeport report result.json`:
it shows the measurement beside the estimate of the same counts, and the compiler's cores beside check-hw's.
`spikeport calibrate --compile-table result.json --out mine.yaml` refits check-hw's core model on it.

## A mismatch

Send `result.json` (its `hardware.first_mismatch` names where the chip first differs), `bundle.json` and the console
output. A first mismatch in the first LIF layer's output with the bias drive points at the bias range or at the
chip's LIF parameter scaling (lava#829).
"""
