"""The Python API: ``spikeport.train``, ``spikeport.convert``, ``spikeport.run``, ``spikeport.report``.

One function per step of the pipeline (DESIGN.md section 1), each returning a typed result:

==========================  ===========================================================================
``train(...)``              a float run folder (``TrainResult``), or with ``qat=True`` a fine-tuned
                            artifact (``QatResult``)
``convert(checkpoint)``     ``<name>.spk.h5`` + ``<name>.onnx`` + the conversion report (``ConversionResult``)
``run(artifact, backend)``  a :class:`~spikeport.run_report.RunReport` (schema ``spikeport.run``), with the
                            layer-by-layer comparison against the reference when ``compare="reference"``
``report(runs)``            energy / memory / GPU-baseline summary of run reports (schema ``spikeport.report``)
==========================  ===========================================================================

The command line (``spikeport/cli``) parses flags, calls one of these and prints what it returns;
``spikeport demo`` chains them. Nothing here imports torch or lava until a function needs it, so
``import spikeport.api`` stays cheap and the deploy side (``run`` on a netx file) works without torch.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, ForwardRef, Literal, TypeVar

from spikeport import file_kinds
from spikeport.atomic import check_output_dir
from spikeport.errors import ArtifactError, ConfigError
from spikeport.netx.drive import InputDrive  # the CLI's --input-drive choices (no numpy: a light module)
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.drive import ChipDrive  # check-hw's, bundle's and --backend loihi2's input drive


class _LazyModule:
    """A module imported on its first attribute access; a submodule's name gives another one."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # copy, pickle and inspect probe these: no import for them
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self._name), attr, None)
        if value is not None and not isinstance(value, ModuleType):
            return value
        importlib.import_module(f"{self._name}.{attr}")  # a submodule (imported or not), or ModuleNotFoundError
        return _LazyModule(f"{self._name}.{attr}")

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on use>"


_spikeport = _LazyModule("spikeport")


def _hint(path: str) -> ForwardRef:
    """A name of ``spikeport.<path>`` that typing.get_type_hints resolves (importing its module then), and that
    ``|`` joins as the class would (Python 3.11's ForwardRef)."""
    return ForwardRef(f"_spikeport.{path}")


if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch import nn

    from spikeport.convert.api import ConversionResult
    from spikeport.convert.qat import QatResult
    from spikeport.exports.onnx import OnnxExport
    from spikeport.hw_profiles import HwProfile
    from spikeport.ir.graph import Graph
    from spikeport.metrics.calibrate import Calibration
    from spikeport.netx.to_artifact import NetxConversion
    from spikeport.report.model import ReportSummary
    from spikeport.runtime.loihi2.bundle import Bundle
    from spikeport.runtime.loihi2.check_hw import HwCheck
    from spikeport.runtime.loihi2.embed import LavaEmbedding
    from spikeport.runtime.targets import RunOptions, Target
    from spikeport.train.api import TrainConfig
    from spikeport.train.loop import TrainResult
else:
    # typing.get_type_hints(api.convert) evaluates the annotations' names in this module: each resolves, on that
    # evaluation only, to what the import above names (a type checker reads the imports; importing spikeport.api
    # still imports neither torch nor numpy)
    np, torch, nn = _LazyModule("numpy"), _LazyModule("torch"), _LazyModule("torch.nn")
    ConversionResult = _hint("convert.api.ConversionResult")
    QatResult = _hint("convert.qat.QatResult")
    OnnxExport = _hint("exports.onnx.OnnxExport")
    HwProfile = _hint("hw_profiles.HwProfile")
    Graph = _hint("ir.graph.Graph")
    Calibration = _hint("metrics.calibrate.Calibration")
    NetxConversion = _hint("netx.to_artifact.NetxConversion")
    ReportSummary = _hint("report.model.ReportSummary")
    Bundle = _hint("runtime.loihi2.bundle.Bundle")
    HwCheck = _hint("runtime.loihi2.check_hw.HwCheck")
    LavaEmbedding = _hint("runtime.loihi2.embed.LavaEmbedding")
    RunOptions, Target = _hint("runtime.targets.RunOptions"), _hint("runtime.targets.Target")
    TrainConfig = _hint("train.api.TrainConfig")
    TrainResult = _hint("train.loop.TrainResult")

