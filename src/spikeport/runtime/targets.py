"""Where a graph runs: one ``Target`` per executor of the integer contract, in one registry (``TARGETS``).

===================  =========================  ==================================================================
target               executor (in its reports)  needs
===================  =========================  ==================================================================
``reference``        ``reference``              numpy: the golden model (runtime/sim/reference.py)
``reference-torch``  ``reference-torch-<dev>``  torch; ``device="cuda"`` a CUDA GPU (runtime/sim/torch_reference.py)
``lava``             ``lava-fixed_pt``          lava-nc: real Lava processes on the CPU (runtime/lava/)
``loihi2``           ``loihi2``                 Intel's lava-loihi and a Loihi 2 system (runtime/loihi2/)
===================  =========================  ==================================================================

Every target turns a graph and its inputs into a typed ``RunReport``; asked to record (``RunOptions.record``),
the report also holds every spiking layer's spikes (``runtime.recording``), which is what comparisons and the
predictions of a network without a readout read. :func:`run_graph` is the one way to run: a target, an
optional comparison with the reference, an optional readout. A new executor is one ``Target`` added here. Under
torchrun it shards the samples of a target that ``shards`` over the ranks (``runtime.distributed``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from spikeport.errors import ConfigError, SpikeportError, unknown_choice
from spikeport.ir.graph import Graph
from spikeport.run_report import RunReport
from spikeport.runtime.compare import compare_runs
from spikeport.runtime.distributed import Ranks, run_sharded
from spikeport.runtime.loihi2.drive import ChipDrive


@dataclass(frozen=True)
class RunOptions:
    """How to run, whatever the target."""

    batch_size: int = 64  # samples per batch of the reference simulators
    progress: bool = False  # a progress bar on a terminal
    record: bool = False  # keep every spiking layer's spikes in ``RunReport.recording``
    device: str = "cpu"  # reference-torch: a torch device (cpu, cuda, cuda:N)
    parts: int | None = None  # lava: the network cut into this many Lava networks run one after another
    drive: str | None = None  # loihi2: how the hardware plan feeds the input (bias | adapter; None: the plan's default)
    read_states: tuple[str, ...] = ()  # loihi2: LIF layers whose u / v the plan reads after each sample


@dataclass(frozen=True)
class RunInputs:
    """What runs: the inputs (images [S, H, W, C], or spikes / integers [S, T, ...] for a netx input), their
    labels, and where they come from (copied into the report)."""

    data: np.ndarray
    labels: np.ndarray | None = None
    artifact: str | None = None  # the file that ran
    artifact_digest: str | None = None
    dataset: str | None = None  # the data set the inputs are from (None: given by the user)


Execute = Callable[[Graph, np.ndarray, "np.ndarray | None", RunOptions], RunReport]


@dataclass(frozen=True)
class Target:
    """One executor of the integer contract."""

    name: str
    executor: str  # the executor its reports name (``<dev>``: the torch device type)
    description: str
    needs: str  # what a machine needs to run it
    check: Callable[[RunOptions], None]  # raises at once (before anything is loaded) where it cannot run
    execute: Execute  # (graph, inputs, labels, options) -> RunReport
    default_samples: int | None = None  # test images of an artifact's data set it runs by default (None: all)
    shards: bool = False  # under torchrun, each rank runs a share of the samples (runtime.distributed)

    def available(self, options: RunOptions = RunOptions()) -> str | None:
        """None where this target can run here with ``options``, else why not."""
        try:
            self.check(options)
        except (SpikeportError, ImportError) as err:
            return str(err)
        return None

    def run(self, graph: Graph, inputs: RunInputs, options: RunOptions = RunOptions()) -> RunReport:
        """The run report of ``inputs`` on this target (``recording`` kept only with ``options.record``)."""
        self.check(options)
        report = self.execute(graph, inputs.data, inputs.labels, options)
        model = {**(report.model or {}), "dataset": inputs.dataset}
        out = replace(report, model=model, artifact=inputs.artifact, artifact_digest=inputs.artifact_digest)
        out.recording = report.recording if options.record else None
        return out


def run_graph(
    graph: Graph,
    inputs: RunInputs,
    target: Target,
    options: RunOptions = RunOptions(),
    compare: str | None = None,
    readout: Callable[[RunReport], RunReport] | None = None,
) -> RunReport:
    """``inputs`` on ``target``; with ``compare="reference"`` also on the reference simulator, and the
    layer-by-layer comparison in ``RunReport.compare`` (a no-op on the reference itself). ``readout`` reads the
    predictions of a network without a readout node from the recorded spikes (netx files). Under torchrun (two or
    more processes) the samples are sharded over the ranks of a target that ``shards`` (``runtime.distributed``):
    every rank returns the report of the whole run, equal to one process's."""
    if compare not in (None, "reference"):
        raise unknown_choice("compare", compare, ("reference",))
    compared = compare is not None and target.name != "reference"
    recorded = replace(options, record=options.record or compared or readout is not None)

    def finish(report: RunReport) -> RunReport:
        if readout is not None:
            report = readout(report)
        if compared:
            ref = TARGETS["reference"].run(graph, inputs, replace(recorded, device="cpu", progress=False, parts=None))
            if readout is not None:
                ref = readout(ref)
            report = replace(report, compare=compare_runs(graph, report, ref))
        if not options.record:
            report.recording = None
        return report

    ranks = Ranks.from_env()
    if ranks is None:
        return finish(target.run(graph, inputs, recorded))
    if not target.shards:
        sharded = ", ".join(t.name for t in TARGETS.values() if t.shards)
        raise ConfigError(
            f"torchrun shards the samples of the {sharded} targets only; run the {target.name} target in one process"
        )

    def shard(first: int, end: int, device: str) -> RunReport:
        labels = None if inputs.labels is None else inputs.labels[first:end]
        part = replace(inputs, data=inputs.data[first:end], labels=labels)
        return target.run(graph, part, replace(recorded, device=device, progress=recorded.progress and ranks.rank == 0))

    return run_sharded(ranks, len(inputs.data), options.device, shard, finish)


