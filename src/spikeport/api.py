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

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spikeport.errors import ConfigError
from spikeport.run_report import RunReport

if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch import nn

    from spikeport.convert.api import ConversionResult
    from spikeport.convert.netx import NetxConversion
    from spikeport.convert.qat import QatResult
    from spikeport.ir.graph import Graph
    from spikeport.runtime.netx_run import NetxInputs
    from spikeport.runtime.targets import RunOptions, Target
    from spikeport.train.api import TrainConfig
    from spikeport.train.loop import TrainResult

__all__ = ["RunReport", "check_hw", "convert", "convert_netx", "report", "run", "train", "train_config"]


# ---- train ---------------------------------------------------------------------------------------------


def train_config(
    preset: str | None = None, config_file: str | os.PathLike | None = None, **overrides: Any
) -> TrainConfig:
    """The resolved training config: defaults < the preset's recipe < ``config_file`` (YAML) <
    ``overrides`` (TrainConfig fields; None values are ignored). Fails on a bad key before any data is read."""
    from spikeport.train.api import resolve_config

    return resolve_config(preset, config_file, **overrides)


def train(config: TrainConfig | dict | None = None, **overrides: Any) -> TrainResult | QatResult:
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
    checkpoint: str | os.PathLike | nn.Module,
    out: str | os.PathLike | None = None,
    *,
    name: str = "model",
    calibrate: int = 256,
    eval_samples: int | None = None,
    dataset: str | None = None,
    data_dir: str | None = None,
    onnx: bool = True,
) -> ConversionResult:
    """Quantize a trained model to Loihi 2 fixed point and write ``<out>/<name>.spk.h5``, the ONNX GPU
    baseline ``<out>/<name>.onnx`` and ``<out>/conversion_report.json``.

    ``checkpoint`` is a spikeport checkpoint file (``runs/<name>/checkpoint.pt``; ``out`` defaults to
    ``build/<run folder name>``) or a spikeport model in memory (then ``out`` is required). The fixed-point
    scales are calibrated on the first ``calibrate`` training images (0: static scales), and float,
    fake-quant and reference executors are compared on the first ``eval_samples`` test images (None: all)
    of ``dataset`` (default: the one the model was trained on)."""
    from spikeport.atomic import check_output_dir
    from spikeport.convert.api import convert as convert_model
    from spikeport.convert.netx import check_file_name
    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import dataset_of, split_tensors

    check_file_name(name)
    if calibrate < 0 or (eval_samples is not None and eval_samples < 1):
        raise ConfigError(
            f"calibrate = {calibrate}, eval_samples = {eval_samples}: expected calibrate >= 0 and eval_samples >= 1"
        )

    if isinstance(checkpoint, (str, os.PathLike)):
        out = check_output_dir(out if out is not None else Path("build") / Path(checkpoint).resolve().parent.name)
        model, ckpt = load_model(checkpoint)
        source = {"checkpoint": str(Path(checkpoint).resolve())}
    else:
        if out is None:
            raise ConfigError("convert: give `out` (the output folder) for a model in memory")
        model, ckpt, source, out = checkpoint, {"model_config": checkpoint.cfg.to_dict()}, {}, check_output_dir(out)
    dataset = dataset_of(ckpt, dataset)
    data_dir = data_dir or (ckpt.get("train_config") or {}).get("data_dir")
    size = model.cfg.img_size
    calib = split_tensors(dataset, data_dir, "train", calibrate, size)[0] if calibrate else None
    x, y = split_tensors(dataset, data_dir, "test", eval_samples, size)
    return convert_model(
        model,
        out,
        name=name,
        calib_images=calib,
        eval_images=x,
        eval_labels=y.numpy(),
        onnx=(lambda m: _onnx_export(m, x[:ONNX_CHECK_SAMPLES])) if onnx else None,
        meta={"dataset": dataset, "data_dir": data_dir, **source},
    )


def convert_netx(
    netx_file: str | os.PathLike,
    out: str | os.PathLike,
    *,
    name: str = "model",
    input_shape: Sequence[int] | None = None,
    input_drive: str | None = None,
    steps: int | None = None,
    num_layers: int | None = None,
) -> NetxConversion:
    """A lava-dl netx file -> ``<out>/<name>.spk.h5`` (its integers unchanged: nothing is quantized) and
    ``<out>/conversion_report.json`` (netx layer -> spikeport nodes); ``input_drive`` (``spikes``, ``bias``,
    ``graded``) and ``steps`` (T; default the file's ``simulation/tSample``, else 16) are fixed in the artifact.
    No torch is needed (``spikeport.convert.netx``)."""
    from spikeport.convert.netx import convert_netx as convert_file

    return convert_file(
        netx_file, out, name=name, input_shape=input_shape, input_drive=input_drive, steps=steps, num_layers=num_layers
    )


ONNX_CHECK_SAMPLES = 64  # test images the conversion runs through ONNX Runtime against torch


def _onnx_export(model: nn.Module, images: torch.Tensor) -> tuple[bytes, dict | None] | None:
    """The float model's ONNX export and its ONNX Runtime parity, or None without the onnx exporter."""
    try:
        from spikeport.exports.onnx import onnx_bytes
    except ImportError:
        return None
    return onnx_bytes(model, images)