# The choices a parameter takes, as types (a type checker refuses a misspelt name; tests/test_api_types.py holds each
# equal to the registry it names)
Backend = Literal["reference", "reference-torch", "lava", "loihi2"]  # runtime.targets.TARGETS
Attention = Literal["ssa", "lrf_ssa", "lrf_causal", "lrf_dyn"]  # train.models.ATTENTIONS
Dataset = Literal["digits", "cifar10", "cifar100", "imagenet"]  # train.data.DATASETS
Drive = Literal["spikes", "bias", "graded", "adapter"]  # InputDrive's and ChipDrive's names
InputLayout = Literal["spikeport", "slayer", "netx"]  # netx.inputs: the axis order of netx inputs
IntegerInputs = Literal["value_acs", "event_macs"]  # metrics.energy.INTEGER_RULES
Precision = Literal["fp32", "fp16", "int32", "int8"]  # metrics.energy.PRECISIONS
AttentionForm = Literal["parallel", "recurrent"]  # the attention's GPU form or its token-by-token one

__all__ = [
    "Attention",
    "AttentionForm",
    "Backend",
    "ChipDrive",
    "Dataset",
    "Drive",
    "InputDrive",
    "InputLayout",
    "IntegerInputs",
    "Precision",
    "RunReport",
    "ablation",
    "analyze",
    "bench_gpu",
    "bundle",
    "calibrate",
    "check_hw",
    "convert",
    "convert_netx",
    "export_netx",
    "export_nir",
    "export_onnx",
    "info",
    "inspect",
    "is_netx_file",
    "lava_network",
    "load_graph",
    "memory",
    "rank",
    "report",
    "run",
    "simulate_particles",
    "simulate_sweep",
    "stale_conversion_report",
    "supported_modules",
    "targets",
    "train",
    "train_config",
]


# ---- train ---------------------------------------------------------------------------------------------


def train_config(
    preset: str | None = None, config_file: str | os.PathLike[str] | None = None, **overrides: Any
) -> TrainConfig:
    """The resolved training config: defaults < the preset's recipe < ``config_file`` (YAML) <
    ``overrides`` (TrainConfig fields; None values are ignored). Fails on a bad key before any data is read."""
    from spikeport.train.api import resolve_config

    return resolve_config(preset, config_file, **overrides)


def train(config: TrainConfig | dict[str, Any] | None = None, **overrides: Any) -> TrainResult | QatResult:
    """Train (or resume) one model. ``config`` is a TrainConfig, a dict of its fields or None (the preset
    recipe); ``overrides`` are TrainConfig fields (``preset``, ``model``, ``epochs``, ``out``, ...).

    With ``qat=True`` it fine-tunes the float weights of ``init`` through the fake-quant executor instead
    (quantization-aware training) and returns a ``QatResult`` with the fine-tuned artifact
    ``<out>/model.spk.h5``."""
    from spikeport.train import api as train_api

    cfg = train_api.as_config(config, **overrides)
    if not cfg.qat:
        return train_api.train(cfg)
    if not cfg.init:
        raise ConfigError("--qat needs --init CKPT: quantization-aware fine-tuning starts from trained float weights")
    from spikeport.convert.qat import train_qat

    return train_qat(cfg)


# ---- convert -------------------------------------------------------------------------------------------