def target(name: str, device: str = "cpu") -> Target:
    """The target called ``name`` (``reference`` on a ``device`` other than the CPU is ``reference-torch``);
    an unknown name is refused here, naming the known ones."""
    if name == "reference" and device != "cpu":
        name = "reference-torch"
    if name not in TARGETS:
        raise unknown_choice("backend", name, TARGETS)
    return TARGETS[name]


# ---- the targets ----------------------------------------------------------------------------------------


def _cpu_only(name: str) -> Callable[[RunOptions], None]:
    def check(options: RunOptions) -> None:
        if options.device != "cpu":
            raise ConfigError(
                f"device = {options.device!r} applies to the reference-torch target only (backend = {name!r})"
            )
        _whole(name, options)

    return check


def _whole(name: str, options: RunOptions) -> None:
    """Only Lava runs a network in parts (runtime/lava/partition.py); only the hardware plan has an input drive."""
    if options.parts is not None and name != "lava":
        raise ConfigError(f"parts = {options.parts} applies to the lava target only (backend = {name!r})")
    if name != "loihi2" and (options.drive is not None or options.read_states):
        raise ConfigError(f"input drive and read states apply to the loihi2 target only (backend = {name!r})")


def _run_reference(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    from spikeport.runtime.sim.reference import ReferenceSimulator

    return ReferenceSimulator(graph).run(
        x, y, batch_size=options.batch_size, progress=options.progress, record=options.record
    )


def _check_torch(options: RunOptions) -> None:
    try:
        from spikeport.runtime.sim.torch_reference import torch_device
    except ImportError as err:
        raise ConfigError(f"the reference-torch target needs torch ({err})") from None
    _whole("reference-torch", options)
    torch_device(options.device)  # no such device: a ConfigError naming it


def _run_torch_reference(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    if options.record:
        raise ConfigError("the reference-torch target does not record spikes; compare with --backend reference")
    from spikeport.runtime.sim.torch_reference import TorchReferenceSimulator

    sim = TorchReferenceSimulator(graph, options.device)
    return sim.run(x, y, batch_size=options.batch_size, progress=options.progress)


def _check_lava(options: RunOptions) -> None:
    _cpu_only("lava")(options)
    _check_lava_options(options)
    from spikeport.runtime.lava import compat

    compat.import_lava()  # BackendUnavailableError naming what is missing


def _check_lava_options(options: RunOptions) -> None:
    if options.parts is not None and options.parts < 1:
        raise ConfigError(f"parts = {options.parts}: expected a positive integer (the Lava networks to run in turn)")


def _run_lava(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    if options.parts is not None:
        from spikeport.runtime.lava.partition import run_lava_partitioned

        return run_lava_partitioned(graph, x, y, parts=options.parts, progress=options.progress)
    from spikeport.runtime.lava.run import run_lava

    return run_lava(graph, x, y, progress=options.progress)


def _check_loihi2(options: RunOptions) -> None:
    _cpu_only("loihi2")(options)
    if options.record:
        raise ConfigError(
            "the loihi2 target reads only the plan's outputs and chosen states (no per-layer recorders on a chip); "
            "its run compares them with the reference itself: drop --compare, or use --backend lava"
        )
    if options.drive is not None and options.drive not in [d.value for d in ChipDrive]:
        raise unknown_choice("input drive", options.drive, [d.value for d in ChipDrive])
    from spikeport.runtime.lava import compat

    compat.import_lava()  # lava-nc at least; lava-loihi makes it the chip, else the plan's simulation


def _run_loihi2(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    from spikeport.runtime.loihi2.backend import run_loihi2

    return run_loihi2(graph, x, y, drive=options.drive, states=options.read_states, progress=options.progress)


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "reference",
            "reference",
            "the reference integer simulator (numpy, one thread per core): the golden model",
            "numpy",
            _cpu_only("reference"),
            _run_reference,
            shards=True,
        ),
        Target(
            "reference-torch",
            "reference-torch-<device>",
            "the reference's integers in torch on any device (float64 holding exact integers)",
            "torch; a CUDA GPU for --device cuda",
            _check_torch,
            _run_torch_reference,
            shards=True,
        ),
        Target(
            "lava",
            "lava-fixed_pt",
            "Lava's CPU simulator, Loihi2SimCfg(select_tag='fixed_pt'): real Lava processes",
            "lava-nc",
            _check_lava,
            _run_lava,
            default_samples=200,  # Lava on a CPU runs a few samples a second; the reference runs all
        ),
        Target(
            "loihi2",
            "loihi2",
            "the hardware plan on Loihi 2 through Loihi2HwCfg (energy measured by Lava's profiler), or on "
            "Loihi2SimCfg with simulated embedded IO where lava-loihi is absent",
            "lava-nc; lava-loihi (INRC) and a Loihi 2 system for the chip",
            _check_loihi2,
            _run_loihi2,
            default_samples=200,
        ),
    )
}


def run_recorded(
    graph: Graph, data: np.ndarray, target_name: str = "reference", labels: np.ndarray | None = None, **options: Any
) -> RunReport:
    """``data`` on the target ``target_name`` with every spiking layer recorded (``report.recording``): the
    short form of ``TARGETS[name].run(graph, RunInputs(data, labels), RunOptions(record=True, **options))``."""
    return target(target_name).run(graph, RunInputs(data, labels), RunOptions(record=True, **options))
