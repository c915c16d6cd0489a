"""An artifact or a lava-dl netx file run on a target -> a RunReport; the targets, and this process's rank."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from spikeport import file_kinds
from spikeport.api._keywords import _renamed
from spikeport.api.choices import Backend, ChipDriveName, Dataset, InputDriveName, InputLayout
from spikeport.errors import ArtifactError, ConfigError, DataError
from spikeport.netx.drive import InputDrive
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.drive import ChipDrive

if TYPE_CHECKING:
    import numpy as np

    from spikeport.runtime.sources import Source, SourceOptions
    from spikeport.runtime.targets import RunOptions, Target
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint, _LazyModule

    np = _LazyModule("numpy")
    RunOptions, Target = _hint("runtime.targets.RunOptions"), _hint("runtime.targets.Target")
    Source, SourceOptions = _hint("runtime.sources.Source"), _hint("runtime.sources.SourceOptions")


def run(
    artifact: str | os.PathLike[str] | Source,
    backend: Backend = "reference",
    compare: Literal["reference"] | None = None,
    *,
    samples: int | None = None,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    batch_size: int = 64,
    inputs: str | os.PathLike[str] | np.ndarray | None = None,
    input_shape: Sequence[int] | None = None,
    input_drive: InputDrive | InputDriveName | None = None,
    steps: int | None = None,
    input_layout: InputLayout = "spikeport",
    progress: bool = False,
    num_layers: int | None = None,
    device: str = "cpu",
    partition: int | None = None,
    read_states: Sequence[str] = (),
    parts: int | None = None,
    chip_drive: ChipDrive | ChipDriveName | None = None,
) -> RunReport:
    """Run an artifact (``.spk.h5``) or a lava-dl netx file (a path, or its :func:`source`) on a target (``backend``:
    a name of ``runtime.targets.TARGETS``) and report. Each kind of file declares the options it takes
    (``runtime.sources``); another is refused in one line naming it.

    An artifact runs on the first ``samples`` test images of its data set (``dataset`` / ``data_dir`` override the
    artifact's; default: all on the reference simulator, 200 on Lava), or on ``inputs``: your own images (an .npy
    file or an array [S, H, W, C], channels-last and normalised as :func:`test_images` returns them; no labels, so
    predictions and no accuracy). One converted from a NIR graph runs on the samples it was converted with, or on
    ``inputs``. A netx file (or an artifact converted from one) runs on ``inputs``: ``input_drive="spikes"`` 0/1
    spikes [S, T, *input_shape]; ``"bias"`` integer images [S, H, W, C] held as the input neuron's bias for ``steps``
    steps (as lava-dl's tests feed PilotNet and TinyNet); ``"graded"`` integers [S, T, *input_shape] into an SDNN input
    layer; None: the file's own (docs/netx.md). ``num_layers``: the file's first layers only; ``input_layout``
    ``slayer`` / ``netx``: their axis order (``netx.inputs.to_spikeport_layout``).
    ``compare="reference"`` also runs the reference on the same inputs: the layer-by-layer comparison is
    ``RunReport.compare`` (``identical``: the same spikes every step and the same predictions). ``batch_size``: the
    reference simulators' batch. ``device``: the ``reference-torch`` target's torch device (``cuda[:N]``: a GPU;
    ``backend="reference"`` on another device than ``cpu`` is that target). ``partition`` (``parts``: its old name):
    the network cut into that many Lava networks run in turn, each fed the previous one's recorded spikes (memory
    bounded by the largest; docs/lava_backend.md). Under torchrun every target shards the samples over the ranks and
    every rank returns the whole run's report (``runtime.distributed``; :func:`rank`). On ``loihi2`` an artifact runs
    as its hardware plan (docs/loihi2.md): ``chip_drive`` ``bias`` or ``adapter`` (:class:`ChipDrive`; None: the
    plan's; as ``input_drive``, its old name, deprecated) and ``read_states``, LIF layers whose u / v are compared."""
    from spikeport.runtime.sources import Inputs, Source, SourceOptions
    from spikeport.runtime.targets import RunOptions

    source = artifact if isinstance(artifact, Source) else Source.open(artifact, "run")  # sniffed once
    chosen = target(backend, device)
    if samples is not None and samples < 1:
        raise ConfigError(f"samples = {samples}: expected a positive integer (or None for the default)")
    if batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}: expected a positive integer")
    if input_drive is not None and source.kind.drive_option(_name(input_drive)) == "chip_drive":
        chip_drive = _renamed("input_drive (a chip drive)", ChipDrive.of(_name(input_drive)), "chip_drive", chip_drive)
        input_drive = None
    options = RunOptions(
        batch_size=batch_size,
        progress=progress,
        device=device,
        parts=_renamed("parts", parts, "partition", partition),
        drive=None if chip_drive is None else ChipDrive.of(chip_drive),
        read_states=tuple(read_states),
    )
    shape = tuple(int(s) for s in input_shape) if input_shape else None
    drive = None if input_drive is None else InputDrive.of(input_drive)
    how = SourceOptions(dataset, data_dir, shape, drive, steps, input_layout, num_layers)
    source.kind.refuse(source.path, how, options)  # an option this kind of file does not take
    chosen.check(options)  # fails at once, before the file is read (no GPU, no Lava, no Loihi 2)
    if source.kind.inputs is Inputs.NETX:
        from spikeport.runtime.netx_run import run_network

        return run_network(source, chosen, options, compare, inputs, how, samples)
    return _run_artifact(source, chosen, options, compare, samples, how, inputs)


