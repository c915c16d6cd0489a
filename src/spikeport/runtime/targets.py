"""Where a graph runs: one ``Target`` per executor of the integer contract, in one registry (``TARGETS``).

===================  ============================  ===============================================================
target               executors (in its reports)    needs
===================  ============================  ===============================================================
``reference``        ``reference``                 numpy: the golden model (runtime/sim/reference.py)
``reference-torch``  ``reference-torch-<dev>``     torch; ``device="cuda"`` a CUDA GPU (runtime/sim/torch_reference.py)
``lava``             ``lava-fixed_pt``             lava-nc: real Lava processes on the CPU (runtime/lava/)
``loihi2``           ``loihi2`` / ``loihi2-sim``   lava-loihi and a Loihi 2 system, else the plan's simulation on
                                                   lava-nc (runtime/loihi2/)
===================  ============================  ===============================================================

Every target turns a graph and its inputs into a typed ``RunReport``; asked to record (``RunOptions.record``),
the report also holds every spiking layer's spikes (``runtime.recording``), which is what comparisons and the
predictions of a network without a readout read. :func:`run_graph` is the one way to run: a target, an
optional comparison with the reference, an optional readout. A new executor is one ``Target`` added here.

``RunOptions`` is one record of every target's options; each target declares which it takes in its
``Capabilities``, and :func:`refuse_options` derives every refusal from the declarations (one line naming the
option and the targets that take it), so no rule names a target: the CLI's rules, the report's words for an
executor (``describe_executor``) and the torchrun sharding read the records too.
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
    """How to run, whatever the target; a target refuses an option its ``Capabilities`` do not take."""

    batch_size: int = 64  # samples per batch of the reference simulators (a streaming target: its comparison's)
    progress: bool = False  # a progress bar on a terminal
    record: bool = False  # keep every spiking layer's spikes in ``RunReport.recording`` (Capabilities.records)
    device: str = "cpu"  # a torch device: cpu, cuda, cuda:N (Capabilities.devices for any but the CPU)
    parts: int | None = None  # the network cut into this many networks run one after another (.partitions)
    drive: ChipDrive | None = None  # how the hardware plan feeds the input (None: the plan's default; .chip_drive)
    read_states: tuple[str, ...] = ()  # LIF layers whose u / v the hardware plan reads after each sample (.chip_drive)


@dataclass(frozen=True)
class Capabilities:
    """What a target takes and how it runs, beyond a graph and its inputs. Each option of ``RunOptions`` that not
    every target takes is one flag here (``OPTIONS`` says which); the rest say how the target runs."""

    records: bool = True  # RunOptions.record: every spiking layer's spikes (--compare, a netx file's readout)
    devices: bool = False  # RunOptions.device other than the CPU (a torch device)
    partitions: bool = False  # RunOptions.parts: the network cut into networks run one after another
    chip_drive: bool = False  # RunOptions.drive and .read_states: the hardware plan's input drive and read states
    streams: bool = False  # one sample at a time: RunOptions.batch_size sizes only a comparison's reference run
    # compares its outputs (and read states) with the reference itself, every run: compare="reference" asks for nothing
    # more (RunReport.hardware holds the verdict; RunReport.identical reads it)
    self_compares: bool = False
    shards: bool = False  # under torchrun each rank runs a share of the samples (runtime.distributed)
    hardware: str = ""  # what it needs to run on a chip; where that is missing it runs its simulation (an executor)


@dataclass(frozen=True)
class Option:
    """An option of ``RunOptions`` that only some targets take: the flag of ``Capabilities`` that takes it, what the
    options set in the words a refusal names it with (None where they leave it unset), and the command line's flag."""

    taken: Callable[[Capabilities], bool]
    given: Callable[[RunOptions], str | None]
    flag: Callable[[RunOptions], str]


OPTIONS = (
    Option(
        lambda c: c.devices, lambda o: None if o.device == "cpu" else f"device = {o.device!r}", lambda o: "--device"
    ),
    Option(
        lambda c: c.partitions, lambda o: None if o.parts is None else f"parts = {o.parts}", lambda o: "--partition"
    ),
    Option(
        lambda c: c.chip_drive,
        lambda o: None if o.drive is None else f"drive = {str(o.drive.value)!r}",
        lambda o: f"--input-drive {o.drive.value if o.drive else ''}",
    ),
    Option(
        lambda c: c.chip_drive,
        lambda o: f"read_states = {list(o.read_states)}" if o.read_states else None,
        lambda o: "--read-state",
    ),
    Option(
        lambda c: c.records,
        lambda o: "record = True (every spiking layer's spikes recorded)" if o.record else None,
        lambda o: "--compare reference, or a netx file's readout",
    ),
)