def convert(
    checkpoint: str | os.PathLike[str] | nn.Module,
    out: str | os.PathLike[str] | None = None,
    *,
    name: str = "model",
    calibrate: int = 256,
    samples: int | None = None,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    onnx: bool = True,
    host_attention: bool = False,
    progress: bool | Callable[[str], None] = False,
    eval_samples: int | None = None,
) -> ConversionResult:
    """Quantize a trained model to Loihi 2 fixed point and write ``<out>/<name>.spk.h5``, the ONNX GPU
    baseline ``<out>/<name>.onnx`` and ``<out>/conversion_report.json``.

    ``checkpoint`` is a spikeport checkpoint file (``runs/<name>/checkpoint.pt``; ``out`` defaults to
    ``build/<run folder name>``) or a spikeport model in memory (then ``out`` is required). The fixed-point
    scales are calibrated on the first ``calibrate`` training images (0: static scales), and float,
    fake-quant and reference executors are compared on the first ``samples`` test images (None: all)
    of ``dataset`` (default: the one the model was trained on). ``host_attention``: SSA / causal attention computed
    on the host (AttentionCore) instead of the chip-native token mixing, a fallback. ``progress``: a line per stage
    on stderr (and bars on a terminal), or a function that takes each line. ``eval_samples``: ``samples``' old name
    (deprecated)."""
    from spikeport.convert.api import convert as convert_model
    from spikeport.ir.artifact import check_conversion_targets
    from spikeport.netx.to_artifact import check_file_name
    from spikeport.runtime.lava.lowerings import lowering_summary
    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import dataset_of, preprocessing, split_tensors
    from spikeport.train.models import config_of

    check_file_name(name)
    samples = _renamed("eval_samples", eval_samples, "samples", samples)
    if calibrate < 0 or (samples is not None and samples < 1):
        raise ConfigError(f"calibrate = {calibrate}, samples = {samples}: expected calibrate >= 0 and samples >= 1")

    from spikeport.progress import progress_of

    say = progress_of(progress, "convert")
    if isinstance(checkpoint, (str, os.PathLike)):
        file_kinds.expect(checkpoint, file_kinds.CONVERTIBLE, "convert")
        out = check_output_dir(out if out is not None else Path("build") / Path(checkpoint).resolve().parent.name)
        check_conversion_targets(out, name, onnx)
        say.stage(f"loading {checkpoint}")
        model, ckpt = load_model(checkpoint)
        source = {"checkpoint": str(Path(checkpoint).resolve())}
    else:
        if out is None:
            raise ConfigError("convert: give `out` (the output folder) for a model in memory")
        config = config_of(checkpoint)
        model, ckpt, source, out = checkpoint, {"model_config": config.to_dict()}, {}, check_output_dir(out)
        check_conversion_targets(out, name, onnx)
    data = dataset_of(ckpt, dataset)
    data_dir = data_dir or (ckpt.get("train_config") or {}).get("data_dir")
    size = config_of(model).img_size
    say.stage(f"reading {data}: {calibrate} training images to calibrate, the test images to compare on")
    calib = split_tensors(data, data_dir, "train", calibrate, size)[0] if calibrate else None
    x, y = split_tensors(data, data_dir, "test", samples, size)
    prep = preprocessing(data)
    return convert_model(
        model,
        out,
        name=name,
        calib_images=calib,
        eval_images=x,
        eval_labels=y.numpy(),
        onnx=(lambda m: _onnx_export(m, x[:ONNX_CHECK_SAMPLES], prep)) if onnx else None,
        meta={"dataset": data, "data_dir": data_dir, "preprocessing": prep, **source},
        lowering=lowering_summary,  # the report's per-op Lava processes: convert names no backend
        host_attention=host_attention,
        progress=say,
    )


def convert_netx(
    netx_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    name: str = "model",
    input_shape: Sequence[int] | None = None,
    input_drive: InputDrive | Literal["spikes", "bias", "graded"] | None = None,
    steps: int | None = None,
    num_layers: int | None = None,
) -> NetxConversion:
    """A lava-dl netx file -> ``<out>/<name>.spk.h5`` (its integers unchanged: nothing is quantized) and
    ``<out>/conversion_report.json`` (netx layer -> spikeport nodes); ``input_drive`` (an :class:`InputDrive` or its
    name: ``spikes``, ``bias``, ``graded``) and ``steps`` (T; default the file's ``simulation/tSample``, else 16) are
    fixed in the artifact. No torch is needed (``spikeport.netx.to_artifact``)."""
    from spikeport.netx.to_artifact import convert_netx as convert_file

    return convert_file(
        netx_file, out, name=name, input_shape=input_shape, input_drive=input_drive, steps=steps, num_layers=num_layers
    )