def source(path: str | os.PathLike[str]) -> Source:
    """What the file at ``path`` is, for :func:`run` (``runtime.sources.Source``): an artifact converted from a
    checkpoint, a NIR graph or a netx file, or a lava-dl netx file, sniffed once (its kind declares the options it
    takes); a file of another kind is refused, naming it and the command that takes it."""
    from spikeport.runtime.sources import Source

    return Source.open(path, "run")


def _name(drive: InputDrive | ChipDrive | str) -> str:
    return drive.value if isinstance(drive, (InputDrive, ChipDrive)) else drive


def _run_artifact(
    source: Source,
    target: Target,
    options: RunOptions,
    compare: str | None,
    samples: int | None,
    how: SourceOptions,
    given: str | os.PathLike[str] | np.ndarray | None = None,
) -> RunReport:
    from spikeport.runtime.targets import RunInputs, run_graph

    graph = source.graph
    if not graph.by_op("readout"):  # converted from a checkpoint: class scores are what it is run for
        raise ArtifactError(source.path, "/nodes", "has no readout node (the class scores); re-run `spikeport convert`")
    count = samples if samples is not None else target.default_samples
    x, y = artifact_inputs(source, count, how.dataset, how.data_dir, given)
    dataset = graph.meta.get("dataset") if given is None else None  # given: the user's own
    inputs = RunInputs(x, y, artifact=source.path, artifact_digest=graph.digest, dataset=dataset)
    return run_graph(graph, inputs, target, options, compare)