@dataclass(frozen=True)
class Executor:
    """An executor a target's run reports name (``RunReport.executor``; ``<device>``: the torch device type), and
    what it is in words (the report's "counts by")."""

    name: str
    description: str

    def names(self, executor: str) -> bool:
        """Whether a run report's ``executor`` is this one's (any device for a ``<device>`` name)."""
        stem, _, rest = self.name.partition("<")
        return executor == self.name if not rest else executor.startswith(stem) and len(executor) > len(stem)


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
    """One executor of the integer contract: what it is, what it takes (``caps``) and how it runs."""

    name: str
    description: str
    needs: str  # what a machine needs to run it
    executors: tuple[Executor, ...]  # what its reports name (a hardware target: the chip's, then its simulation's)
    caps: Capabilities
    ready: Callable[[RunOptions], None]  # raises where this machine cannot run it, or an option's value is wrong
    execute: Execute  # (graph, inputs, labels, options) -> RunReport
    default_samples: int | None = None  # test images of an artifact's data set it runs by default (None: all)

    def check(self, options: RunOptions = RunOptions()) -> None:
        """Raise at once, before anything is loaded, where this target cannot run with ``options``: an option it
        does not take (``refuse_options``), then what the machine lacks (``ready``)."""
        refuse_options(self, options)
        self.ready(options)

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


def refuse_options(target: Target, options: RunOptions) -> None:
    """A ConfigError for the first option ``target`` does not take, naming the option and the targets that take
    it: the one rule behind every "applies to ... only" (the targets' ``Capabilities``)."""
    for option in OPTIONS:
        given = option.given(options)
        if given is not None and not option.taken(target.caps):
            takers = " | ".join(t.name for t in TARGETS.values() if option.taken(t.caps))
            raise ConfigError(
                f"{given} ({option.flag(options)}) applies to {taken_by(option.taken)} only (backend = "
                f"{target.name!r}): run with --backend {takers}"
            )


def taken_by(capability: Callable[[Capabilities], bool]) -> str:
    """The targets whose capabilities have ``capability``, in words: "the lava target", "the a and b targets"."""
    names = [t.name for t in TARGETS.values() if capability(t.caps)]
    if len(names) == 1:
        return f"the {names[0]} target"
    return f"the {', '.join(names[:-1])} and {names[-1]} targets" if names else "no target"


def describe_executor(executor: str) -> str | None:
    """A run report's ``executor`` in words (its target's ``Executor`` record); None where no target writes it."""
    found = (e for t in TARGETS.values() for e in t.executors if e.names(executor))
    return next((e.description for e in found), None)


def run_graph(
    graph: Graph,
    inputs: RunInputs,
    target: Target,
    options: RunOptions = RunOptions(),
    compare: str | None = None,
    readout: Callable[[RunReport], RunReport] | None = None,
) -> RunReport:
    """``inputs`` on ``target``; with ``compare="reference"`` also on the reference simulator, and the
    layer-by-layer comparison in ``RunReport.compare`` (a no-op on the reference itself, and on a target that
    compares itself with the reference every run: the hardware plan, whose verdict is ``RunReport.hardware``'s).
    ``readout`` reads the predictions of a network without a readout node from the recorded spikes (netx files).
    Under torchrun (two or more processes) the samples are sharded over the ranks of a target that ``shards``
    (``runtime.distributed``): every rank returns the report of the whole run, equal to one process's."""
    if compare not in (None, "reference"):
        raise unknown_choice("compare", compare, ("reference",))
    compared = compare is not None and target.name != "reference" and not target.caps.self_compares
    recorded = replace(options, record=options.record or compared or readout is not None)

    def finish(report: RunReport) -> RunReport:
        if readout is not None:
            report = readout(report)
        if compared:
            ref = TARGETS["reference"].run(graph, inputs, RunOptions(batch_size=options.batch_size, record=True))
            if readout is not None:
                ref = readout(ref)
            report = replace(report, compare=compare_runs(graph, report, ref))
        if not options.record:
            report.recording = None
        return report

    ranks = Ranks.from_env()
    if ranks is None:
        return finish(target.run(graph, inputs, recorded))
    if not target.caps.shards:
        raise ConfigError(
            f"torchrun shards the samples of {taken_by(lambda c: c.shards)} only; run the {target.name} target in one "
            "process"
        )

    def shard(first: int, end: int, device: str) -> RunReport:
        labels = None if inputs.labels is None else inputs.labels[first:end]
        part = replace(inputs, data=inputs.data[first:end], labels=labels)
        return target.run(graph, part, replace(recorded, device=device, progress=recorded.progress and ranks.rank == 0))

    return replace(run_sharded(ranks, len(inputs.data), options.device, shard, finish), ranks=ranks.world)


def target(name: str, device: str = "cpu") -> Target:
    """The target called ``name`` (``reference`` on a ``device`` other than the CPU is ``reference-torch``);
    an unknown name is refused here, naming the known ones."""
    if name == "reference" and device != "cpu":
        name = "reference-torch"
    if name not in TARGETS:
        raise unknown_choice("backend", name, TARGETS)
    return TARGETS[name]