ONNX_CHECK_SAMPLES = 64  # test images the conversion runs through ONNX Runtime against torch


def _onnx_export(
    model: nn.Module, images: torch.Tensor, preprocessing: dict[str, Any]
) -> tuple[bytes, dict[str, Any] | None] | None:
    """The float model's ONNX export (its preprocessing in its metadata) and its ONNX Runtime parity, or None
    without the onnx exporter."""
    try:
        from spikeport.exports.onnx import onnx_bytes
    except ImportError:
        return None
    return onnx_bytes(model, images, preprocessing)


# ---- run -----------------------------------------------------------------------------------------------


def check_hw(
    artifact: str | os.PathLike[str],
    profile: str | os.PathLike[str] | HwProfile = "loihi2",
    *,
    input_shape: Sequence[int] | None = None,
    **options: Any,
) -> HwCheck:
    """Hardware readiness of a converted artifact or a lava-dl netx file (``input_shape``: a netx file's input,
    H,W,C or N): which Lava processes go on the chip, which stay on the host, the cores, the state each holds,
    the limits broken (``HwCheck``; ``.to_dict()`` is schema spikeport.check_hw). ``options`` go to
    ``runtime.loihi2.check_hw.check_hw``."""
    from spikeport.hw_profiles import HwProfile, load_profile
    from spikeport.runtime.loihi2.check_hw import check_hw as check

    file_kinds.expect(artifact, file_kinds.ARTIFACTS, "check-hw")
    prof = profile if isinstance(profile, HwProfile) else load_profile(str(profile))
    if isinstance(options.get("run_report"), (str, os.PathLike)):  # a run report's file: its measured rates
        options["run_report"] = RunReport.from_json(options["run_report"])
    return check(load_graph(artifact, input_shape), prof, **options)


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
    override the artifact's; default: all of them on the reference simulator, 200 on Lava). netx files (and
    artifacts converted from them, ``convert_netx``) run on ``inputs`` (an .npy file or an array): with
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
    (docs/lava_backend.md, "Memory at the papers' sizes"). Under torchrun (``torchrun --nproc_per_node N``) the
    reference targets shard the samples over the ranks, ``cuda:LOCAL_RANK`` each for a CUDA ``device``, and every
    rank returns the whole run's report, the same as one process's (``runtime.distributed``; :func:`rank`).
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
    if (inputs, input_shape, input_drive, steps, input_layout, num_layers) != (
        None,
        None,
        None,
        None,
        "spikeport",
        None,
    ):
        raise ConfigError(
            f"{artifact}: inputs, input_shape, input_drive, steps, num_layers and input_layout (--inputs, "
            "--input-shape, --input-drive, --steps, --num-layers, --input-layout) apply to lava-dl netx files only "
            "(and input_drive bias | adapter to the loihi2 target); an artifact runs on its data set's test images"
        )
    return _run_artifact(artifact, chosen, options, compare, samples, dataset, data_dir)


def _run_artifact(
    path: str | os.PathLike[str],
    target: Target,
    options: RunOptions,
    compare: str | None,
    samples: int | None,
    dataset: str | None,
    data_dir: str | None,
) -> RunReport:
    from spikeport.ir import artifact
    from spikeport.runtime.targets import RunInputs, run_graph
    from spikeport.train.data import artifact_test_images

    graph = artifact.read(path)
    if not graph.by_op("readout"):  # converted from a checkpoint: class scores are what it is run for
        raise ArtifactError(path, "/nodes", "has no readout node (the class scores); re-run `spikeport convert`")
    dataset = dataset or graph.meta.get("dataset", "digits")
    x, y = artifact_test_images(
        graph.meta, dataset, data_dir, samples if samples is not None else target.default_samples
    )
    inputs = RunInputs(x, y, artifact=str(path), artifact_digest=graph.digest, dataset=graph.meta.get("dataset"))
    return run_graph(graph, inputs, target, options, compare)


