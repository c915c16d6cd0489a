"""``--backend loihi2``: the hardware plan (``plan.py``) on Loihi 2 where Intel's lava-loihi is installed, and the
same plan on ``Loihi2SimCfg`` with simulated embedded IO where it is not (said on the first line of the run).

lava-loihi (the NeuroCore compiler, the Nc ProcessModels, ``lava.proc.embedded_io``, the profiler) is distributed
to INRC members only (:data:`ACCESS`). On a system that has it, the plan runs through ``Loihi2HwCfg`` with Intel's
own adapters and Lava's profiler callbacks (energy and time per step, reported as measured); the host is the one
Lava selects (``lava.utils.loihi.use_slurm_host`` or the ``SLURM`` / ``PARTITION`` environment it sets: the
bundle's run.sh does that, ``spikeport bundle``). Without it the outputs every step and the read states are still
the plan's own, bit-exact with the reference here; time and energy are not the chip's.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

import numpy as np

from spikeport.errors import BackendUnavailableError
from spikeport.ir.graph import Graph
from spikeport.run_report import RunReport
from spikeport.runtime.lava import compat
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.loihi2.plan_run import run_plan

NC_COMPILER = "lava.magma.compiler.subcompilers.nc.ncproc_compiler"  # what lava.utils.system checks
ACCESS = (
    "Loihi 2 runs need Intel's lava-loihi extension and a Loihi 2 system. Both are available to "
    "members of the Intel Neuromorphic Research Community (INRC): see "
    "https://neuromorphic.intel.com or write to inrc_interest@intel.com; members get vLab credentials, "
    "ssh to the vLab login VM (e.g. ncl-edu.research.intel-research.net), `source /nfs/ncl/.bashrc`, "
    "list boards with `sinfo`, "
    "pip-install the lava / lava-dl / lava-loihi release tarballs (/nfs/ncl/releases/lava/<version>) "
    "into their own environment and run with `SLURM=1` (Lava submits to a partition, e.g. oheogulch). "
    "Until then use --backend lava (the bit-exact CPU simulator) and `spikeport check-hw`."
)


def _has_module(name: str) -> bool:
    try:
        compat.import_lava()  # find_spec imports the parent packages: lava must import cleanly first
    except BackendUnavailableError:
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def missing() -> list[str]:
    """What this machine lacks for a Loihi 2 run (empty when lava-loihi is importable)."""
    if not _has_module("lava.magma"):
        return ["lava-nc (pip install lava-nc==0.10.0)"]
    if not _has_module(NC_COMPILER):
        return [
            f"lava-loihi (the Loihi 2 NeuroCore compiler, module {NC_COMPILER})",
            "a Loihi 2 system (reached through SLURM on INRC vLab, or Ethernet on a Kapoho Point board)",
        ]
    return []


def on_hardware() -> bool:
    """Whether runs go to Loihi 2 (lava-loihi importable) rather than to the plan's simulation."""
    return not missing()


SIMULATED = (
    "lava-loihi is not installed here: the hardware plan runs on Loihi2SimCfg with simulated embedded IO "
    "(the chip's arithmetic bit for bit, not its timing or energy)"
)


def require_loihi2() -> None:
    """Raise BackendUnavailableError at once when lava-loihi is not importable."""
    lacking = missing()
    if lacking:
        raise BackendUnavailableError(f"Loihi 2 hardware is unavailable: missing {'; '.join(lacking)}. {ACCESS}")


def run_loihi2(
    graph: Graph,
    images: np.ndarray,
    labels: np.ndarray | None = None,
    *,
    drive: ChipDrive | str | None = None,
    states: Sequence[str] = (),
    progress: bool = False,
) -> RunReport:
    """The hardware plan's run report: on Loihi 2 where lava-loihi is, else simulated (the first line says so)."""
    hardware = on_hardware()
    if not hardware and progress:
        print(f"loihi2: {SIMULATED}", file=sys.stderr, flush=True)
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    return run_plan(graph, images, labels, drive=drive, states=states, hardware=hardware, progress=say)