# ---- the targets ----------------------------------------------------------------------------------------


def _run_reference(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    from spikeport.runtime.sim.reference import ReferenceSimulator

    return ReferenceSimulator(graph).run(
        x, y, batch_size=options.batch_size, progress=options.progress, record=options.record
    )


def _ready_torch(options: RunOptions) -> None:
    try:
        from spikeport.runtime.sim.torch_reference import torch_device
    except ImportError as err:
        raise ConfigError(f"the reference-torch target needs torch ({err})") from None
    torch_device(options.device)  # no such device: a ConfigError naming it


def _run_torch_reference(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    from spikeport.runtime.sim.torch_reference import TorchReferenceSimulator

    sim = TorchReferenceSimulator(graph, options.device)
    return sim.run(x, y, batch_size=options.batch_size, progress=options.progress)


def _ready_lava(options: RunOptions) -> None:
    if options.parts is not None and options.parts < 1:
        raise ConfigError(f"parts = {options.parts}: expected a positive integer (the Lava networks to run in turn)")
    from spikeport.runtime.lava import compat

    compat.import_lava()  # BackendUnavailableError naming what is missing


def _run_lava(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    if options.parts is not None:
        from spikeport.runtime.lava.partition import run_lava_partitioned

        return run_lava_partitioned(graph, x, y, parts=options.parts, progress=options.progress)
    from spikeport.runtime.lava.run import run_lava

    return run_lava(graph, x, y, progress=options.progress)


def _ready_loihi2(options: RunOptions) -> None:
    if options.drive is not None:
        ChipDrive.of(options.drive)  # a name given as a plain string: a ConfigError listing the drives
    from spikeport.runtime.lava import compat

    compat.import_lava()  # lava-nc at least; lava-loihi makes it the chip, else the plan's simulation
    from spikeport.runtime.loihi2.backend import on_hardware

    if Ranks.from_env() is not None and on_hardware():
        raise ConfigError(
            "torchrun shards the loihi2 target's simulation only: on Loihi 2 (lava-loihi is installed here) the chip's "
            "measured time, energy and compile table describe one run, so run it in one process"
        )


def _run_loihi2(graph: Graph, x: np.ndarray, y: np.ndarray | None, options: RunOptions) -> RunReport:
    from spikeport.runtime.loihi2.backend import run_loihi2

    return run_loihi2(graph, x, y, drive=options.drive, states=options.read_states, progress=options.progress)


def _ready(options: RunOptions) -> None:
    """Nothing beyond numpy."""


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            "reference",
            "the reference integer simulator (numpy, one thread per core): the golden model",
            "numpy",
            (Executor("reference", "the reference integer simulator (numpy, spikeport's fixed-point contract)"),),
            Capabilities(shards=True),
            _ready,
            _run_reference,
        ),
        Target(
            "reference-torch",
            "the reference's integers in torch on any device (float64 holding exact integers)",
            "torch; a CUDA GPU for --device cuda",
            (
                Executor(
                    "reference-torch-<device>",
                    "the reference's integers in torch (float64 holding exact integers, counted on the device)",
                ),
            ),
            Capabilities(records=False, devices=True, shards=True),
            _ready_torch,
            _run_torch_reference,
        ),
        Target(
            "lava",
            "Lava's CPU simulator, Loihi2SimCfg(select_tag='fixed_pt'): real Lava processes",
            "lava-nc",
            (Executor("lava-fixed_pt", "the Lava CPU simulator (Loihi2SimCfg, select_tag fixed_pt)"),),
            Capabilities(partitions=True, streams=True, shards=True),
            _ready_lava,
            _run_lava,
            default_samples=200,  # Lava on a CPU runs a few samples a second; the reference runs all
        ),
        Target(
            "loihi2",
            "the hardware plan on Loihi 2 through Loihi2HwCfg (energy measured by Lava's profiler), or on "
            "Loihi2SimCfg with simulated embedded IO where lava-loihi is absent; it compares its outputs with the "
            "reference itself (a chip has no per-layer recorders)",
            "lava-nc",
            (
                Executor("loihi2", "Loihi 2 hardware through lava-loihi"),
                Executor(
                    "loihi2-sim",
                    "the hardware plan on the Lava CPU simulator (Loihi2SimCfg, simulated embedded IO; lava-loihi "
                    "absent)",
                ),
            ),
            Capabilities(
                records=False,
                chip_drive=True,
                streams=True,
                self_compares=True,
                shards=True,  # its simulation; on the chip it runs in one process (_ready_loihi2)
                hardware="lava-loihi (INRC) and a Loihi 2 system",
            ),
            _ready_loihi2,
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