# ---- report --------------------------------------------------------------------------------------------


def report(
    runs: Sequence[RunReport | str | os.PathLike[str]],
    *,
    sources: Sequence[str] | None = None,
    profiles: Sequence[str] = ("loihi2", "cmos45nm"),
    gpus: Sequence[str] = ("h100",),
    gpu_bench: Sequence[str | os.PathLike[str] | dict[str, Any]] = (),
    gpu_baseline: bool = True,
    vit: bool = True,
    cpu_baseline: bool = True,
    chip: bool = True,
    allow_missing: bool = False,
    cache: bool | str | os.PathLike[str] = True,
    measure_memory: bool = False,
    integer_inputs: IntegerInputs = "value_acs",
    first_layer_per_timestep: bool = True,
    precision: Precision = "fp32",
    html: str | os.PathLike[str] | None = None,
    json: str | os.PathLike[str] | None = None,
    title: str = "spikeport report",
    progress: Callable[[str], None] | None = None,
) -> ReportSummary:
    """The summary (schema ``spikeport.report`` v1, a ``report.model.ReportSummary``; ``.to_dict()`` is the JSON)
    of run reports given as files or RunReports: per run and per inference the counts, the energy estimate of
    every hw profile, the state memory, the chip footprint of the artifact that ran (check-hw on the first
    neuromorphic profile; ``chip=False`` skips it) and the GPU baseline of the same network (measured on CUDA,
    otherwise estimated from ``gpus``, with ONNX Runtime measured on this CPU beside it unless
    ``cpu_baseline=False``; ``gpu_bench``: the JSON of `spikeport bench gpu`). Written to ``json`` and as a
    self-contained page to ``html`` when given. The counting rule (``integer_inputs``,
    ``first_layer_per_timestep``, ``precision``) is docs/counting.md's. The work is ``spikeport.gather``'s.

    Each run report's artifact is found as written, from the run report's folder, or by its digest; one not found
    is a ReportError naming the run report unless ``allow_missing`` (that run then has no chip footprint, said in
    a note). ``cache``: check-hw, the CPU timings, GPU estimates and the analytic memory are kept across reports
    (True: in ``$XDG_CACHE_HOME/spikeport/report``; a folder: there; False: worked out again)."""
    from spikeport.baselines.gpu_bench import load_bench
    from spikeport.gather.stage import write_report
    from spikeport.metrics.energy import CountingRule
    from spikeport.report.inputs import ReportOptions

    for run_file in runs:
        if isinstance(run_file, (str, os.PathLike)):
            file_kinds.expect(run_file, file_kinds.RUN_REPORTS, "report")
    rule = CountingRule(integer_inputs, first_layer_per_timestep, precision)
    benches = tuple(b if isinstance(b, dict) else load_bench(b) for b in gpu_bench)
    options = ReportOptions(tuple(profiles), tuple(gpus), rule, gpu_baseline, vit, benches)
    options = replace(
        options,
        measure_memory=measure_memory,
        chip=chip,
        cpu_baseline=cpu_baseline,
        allow_missing=allow_missing,
        cache=cache is not False,
        cache_dir=None if isinstance(cache, bool) else os.fspath(cache),
    )
    return write_report(runs, sources, options, load_graph, html=html, json=json, title=title, progress=progress)


def bundle(
    artifact: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    samples: int = 4,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    drive: ChipDrive | Literal["bias", "adapter"] | None = None,
    states: Sequence[str] = (),
    slurm_partition: str | None = None,
    force: bool = False,
    partition: str | None = None,
) -> Bundle:
    """A folder that runs ``artifact``'s hardware plan on Loihi 2 as it is (runtime/loihi2/bundle.py): its first
    ``samples`` test images with the reference's expected outputs and ``states``, submitted to the SLURM partition
    ``slurm_partition`` (default: the one check-hw's chips need; ``partition`` is its old name, deprecated);
    ``force`` replaces ``out``."""
    from spikeport.ir import artifact as artifacts
    from spikeport.runtime.loihi2.bundle import write_bundle
    from spikeport.train.data import artifact_test_images

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "bundle")
    graph = artifacts.read(artifact)
    x, y = artifact_test_images(graph.meta, dataset or graph.meta.get("dataset", "digits"), data_dir, samples)
    return write_bundle(
        graph,
        artifact,
        x,
        y,
        out,
        drive=drive,
        states=tuple(states),
        partition=_renamed("partition", partition, "slurm_partition", slurm_partition),
        replace=force,
    )


