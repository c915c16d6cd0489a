"""What a run is given: one ``SourceKind`` per kind of input file, each declaring the options it takes, and the
``Source`` record a file is sniffed into once.

=================  =========================================  ========================================================
kind               the file                                   what it runs on
=================  =========================================  ========================================================
``artifact``       an artifact converted from a checkpoint    its data set's test images, or the user's own images
``nir-artifact``   an artifact converted from a NIR graph     the samples it was converted with, or others
``netx``           a lava-dl netx file                        its inputs: spikes, bias images or graded values
``netx-artifact``  an artifact converted from a netx file     its inputs, with the drive it was converted with
=================  =========================================  ========================================================

``SourceOptions`` is one record of what a run is told about its input, whatever the file; each kind declares the
options it takes (``SourceKind.takes``, by the names in ``OPTIONS``), and :func:`refuse_options` derives every
refusal from the declarations (one line naming the file, what it is, the option and its flag, the kinds that take
it), as ``runtime.targets`` does for the targets' options. Three of the targets' options depend on the file too
(the torch device, the partition, the hardware plan's input drive): a kind declares them as well.

:meth:`Source.open` looks at the file once (``file_kinds.expect_file``: its first bytes and root, an artifact's origin
with them); what a run then reads of it is read once, on first use: an artifact's graph (:attr:`Source.graph`), a
netx file's declarations (:attr:`Source.declared`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Any

from spikeport import file_kinds
from spikeport.errors import ConfigError
from spikeport.ir import artifact
from spikeport.ir.graph import Graph
from spikeport.netx.drive import InputDrive
from spikeport.netx.read import NetxDeclared, declared, graph_from_netx
from spikeport.runtime.loihi2.drive import ChipDrive
from spikeport.runtime.targets import RunOptions


@dataclass(frozen=True)
class SourceOptions:
    """What a run is told about its input file, whatever the file; a Source refuses an option its kind does not take."""

    dataset: str | None = None  # the data set whose test images an artifact runs on (None: the artifact's own)
    data_dir: str | None = None  # that data set's folder (CIFAR, ImageNet)
    input_shape: tuple[int, ...] | None = None  # a netx file's input shape (None: the one it declares)
    input_drive: InputDrive | None = None  # what feeds a netx network (None: the file's own)
    steps: int | None = None  # time steps a bias-driven image is held for
    input_layout: str = "spikeport"  # the axis order of netx inputs (netx.inputs.INPUT_LAYOUTS)
    num_layers: int | None = None  # a netx file's first layers only


DEFAULTS = RunOptions()  # a target's options as given where none are


@dataclass(frozen=True)
class Option:
    """An option only some kinds of file take: the name ``SourceKind.takes`` gives it (``api.run``'s keyword), the
    command line's flag, and what the options set in the words a refusal names it with (None where unset)."""

    name: str
    flag: str
    given: Callable[[SourceOptions, RunOptions], str | None]


OPTIONS = (
    Option("dataset", "--dataset", lambda s, o: None if s.dataset is None else f"dataset = {s.dataset!r}"),
    Option("data_dir", "--data-dir", lambda s, o: None if s.data_dir is None else f"data_dir = {s.data_dir!r}"),
    Option(
        "input_shape",
        "--input-shape",
        lambda s, o: None if s.input_shape is None else f"input_shape = {list(s.input_shape)}",
    ),
    Option(
        "input_drive",
        "--input-drive",
        lambda s, o: None if s.input_drive is None else f"input_drive = {s.input_drive.value!r}",
    ),
    Option("steps", "--steps", lambda s, o: None if s.steps is None else f"steps = {s.steps}"),
    Option(
        "input_layout",
        "--input-layout",
        lambda s, o: None if s.input_layout == "spikeport" else f"input_layout = {s.input_layout!r}",
    ),
    Option("num_layers", "--num-layers", lambda s, o: None if s.num_layers is None else f"num_layers = {s.num_layers}"),
    Option("device", "--device", lambda s, o: None if o.device == "cpu" else f"device = {o.device!r}"),
    Option("partition", "--partition", lambda s, o: None if o.parts is None else f"partition = {o.parts}"),
    Option("chip_drive", "--input-drive", lambda s, o: None if o.drive is None else f"chip_drive = {o.drive.value!r}"),
)


class Inputs(Enum):
    """What a kind of file runs on."""

    IMAGES = "images"  # a data set's test images, or the user's own images [S, H, W, C] (spikeport.data)
    SAMPLES = "samples"  # the samples a NIR graph was converted with, or others in NIR's layout (nir_import.samples)
    NETX = "netx"  # netx inputs: spikes, bias images or graded values (runtime.netx_run)


@dataclass(frozen=True)
class SourceKind:
    """A kind of file a run takes: how a refusal names it, what it runs on, and the options it takes."""

    name: str
    what: str  # the file, as a refusal names it: "<path> is <what>"
    plural: str  # the kind among those that take an option: "applies to <plural> only"
    runs_on: str  # what it runs on, and the flags that choose it
    takes: frozenset[str]  # the names of the OPTIONS it takes
    inputs: Inputs
    reads_layers: bool = False  # its graph is read from netx layers for each run's inputs (else the file holds it)

    def drive_option(self, name: str) -> str:
        """The option a drive's ``name`` sets for this kind of file (the command line has one flag for both,
        ``--input-drive``): ``input_drive`` where it takes that, else ``chip_drive`` where it takes that and ``name``
        is a ChipDrive's (the hardware plan's input drive), else ``input_drive`` (refused or an unknown name)."""
        chip = "chip_drive" in self.takes and name in {d.value for d in ChipDrive}
        return "chip_drive" if chip and "input_drive" not in self.takes else "input_drive"

    def refuse(self, path: str, asked: SourceOptions, options: RunOptions = DEFAULTS) -> None:
        """A ConfigError for the first option set that this kind does not take, naming the file, the option and its
        flag, and the kinds that take it: the one rule behind every "applies to ... only" about a file."""
        for option in OPTIONS:
            given = option.given(asked, options)
            if given is not None and option.name not in self.takes:
                takers = " and ".join(k.plural for k in KINDS if option.name in k.takes)
                raise ConfigError(
                    f"{path} is {self.what}: {given} ({option.flag}) applies to {takers} only; {self.runs_on}"
                )


ARTIFACT = SourceKind(
    "artifact",
    "an artifact converted from a checkpoint",
    "artifacts of a checkpoint",
    "it runs on its data set's test images (--dataset, --data-dir), or on your images (--inputs FILE.npy)",
    frozenset({"dataset", "data_dir", "device", "partition", "chip_drive"}),
    Inputs.IMAGES,
)
NIR_ARTIFACT = SourceKind(
    "nir-artifact",
    "an artifact converted from a NIR graph",
    "artifacts of a NIR graph",
    "it runs on the samples it was converted with, or on others (--inputs FILE.npy)",
    frozenset({"device", "partition", "chip_drive"}),
    Inputs.SAMPLES,
)
NETX = SourceKind(
    "netx",
    "a lava-dl netx file",
    "lava-dl netx files",
    "it runs on its inputs (--inputs FILE.npy), fed as --input-drive says",
    frozenset({"input_shape", "input_drive", "steps", "input_layout", "num_layers"}),
    Inputs.NETX,
    reads_layers=True,
)
NETX_ARTIFACT = SourceKind(
    "netx-artifact",
    "an artifact converted from a netx file",
    "artifacts of a netx file",
    "its layers and input shape were fixed at conversion; it runs on its inputs (--inputs FILE.npy)",
    frozenset({"input_drive", "steps", "input_layout"}),
    Inputs.NETX,
)
KINDS = (ARTIFACT, NIR_ARTIFACT, NETX, NETX_ARTIFACT)
ORIGINS = {"nir": NIR_ARTIFACT, "netx": NETX_ARTIFACT}  # an artifact's meta "source" -> its kind


@dataclass(frozen=True)
class Source:
    """A file given to a run, sniffed once into its kind; what the run reads of it is read once, on first use."""

    path: str  # as given (the run report names it so)
    kind: SourceKind

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        command: str = "run",
        accepted: frozenset[file_kinds.FileKind] = file_kinds.ARTIFACTS,
    ) -> Source:
        """The Source of the file at ``path``: an artifact or a netx file (a file of another kind, or not
        ``accepted`` by ``command``, is refused in one line naming what it is and the command that takes it); a file
        of no known kind is taken as an artifact, whose reader says what is wrong with it."""
        if not isinstance(path, (str, os.PathLike)):
            raise ConfigError(f"{command}: {path!r}: expected the path of {file_kinds.EXPECTED[accepted]}")
        sniffed = file_kinds.expect_file(path, accepted, command)
        kind = NETX if sniffed.kind is file_kinds.FileKind.NETX else ORIGINS.get(sniffed.origin or "", ARTIFACT)
        return cls(os.fspath(path), kind)

    @cached_property
    def graph(self) -> Graph:
        """The artifact's graph, read and checked once (a netx file's is read for its inputs: :meth:`file_graph`)."""
        if self.kind.reads_layers:
            raise ConfigError(f"{self.path} is {self.kind.what}: its graph is read for its inputs, not stored")
        return artifact.read(self.path)

    @cached_property
    def meta(self) -> dict[str, Any]:
        """The artifact's meta: its graph's where that was read, else read alone (digests checked, no parameters)."""
        read = self.__dict__.get("graph")
        return read.meta if isinstance(read, Graph) else artifact.read_meta(self.path)

    @cached_property
    def declared(self) -> NetxDeclared:
        """What a netx file declares about its input (its drive, shape, Input block, steps), read once."""
        return declared(self.path)

    def file_graph(self, input_shape: tuple[int, ...] | None = None) -> Graph:
        """The graph the file holds: an artifact's, or a netx file's layers for one time step and ``input_shape``
        (None: the shape it declares); ``input_shape`` is refused for a kind that does not take it."""
        self.kind.refuse(self.path, SourceOptions(input_shape=input_shape))
        if self.kind.reads_layers:
            return graph_from_netx(self.path, input_shape, input_drive=self.declared.input_drive)
        return self.graph