# ---- run -----------------------------------------------------------------------------------------------


def check_hw(
    artifact: str | os.PathLike,
    profile: str = "loihi2",
    run_report: RunReport | str | os.PathLike | None = None,
    rate: float | None = None,
) -> dict[str, Any]:
    """Hardware readiness of a converted artifact (schema spikeport.check_hw): which Lava processes go on the
    chip, which stay on the host, the cores, the chips and the smallest system that holds them, the limits
    broken, and the spikes that cross chips (measured rates from ``run_report`` where it counts a layer, else
    ``rate`` spikes per neuron and step)."""
    from spikeport.ir import artifact as artifact_io
    from spikeport.runtime.loihi2.check_hw import DEFAULT_RATE, check_hw as check

    run = run_report if run_report is None or isinstance(run_report, RunReport) else RunReport.from_json(run_report)
    graph = artifact_io.read(str(artifact))
    return check(graph, profile, run, DEFAULT_RATE if rate is None else rate).to_dict()


def run(
    artifact: str | os.PathLike,
    backend: str = "reference",
    compare: str | None = None,
    *,
    samples: int | None = None,
    dataset: str | None = None,
    data_dir: str | None = None,
    batch_size: int = 64,
    inputs: str | os.PathLike | np.ndarray | None = None,
    input_shape: Sequence[int] | None = None,
    input_drive: str | None = None,
    steps: int | None = None,
    input_layout: str = "spikeport",
    progress: bool = False,
    num_layers: int | None = None,
    device: str = "cpu",
) -> RunReport:
    """Run an artifact (``.spk.h5``) or a lava-dl netx file on a target (``backend``: a name of
    ``spikeport.runtime.targets.TARGETS``: reference, reference-torch, lava, loihi2) and report.

    Artifacts run on the first ``samples`` test images of their data set (``dataset`` / ``data_dir``
    override the artifact's; default: all of them on the reference simulator, 200 on Lava). netx files (and
    artifacts converted from them, ``convert_netx``) run on ``inputs`` (an .npy file or an array): with
    ``input_drive="spikes"`` binary spikes [S, T, *input_shape] (channels-last); with ``input_drive="bias"`` integer
    images [S, H, W, C] that set the file's input neuron's bias for ``steps`` steps, as lava-dl's own tests feed
    PilotNet and TinyNet; with ``input_drive="graded"`` integers [S, T, *input_shape] into an SDNN input layer.
    None: the file's own drive (docs/netx.md). ``num_layers`` reads only the file's first layers.
    ``input_layout`` ``slayer`` or ``netx`` reads slayer's or lava-dl netx's axis order instead
    (``runtime.netx_inputs.to_spikeport_layout``).
    ``compare="reference"`` also runs the reference simulator on the same inputs and puts the layer-by-layer
    comparison in ``RunReport.compare`` (``identical``: bit-exact spikes at every step and the same
    predictions); it is a no-op on the reference backend itself. ``batch_size`` is the reference
    simulators' batch. ``device``: the torch device of the ``reference-torch`` target (``cuda`` / ``cuda:N``: a
    GPU); ``backend="reference"`` with a device other than ``cpu`` means ``reference-torch``."""
    from spikeport.runtime.netx_run import NetxInputs
    from spikeport.runtime.targets import RunOptions, target

    chosen = target(backend, device)
    if samples is not None and samples < 1:
        raise ConfigError(f"samples = {samples}: expected a positive integer (or None for the default)")
    if batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}: expected a positive integer")
    options = RunOptions(batch_size=batch_size, progress=progress, device=device)
    chosen.check(options)  # fails at once, before anything is loaded (no GPU, no Lava, no Loihi 2)
    if _is_netx(artifact):
        if device != "cpu":
            raise ConfigError(
                f"{artifact}: device = {device!r} runs Spikformer artifacts; netx networks run on the CPU"
            )
        if dataset is not None or data_dir is not None:
            raise ConfigError(
                f"{artifact}: dataset and data_dir (--dataset, --data-dir) choose an artifact's test images; a netx "
                "network runs on its inputs (--inputs FILE.npy)"
            )
        how = NetxInputs(input_drive, steps, input_layout, num_layers, tuple(input_shape) if input_shape else None)
        return _run_netx(artifact, chosen, options, compare, inputs, how, samples)
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
            "--input-shape, --input-drive, --steps, --num-layers, --input-layout) apply to lava-dl netx files only; "
            "an artifact runs on its data set's test images"
        )
    return _run_artifact(artifact, chosen, options, compare, samples, dataset, data_dir)


def _is_netx(path: str | os.PathLike) -> bool:
    """A lava-dl netx file, or an artifact written by ``convert_netx``."""
    from spikeport.errors import ArtifactError
    from spikeport.ir.artifact import read_meta
    from spikeport.ir.netx import is_netx_file

    if is_netx_file(path):
        return True
    try:
        return read_meta(path).get("source") == "netx"
    except ArtifactError:
        return False  # reading it as an artifact says what is wrong


