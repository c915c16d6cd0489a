"""An artifact or a lava-dl netx file run on a target -> a RunReport; the targets, and this process's rank."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from spikeport import file_kinds
from spikeport.api._keywords import _renamed
from spikeport.api.choices import Backend, Dataset, Drive, InputLayout
from spikeport.errors import ArtifactError, ConfigError, DataError
from spikeport.netx.drive import InputDrive
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.drive import ChipDrive

if TYPE_CHECKING:
    import numpy as np

    from spikeport.runtime.targets import RunOptions, Target
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint, _LazyModule

    np = _LazyModule("numpy")
    RunOptions, Target = _hint("runtime.targets.RunOptions"), _hint("runtime.targets.Target")


def run(
    artifact: str | os.PathLike[str],
    backend: Backend = "reference",
    compare: Literal["reference"] | None = None,
    *,
    samples: int | None = None,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    batch_size: int = 64,
    inputs: str | os.PathLike[str] | np.ndarray | None = None,
    input_shape: Sequence[int] | None = None,
    input_drive: InputDrive | ChipDrive | Drive | None = None,
    steps: int | None = None,
    input_layout: InputLayout = "spikeport",
    progress: bool = False,
    num_layers: int | None = None,
    device: str = "cpu",
    partition: int | None = None,
    read_states: Sequence[str] = (),
    parts: int | None = None,
) -> RunReport:
    """Run an artifact (``.spk.h5``) or a lava-dl netx file on a target (``backend``: a name of
    ``spikeport.runtime.targets.TARGETS``: reference, reference-torch, lava, loihi2) and report.

    Artifacts run on the first ``samples`` test images of their data set (``dataset`` / ``data_dir``
    override the artifact's; default: all of them on the reference simulator, 200 on Lava), or on ``inputs``: your
    own images (an .npy file or an array [S, H, W, C], channels-last and normalised as :func:`test_images` returns
    the data set's; no labels, so no accuracy, only predictions), the shape checked against the artifact. netx files
    (and artifacts converted from them, ``convert_netx``) run on ``inputs`` (an .npy file or an array): with
    ``input_drive="spikes"`` binary spikes [S, T, *input_shape] (channels-last); with ``input_drive="bias"`` integer
    images [S, H, W, C] that set the file's input neuron's bias for ``steps`` steps, as lava-dl's own tests feed
    PilotNet and TinyNet; with ``input_drive="graded"`` integers [S, T, *input_shape] into an SDNN input layer.
    None: the file's own drive (docs/netx.md); an :class:`InputDrive` member names the same. ``num_layers`` reads
    only the file's first layers.
    ``input_layout`` ``slayer`` or ``netx`` reads slayer's or lava-dl netx's axis order instead
    (``netx.inputs.to_spikeport_layout``).
    ``compare="reference"`` also runs the reference simulator on the same inputs and puts the layer-by-layer
    comparison in ``RunReport.compare`` (``identical``: bit-exact spikes at every step and the same
    predictions); it is a no-op on the reference backend itself. ``batch_size`` is the reference
    simulators' batch. ``device``: the torch device of the ``reference-torch`` target (``cuda`` / ``cuda:N``: a
    GPU); ``backend="reference"`` with a device other than ``cpu`` means ``reference-torch``. ``partition`` (Lava
    only; ``parts`` is its old name, deprecated): the network cut into that many Lava networks run one after
    another, each fed with the recorded spikes of the one before, which bounds memory by the largest part
    (docs/lava_backend.md, "Memory at the papers' sizes"). Under torchrun (``torchrun --nproc_per_node N``) every
    target shards the samples over the ranks (``cuda:LOCAL_RANK`` each for a CUDA ``device``; a Lava network per rank
    on lava and loihi2, the latter in simulation), and every rank returns the whole run's report, the same as one
    process's (``runtime.distributed``; :func:`rank`).
    On the ``loihi2`` target an artifact runs as its hardware plan (docs/loihi2.md): ``input_drive`` ``bias`` or
    ``adapter`` (:class:`ChipDrive`; None: the plan's default) and ``read_states``, LIF layers whose u / v are read
    and compared after each sample."""
    from spikeport.netx.to_artifact import is_netx_source
    from spikeport.runtime.netx_run import NetxInputs, run_network
    from spikeport.runtime.targets import RunOptions, target

    if not isinstance(artifact, (str, os.PathLike)):
        raise ConfigError(f"artifact = {artifact!r}: expected the path of an artifact (.spk.h5) or a netx file")
    file_kinds.expect(artifact, file_kinds.ARTIFACTS, "run")
    parts = _renamed("parts", parts, "partition", partition)
    chosen = target(backend, device)
    if samples is not None and samples < 1:
        raise ConfigError(f"samples = {samples}: expected a positive integer (or None for the default)")
    if batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}: expected a positive integer")
    chip_drive = None
    if chosen.caps.chip_drive and input_drive is not None and not is_netx_source(artifact):
        chip_drive, input_drive = (
            ChipDrive.of(input_drive.value if isinstance(input_drive, InputDrive) else input_drive),
            None,
        )
    options = RunOptions(
        batch_size=batch_size,
        progress=progress,
        device=device,
        parts=parts,
        drive=chip_drive,
        read_states=tuple(read_states),
    )
    chosen.check(options)  # fails at once, before anything is loaded (no GPU, no Lava, no Loihi 2)
    if is_netx_source(artifact):
        if device != "cpu":
            raise ConfigError(
                f"{artifact}: device = {device!r} runs Spikformer artifacts; netx networks run on the CPU"
            )
        if dataset is not None or data_dir is not None:
            raise ConfigError(
                f"{artifact}: dataset and data_dir (--dataset, --data-dir) choose an artifact's test images; a netx "
                "network runs on its inputs (--inputs FILE.npy)"
            )
        if parts is not None:
            raise ConfigError(
                f"{artifact}: partition (--partition) cuts Spikformer artifacts; a netx network runs whole"
            )
        drive = InputDrive.of(input_drive) if input_drive else None
        how = NetxInputs(drive, steps, input_layout, num_layers, tuple(input_shape) if input_shape else None)
        return run_network(artifact, chosen, options, compare, inputs, how, samples)
    netx_only = {
        "input_shape (--input-shape)": input_shape is not None,
        "input_drive (--input-drive)": input_drive is not None,
        "steps (--steps)": steps is not None,
        "input_layout (--input-layout)": input_layout != "spikeport",
        "num_layers (--num-layers)": num_layers is not None,
    }
    given = [name for name, set_ in netx_only.items() if set_]
    if given:
        raise ConfigError(
            f"{artifact}: {', '.join(given)} apply to lava-dl netx files only (and --input-drive bias | adapter to "
            "--backend loihi2); an artifact runs on its data set's test images, or on your images with --inputs "
            "FILE.npy"
        )
    if inputs is not None and (dataset is not None or data_dir is not None):
        raise ConfigError(
            f"{artifact}: inputs (--inputs) and dataset / data_dir (--dataset, --data-dir) both choose what runs; "
            "give one"
        )
    return _run_artifact(artifact, chosen, options, compare, samples, dataset, data_dir, inputs)


def _run_artifact(
    path: str | os.PathLike[str],
    target: Target,
    options: RunOptions,
    compare: str | None,
    samples: int | None,
    dataset: str | None,
    data_dir: str | None,
    given: str | os.PathLike[str] | np.ndarray | None = None,
) -> RunReport:
    from spikeport.ir import artifact
    from spikeport.runtime.targets import RunInputs, run_graph

    graph = artifact.read(path)
    if not graph.by_op("readout"):  # converted from a checkpoint: class scores are what it is run for
        raise ArtifactError(path, "/nodes", "has no readout node (the class scores); re-run `spikeport convert`")
    count = samples if samples is not None else target.default_samples
    if given is not None and graph.meta.get("source") != "nir":  # the user's own images
        x, y, dataset_name = own_images(given, graph.nodes[graph.order[0]].shape)[:count], None, None
    else:  # the data set's test images, or an artifact converted from NIR: its samples (or others given)
        x, y = artifact_inputs(path, graph.meta, count, dataset, data_dir, given)
        dataset_name = graph.meta.get("dataset")
    inputs = RunInputs(x, y, artifact=str(path), artifact_digest=graph.digest, dataset=dataset_name)
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
    from spikeport.ir import artifact as artifacts

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "test_images")
    if samples is not None and samples < 1:
        raise ConfigError(f"samples = {samples}: expected a positive integer (or None for all)")
    return artifact_inputs(artifact, artifacts.read_meta(artifact), samples, dataset, data_dir)


def artifact_inputs(
    path: str | os.PathLike[str],
    meta: dict[str, Any],
    samples: int | None,
    dataset: str | None,
    data_dir: str | None,
    nir_inputs: str | os.PathLike[str] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """What an artifact runs on (channels-last) and its labels: the first ``samples`` test images of its data set, or,
    for one converted from a NIR graph, of the samples it was converted with (``nir_inputs``: others)."""
    if meta.get("source") == "nir":
        from spikeport.nir_import.samples import artifact_samples

        if dataset is not None or data_dir is not None:
            raise ConfigError(
                f"{path} was converted from a NIR graph: it runs on its samples (--inputs FILE.npy), not on a data set"
            )
        return artifact_samples(meta, samples, nir_inputs)
    from spikeport.train.data import artifact_test_images

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