def lava_network(artifact: str | os.PathLike[str], *, hardware: bool = False) -> LavaEmbedding:
    """The artifact's Lava network for a Lava program of one's own (runtime/loihi2/embed.py): its processes, the
    ``input`` port a RingBuffer of ``pixels(images)`` connects to, the ``outputs`` ports sinks read, and the run
    config; ``steps``, ``per_sample`` and ``predict`` keep its timing. ``hardware``: Intel's embedded-IO adapters
    and Loihi2HwCfg (lava-loihi) instead of pass-through stand-ins and Loihi2SimCfg."""
    from spikeport.ir import artifact as artifacts
    from spikeport.runtime.loihi2.embed import lava_network as embedding

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "lava_network")
    return embedding(artifacts.read(artifact), hardware=hardware)


def calibrate(
    runs: Sequence[str | os.PathLike[str] | RunReport],
    out: str | os.PathLike[str],
    *,
    profile: str | os.PathLike[str] | HwProfile = "loihi2",
    name: str | None = None,
) -> Calibration:
    """Fit ``profile``'s energy constants to measured run reports and write the fitted profile to ``out``
    (metrics/calibrate.py: per-op energies x one least-squares scale, static power and time step the measured
    means, provenance in its ``calibration`` section)."""
    from spikeport.hw_profiles import HwProfile, load_profile
    from spikeport.metrics.calibrate import calibrate as fit, write_profile

    base = profile if isinstance(profile, HwProfile) else load_profile(str(profile))
    for run_file in runs:
        if not isinstance(run_file, RunReport):
            file_kinds.expect(run_file, file_kinds.RUN_REPORTS, "calibrate")
    loaded = [(str(r), RunReport.from_json(r)) if not isinstance(r, RunReport) else ("run", r) for r in runs]
    cal = fit(loaded, base, name)
    write_profile(cal, out)
    return cal


X = TypeVar("X")


def _renamed(old: str, old_value: X | None, new: str, new_value: X | None) -> X | None:
    """A keyword's value under its new name or its old one (deprecated: one name per idea across the flags, the API
    and the files); both given is an error."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise ConfigError(f"{old} and {new}: give {new} only ({old} is its old name)")
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)
    return old_value


def load_graph(path: str | os.PathLike[str], input_shape: Sequence[int] | None = None) -> Graph:
    """The graph of an artifact (``.spk.h5``) or of a lava-dl netx file (``input_shape``: its input, H,W,C or N;
    default the file's)."""
    from spikeport.ir import artifact
    from spikeport.netx.read import graph_from_netx, is_netx_file

    if is_netx_file(path):
        return graph_from_netx(path, tuple(input_shape) if input_shape else None)
    if input_shape is not None:
        raise ConfigError(f"{path}: input_shape applies to lava-dl netx files only; an artifact knows its input")
    return artifact.read(path)


# ---- the other commands: one thin function each (the CLI parses, calls one, prints) --------------------


def info(
    preset: str,
    dataset: Dataset | None = None,
    *,
    attention: Attention | None = None,
    mlp: bool | None = None,
    skip: bool | None = None,
) -> dict[str, Any]:
    """A preset's parameters, per-layer MACs for one sample and time step, LIF neurons, tokens and T (schema
    spikeport.info), from a forward pass on the meta device (no memory, no compute)."""
    from spikeport.train.info import model_info
    from spikeport.train.presets import preset_config

    cfg = preset_config(preset, dataset, attention=attention, mlp=mlp, skip=skip)
    return model_info(cfg, preset, dataset)


def inspect(artifact: str | os.PathLike[str]) -> dict[str, Any]:
    """An artifact's graph: per node its op, inputs, shape, the attributes of its fixed-point plan and the integer
    range of each parameter; with T, the model config, the data set and whether it was fine-tuned (QAT)."""
    from spikeport.ir import artifact as artifact_io
    from spikeport.ir.describe import describe

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "inspect")
    return describe(artifact_io.read(artifact))


