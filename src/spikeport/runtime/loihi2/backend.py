"""``--backend loihi2``: the Lava network on Loihi 2 (``Loihi2HwCfg``) where Intel's lava-loihi is present.

lava-loihi (the NeuroCore compiler and the Nc ProcessModels) is distributed to INRC members only; without
it (and a Loihi 2 system reachable through SLURM or Ethernet) :func:`require_loihi2` fails at once,
before anything is loaded or built, saying what is missing and how access works (reference/lava.md 3).

Where it is present, the network is the same one the Lava CPU backend builds: standard processes take
their Nc models; spikeport's own processes (graded-pixel conv, attention cores) keep their fixed_pt
ProcessModels on the host. Energy, power and time per step are measured with Lava's
``Loihi2HWProfiler`` when lava-loihi ships it, and reported as "measured (Loihi2HWProfiler)".

Not verified on hardware (no Loihi 2 system was available to this project): host<->chip traffic may need
explicit adapters (``eio.spike.PyToNxAdapter`` / ``NxToPyAdapter``) at the boundaries that
``spikeport check-hw`` lists, and Nc LIF parameters may need the scaling noted in lava#829.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from typing import Any

import numpy as np

from spikeport.errors import BackendUnavailableError
from spikeport.ir.graph import Graph
from spikeport.run_report import RunReport
from spikeport.runtime.lava import backend as LB, compat
from spikeport.runtime.lava.run import run_lava

EXECUTOR = "loihi2"
NC_COMPILER = "lava.magma.compiler.subcompilers.nc.ncproc_compiler"  # what lava.utils.system checks
PROFILER = "lava.utils.loihi2_profiler_api"
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


def require_loihi2() -> None:
    """Raise BackendUnavailableError at once when lava-loihi is not importable."""
    lacking = missing()
    if lacking:
        raise BackendUnavailableError(f"--backend loihi2 is unavailable: missing {'; '.join(lacking)}. {ACCESS}")


def hw_config() -> Any:  # lava's Loihi2HwCfg (untyped)
    """Loihi2HwCfg that prefers Nc models and falls back to spikeport's fixed_pt host models."""
    require_loihi2()
    from lava.magma.core.run_configs import Loihi2HwCfg

    return Loihi2HwCfg(select_tag="fixed_pt")


class EnergyProbe:
    """Lava's Loihi2HWProfiler energy / power / time probes, when lava-loihi ships them (else inactive)."""

    def __init__(self, run_cfg: Any, num_steps: int) -> None:
        self.profiler: Any = None
        self.reason = ""
        if not _has_module(PROFILER):
            self.reason = f"{PROFILER} not importable"
            return
        from lava.utils.profiler import Profiler

        self.profiler = Profiler.init(run_cfg)
        self.profiler.energy_probe(num_steps=num_steps)
        self.profiler.execution_time_probe(num_steps=num_steps)

    def results(self, samples: int) -> dict[str, Any]:
        """Measured figures (the profiler is valid for one run() call: run the network in one piece)."""
        if self.profiler is None:
            return {"available": False, "reason": self.reason}
        p = self.profiler
        energy, power = dict(p.energy_breakdown()), dict(p.power_breakdown())
        per_step = np.asarray(p.execution_time, dtype=float)
        return {
            "available": True,
            "label": "measured (Loihi2HWProfiler)",
            "energy_breakdown_uJ": {k: float(v) for k, v in energy.items()},
            "power_breakdown_W": {k: float(v) for k, v in power.items()},
            # None, not NaN, when the profiler has no total: a run report holds finite numbers only
            "energy_per_sample_uJ": float(energy["total"]) / max(samples, 1) if "total" in energy else None,
            "time_per_step_us": float(per_step.mean()) if per_step.size else None,
            "note": "board-level power: subtract idle chips on multi-chip boards (see lava-dl benchmarks)",
        }


def run_loihi2(graph: Graph, images: np.ndarray, labels: np.ndarray | None = None) -> RunReport:
    """The run report of ``lava.run.run_lava`` but on Loihi 2, in one run() so the profiler covers it."""
    require_loihi2()

    run_cfg = hw_config()
    R, flush = LB.reset_interval(graph.T), max(LB.depths(graph).values()) + 1
    probe = EnergyProbe(run_cfg, num_steps=len(images) * R + flush)
    report = run_lava(graph, images, labels, chunk_samples=len(images) + flush // R + 1, run_cfg=run_cfg)
    return replace(report, executor=EXECUTOR, energy_measured=probe.results(len(images)))