def _run_artifact(
    path: str | os.PathLike,
    target: Target,
    options: RunOptions,
    compare: str | None,
    samples: int | None,
    dataset: str | None,
    data_dir: str | None,
) -> RunReport:
    from spikeport.errors import ArtifactError
    from spikeport.ir import artifact
    from spikeport.runtime.targets import RunInputs, run_graph

    graph = artifact.read(path)
    if not graph.by_op("readout"):  # converted from a checkpoint: class scores are what it is run for
        raise ArtifactError(path, "/nodes", "has no readout node (the class scores); re-run `spikeport convert`")
    dataset = dataset or graph.meta.get("dataset", "digits")
    x, y = _test_images(graph, dataset, data_dir, samples if samples is not None else target.default_samples)
    inputs = RunInputs(x, y, artifact=str(path), artifact_digest=graph.digest, dataset=graph.meta.get("dataset"))
    return run_graph(graph, inputs, target, options, compare)


def _test_images(
    graph: Graph, dataset: str, data_dir: str | None, samples: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``samples`` test images of ``dataset``, channels-last, and their labels."""
    from spikeport.runtime.sim.executor import to_channels_last
    from spikeport.train.data import split_tensors

    meta = graph.meta
    size = (meta.get("model_config") or {}).get("img_size")
    x, y = split_tensors(dataset, data_dir or meta.get("data_dir"), "test", samples, size)
    return to_channels_last(x.numpy()), y.numpy()


def _run_netx(
    path: str | os.PathLike,
    target: Target,
    options: RunOptions,
    compare: str | None,
    inputs: str | os.PathLike | np.ndarray | None,
    how: NetxInputs,
    samples: int | None,
) -> RunReport:
    """A lava-dl netx file (or an artifact converted from one) on its inputs; the prediction is the last layer's
    most active neuron (``runtime.netx_run``)."""
    from spikeport.runtime.netx_run import prepare
    from spikeport.runtime.targets import RunInputs, run_graph

    work = prepare(path, inputs, how, samples)
    return run_graph(work.graph, RunInputs(work.inputs, artifact=str(path)), target, options, compare, work.readout)


# ---- report --------------------------------------------------------------------------------------------


def report(
    runs: Sequence[RunReport | str | os.PathLike],
    *,
    sources: Sequence[str] | None = None,
    profiles: Sequence[str] = ("loihi2", "cmos45nm"),
    gpus: Sequence[str] = ("h100",),
    gpu_bench: Sequence[str | os.PathLike | dict] = (),
    gpu_baseline: bool = True,
    vit: bool = True,
    measure_memory: bool = False,
    integer_inputs: str = "value_acs",
    first_layer_per_timestep: bool = True,
    precision: str = "fp32",
    html: str | os.PathLike | None = None,
    json: str | os.PathLike | None = None,
    title: str = "spikeport report",
    progress: Callable[[str], None] | None = None,
) -> dict:
    """The summary (schema ``spikeport.report`` v1) of run reports given as files or RunReports: per run and
    per inference the counts, the energy estimate of every hw profile, the state memory and the GPU
    baseline of the same network (measured on CUDA, otherwise estimated from ``gpus``; ``gpu_bench``: the
    JSON of `spikeport bench gpu`). Written to ``json`` and as a self-contained page to ``html`` when given.
    The counting rule (``integer_inputs``, ``first_layer_per_timestep``, ``precision``) is docs/counting.md's."""
    from spikeport.atomic import check_output_file, write_or_fallback
    from spikeport.baselines.gpu_bench import load_bench
    from spikeport.metrics.energy import CountingRule
    from spikeport.report.summary import ReportOptions, build_summary

    for target, what in ((json, "report json"), (html, "report html")):
        if target is not None:
            check_output_file(target, what)
    loaded = [r if isinstance(r, RunReport) else RunReport.from_json(Path(r)) for r in runs]
    if sources is None:
        sources = [f"run report {i + 1}" if isinstance(r, RunReport) else str(r) for i, r in enumerate(runs)]
    options = ReportOptions(
        profiles=tuple(profiles),
        gpus=tuple(gpus),
        rule=CountingRule(integer_inputs, first_layer_per_timestep, precision),
        gpu_baseline=gpu_baseline,
        vit=vit,
        measure_memory=measure_memory,
        gpu_bench=tuple(b if isinstance(b, dict) else load_bench(b) for b in gpu_bench),
    )
    summary = build_summary(loaded, sources=list(sources), options=options, progress=progress)
    failed = []  # both files are attempted before a failure of the first is raised
    if json is not None:
        from spikeport.analysis.io import write_json

        failed += _attempt(lambda: write_or_fallback(json, lambda path: write_json(summary, path), "the summary"))
    if html is not None:
        from spikeport.report.html import write_html

        failed += _attempt(lambda: write_or_fallback(html, lambda p: write_html(summary, p, title=title), "the page"))
    if failed:
        raise failed[0]
    return summary


def _attempt(write: Callable[[], object]) -> list[Exception]:
    from spikeport.errors import OutputPathError

    try:
        write()
    except OutputPathError as err:
        return [err]
    return []