def supported_modules() -> list[tuple[str, str]]:
    """(torch module, what it becomes) for every module ``convert`` knows."""
    from spikeport.convert.handlers import supported_modules as listed

    return [tuple(r) for r in listed()]  # type: ignore[misc]


def export_netx(artifact: str | os.PathLike[str], out: str | os.PathLike[str]) -> Any:
    """The netx-expressible part of an artifact as a lava-dl netx HDF5 file at ``out`` (``netx.write``): a
    ``NetxExport`` saying what was exported, from which node's spikes, what was left out and why. Load it in
    lava-dl with ``spikeport.runtime.lava.compat.netx_network()(net_config=out)`` (docs/netx_and_hardware.md)."""
    from spikeport.ir import artifact as artifact_io
    from spikeport.netx.write import export_netx as export

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "export --netx")
    return export(artifact_io.read(artifact), out)


def export_nir(checkpoint: str | os.PathLike[str], out: str | os.PathLike[str], *, check: bool = True) -> Any:
    """The NIR-expressible parts of a trained model (the SPS stem, the MLPs, the readout) as a NIR file at
    ``out`` (``exports.nir``); with ``check`` and norse installed each part is loaded back in norse and compared
    with the float model on 16 test images."""
    from spikeport.exports.nir import export_checkpoint

    file_kinds.expect(checkpoint, file_kinds.CHECKPOINTS, "export --nir")
    return export_checkpoint(checkpoint, out, check=check)


def export_onnx(
    checkpoint: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    check: bool = True,
    batch_size: int | Literal["dynamic"] = "dynamic",
    opset: int = 17,
    inference_form: AttentionForm = "parallel",
) -> OnnxExport:
    """The float model of a checkpoint as ONNX at ``out`` (``exports.onnx``; the file ``convert`` writes beside its
    artifact, with the data set's preprocessing in its metadata): a symbolic batch axis unless ``batch_size`` is
    an int, opset 14..20, the attention in its ``parallel`` (GPU) or ``recurrent`` form; with ``check`` and ONNX
    Runtime installed, its logits are compared with torch's on 64 test images (``OnnxExport.check``)."""
    from spikeport.exports.onnx import export_checkpoint

    file_kinds.expect(checkpoint, file_kinds.CHECKPOINTS, "export --onnx")
    return export_checkpoint(
        checkpoint, out, check=check, batch_size=batch_size, opset=opset, inference_form=inference_form
    )