def own_images(given: str | os.PathLike[str] | np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The user's images for an artifact whose input node has ``shape`` (H, W, C): an array or an .npy file holding
    [S, H, W, C] (one image [H, W, C] is taken as S = 1), real numbers as the artifact's data set gives them
    (:func:`test_images`); anything else is refused in one line naming the file and the shape expected."""
    import numpy

    where = str(given) if isinstance(given, (str, os.PathLike)) else "inputs"
    if isinstance(given, (str, os.PathLike)):
        try:
            raw = numpy.load(given, allow_pickle=False)
        except (OSError, ValueError, EOFError) as err:
            raise DataError(f"{given}: cannot read the images as a NumPy .npy array ({err})") from None
    else:
        raw = numpy.asarray(given)
    want = tuple(int(s) for s in shape)
    x = raw[None] if raw.shape == want else raw
    if x.ndim != len(want) + 1 or tuple(x.shape[1:]) != want or len(x) == 0:
        layout = ", ".join(str(s) for s in want)
        hint = ""
        if x.ndim == len(want) + 1 and tuple(x.shape[1:]) == (want[-1], *want[:-1]):
            hint = " (these are channels-first: numpy.moveaxis(images, 1, -1) makes them channels-last)"
        raise DataError(
            f"{where}: images of shape {tuple(raw.shape)}; this artifact takes [S, {layout}] (S images [H, W, C], "
            f"channels-last, as spikeport.api.test_images returns them){hint}"
        )
    if not numpy.issubdtype(x.dtype, numpy.number) or numpy.issubdtype(x.dtype, numpy.complexfloating):
        raise DataError(
            f"{where}: images of dtype {x.dtype}; expected real numbers (pixels as the data set gives them)"
        )
    if not numpy.isfinite(x).all():
        raise DataError(f"{where}: images hold NaN or infinite values; expected finite pixels")
    return numpy.ascontiguousarray(x, dtype=numpy.float32)


def test_images(
    artifact: str | os.PathLike[str],
    samples: int | None = None,
    *,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """(images [S, H, W, C], labels [S]): the first ``samples`` test images of the artifact's data set (``dataset`` /
    ``data_dir`` override the artifact's), channels-last and normalised as ``run`` and ``lava_network(...).pixels``
    take them; your own images go in the same layout (``run(artifact, inputs=images)``)."""
    from spikeport.runtime.sources import Source

    source = Source.open(artifact, "test_images", file_kinds.ARTIFACT_ONLY)
    if samples is not None and samples < 1:
        raise ConfigError(f"samples = {samples}: expected a positive integer (or None for all)")
    return artifact_inputs(source, samples, dataset, data_dir)


def artifact_inputs(
    source: Source,
    samples: int | None,
    dataset: str | None,
    data_dir: str | None,
    given: str | os.PathLike[str] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """What an artifact runs on (channels-last) and its labels: ``given``, the user's own images (no labels), else
    the first ``samples`` test images of its data set; for one converted from a NIR graph, the samples it was
    converted with (``given``: others, in NIR's layout). ``dataset`` and ``data_dir`` are refused where the artifact's
    kind takes none."""
    from spikeport.runtime.sources import Inputs, SourceOptions

    source.kind.refuse(source.path, SourceOptions(dataset=dataset, data_dir=data_dir))
    meta = source.meta
    if source.kind.inputs is Inputs.SAMPLES:
        from spikeport.nir_import.samples import artifact_samples

        return artifact_samples(meta, samples, given)
    if given is not None:
        if dataset is not None or data_dir is not None:
            raise ConfigError(
                f"{source.path}: inputs (--inputs) and dataset / data_dir (--dataset, --data-dir) both choose what "
                "runs; give one"
            )
        x = own_images(given, source.graph.nodes[source.graph.order[0]].shape)
        return x[:samples] if samples is not None else x, None
    from spikeport.data.images import artifact_test_images

    return artifact_test_images(meta, dataset or meta.get("dataset", "digits"), data_dir, samples)


def leave_no_torchrun_folders() -> None:
    """Under torchrun: when this process exits, the empty folders torchrun's launcher made for it in the temporary
    folder are removed (``torchelastic_*``, one a job, which torch never removes: 21 were left by a test run)."""
    from spikeport.runtime.distributed import remove_launcher_folders_at_exit

    remove_launcher_folders_at_exit()


def rank() -> int:
    """This process's rank in a torchrun job of two or more processes (``RANK``), else 0. Under torchrun ``run``
    shards its samples over the ranks and returns the whole run's report on every rank; the CLI prints and
    writes on rank 0 only."""
    from spikeport.runtime.distributed import Ranks

    ranks = Ranks.from_env()
    return 0 if ranks is None else ranks.rank


def target(backend: Backend, device: str = "cpu") -> Target:
    """The Target a ``backend`` name and ``device`` select (``reference`` on CUDA is ``reference-torch``); an
    unknown name is refused, naming the known ones."""
    from spikeport.runtime.targets import target as select

    return select(backend, device)


def targets() -> dict[str, Target]:
    """Where a graph can run: the Target registry (``runtime.targets.TARGETS``), name -> Target (description,
    what it needs, ``available()``)."""
    from spikeport.runtime.targets import TARGETS

    return dict(TARGETS)