def bench_gpu(
    target: str,
    *,
    batches: Sequence[int] = (1,),
    modes: bool = False,
    attention: Attention | None = None,
    T: int | None = None,
    include_vit: bool = True,
    progress: Callable[[str], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """GPU baselines of a preset or a trained run (schema spikeport.gpu_bench): the float SNN, its ONNX export and
    an ANN ViT of the same size, measured on CUDA or estimated from GPU profiles, and measured on this CPU. One
    batch (``batches[0]``), or with ``modes`` the sweep ``batches`` reduced to latency mode (batch 1) and
    throughput mode (the best batch), ``on_result`` called after each batch. ``options``:
    ``baselines.gpu_bench.BenchOptions`` fields."""
    from spikeport.baselines.gpu_bench import bench_gpu as one, bench_gpu_modes as sweep

    common = dict(attention=attention, T=T, include_vit=include_vit, progress=progress, **options)
    if modes:
        return sweep(target, tuple(batches), on_result=on_result, **common)
    if len(batches) != 1:
        raise ConfigError(f"batches {list(batches)}: one batch without modes (the sweep is modes=True)")
    return one(target, batch=batches[0], **common)


def memory(
    preset: str,
    attentions: Sequence[Attention] = ("ssa", "lrf_dyn"),
    *,
    batch: int = 1,
    T: int | None = None,
    dtype: Literal["fp32", "fp16", "bf16"] = "fp32",
    measure: bool = True,
    device: str = "cpu",
    form: AttentionForm = "recurrent",
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Per-module inference memory of a preset per attention variant (schema spikeport.memory_compare): analytic
    (weights, LIF state, attention state, activations) at torch precision and at Loihi precision, and with
    ``measure`` the torch float model's measured peak."""
    from spikeport.baselines.torch_memory import compare

    return compare(preset, list(attentions), batch, T, dtype, measure, device, form, progress=progress)


def analyze(
    checkpoint: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] = "analysis",
    *,
    hf: str | None = None,
    samples: int = 256,
    dataset: Dataset | None = None,
    data_dir: str | None = None,
    split: Literal["train", "test"] = "test",
    batch_size: int = 32,
    text: str | None = None,
    seq_len: int = 128,
    progress: bool = False,
) -> dict[str, Any]:
    """The seed papers' diagnostics of a trained model (token clustering, head correlation, attention locality)
    written to ``out``; ``hf``: a Hugging Face model instead of a spikeport checkpoint."""
    if (checkpoint is None) == (hf is None):
        raise ConfigError("give either a checkpoint or hf (a Hugging Face model)")
    if samples < 1:
        raise ConfigError(f"samples = {samples}: expected >= 1")
    if hf is not None:
        from spikeport.analysis.hf import analyze_hf

        return analyze_hf(hf, Path(out), samples=samples, seq_len=seq_len, text_file=text, batch_size=batch_size)
    from spikeport.analysis.model_analysis import analyze_checkpoint

    assert checkpoint is not None  # checked above: exactly one of checkpoint and hf
    file_kinds.expect(checkpoint, file_kinds.CHECKPOINTS, "analyze")
    return analyze_checkpoint(
        Path(checkpoint),
        Path(out),
        samples=samples,
        data_dir=data_dir,
        dataset=dataset,
        split=split,
        batch_size=batch_size,
        progress=progress,
    )


def ablation(config: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Seed 000's ablation (ViT and Spikformer x baseline, no MLP, no skip) for an ``analysis.ablation.
    AblationConfig``: trains every run, counts its operations, writes the tables to ``config.out``."""
    from spikeport.analysis.ablation import run_ablation

    return run_ablation(config, log=log)


def simulate_particles(
    config: Any,
    out: str | os.PathLike[str],
    snapshots: Sequence[float] | None = None,
    *,
    animation: bool = True,
    eps: float | None = None,
) -> dict[str, Any]:
    """Tokens as particles on the sphere under (spiking) self-attention (``analysis.particles.ParticleConfig``):
    trajectories, snapshots, the animation and cluster counts, written to ``out``."""
    from spikeport.analysis.clusters import DEFAULT_EPS
    from spikeport.analysis.simulate import simulate_particles as simulate

    snaps = list(snapshots) if snapshots is not None else None
    return simulate(config, Path(out), snaps, animation=animation, eps=DEFAULT_EPS if eps is None else eps)


def simulate_sweep(
    config: Any, betas: Sequence[float], taus: Sequence[float], out: str | os.PathLike[str], *, eps: float | None = None
) -> dict[str, Any]:
    """A beta x tau grid of particle runs from the same initial positions, written to ``out``."""
    from spikeport.analysis.clusters import DEFAULT_EPS
    from spikeport.analysis.simulate import sweep

    return sweep(config, list(betas), list(taus), Path(out), eps=DEFAULT_EPS if eps is None else eps)


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


def is_netx_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a lava-dl netx HDF5 file (not a spikeport artifact, not a checkpoint)."""
    from spikeport.netx.read import is_netx_file as netx

    return netx(path)


def stale_conversion_report(digest: str | None, artifact: str | os.PathLike[str]) -> str | None:
    """Why the conversion report beside ``artifact`` (root digest ``digest``) is another conversion's, or None."""
    from spikeport.ir.artifact import stale_report

    return stale_report(digest, artifact)
