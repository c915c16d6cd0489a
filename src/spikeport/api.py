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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spikeport.errors import ConfigError, unknown_choice
from spikeport.run_report import RunReport

if TYPE_CHECKING:
    import numpy as np
    import torch
    from torch import nn

    from spikeport.convert.api import ConversionResult
    from spikeport.convert.qat import QatResult
    from spikeport.ir.graph import Graph
    from spikeport.train.api import TrainConfig
    from spikeport.train.loop import TrainResult

__all__ = ["BACKENDS", "RunReport", "check_hw", "convert", "report", "run", "train", "train_config"]

BACKENDS = ("reference", "lava", "loihi2")
COMPARE = ("reference",)
DEFAULT_LAVA_SAMPLES = 200  # Lava on a CPU runs a few samples a second; the reference runs all


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
    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import dataset_of, split_tensors

    _check_file_name(name)
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


def _check_file_name(name: str) -> None:
    """A conversion's ``name`` is the stem of files that go into ``out``: ``../../x`` would write outside it."""
    if not name or Path(name).name != name or name in (".", ".."):
        raise ConfigError(f"name = {name!r}: expected a file name (no folder): the files go into `out`")


@dataclass(frozen=True)
class NetxConversion:
    """What ``convert_netx`` wrote: the artifact, its conversion report (also in ``conversion_report.json``)."""

    graph: Graph
    artifact_path: Path
    report: dict
    files: list[Path]


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
    """A lava-dl netx file -> ``<out>/<name>.spk.h5`` (the graph ``graph_from_netx`` reads, already integer: nothing
    is quantized) and ``<out>/conversion_report.json`` (netx layer -> spikeport nodes). ``input_drive`` is fixed in
    the artifact (``spikes`` or ``bias``, see ``graph_from_netx``); ``steps`` is its T (default: the file's
    ``simulation/tSample``, else 16; spike inputs of another length still run). No torch is needed."""
    from spikeport.atomic import check_output_dir
    from spikeport.ir import artifact as artifact_io
    from spikeport.ir.limits import MAX_T
    from spikeport.ir.netx import default_input_drive, graph_from_netx, netx_steps
    from spikeport.runtime.netx_run import declared_input_shape

    path, out = Path(netx_file), check_output_dir(out, "convert out")
    _check_file_name(name)
    T = steps if steps is not None else netx_steps(path) or 16
    if not 1 <= T <= MAX_T:
        raise ConfigError(f"steps = {T}: expected 1..{MAX_T} time steps per sample")
    shape = tuple(input_shape) if input_shape else declared_input_shape(path)
    input_drive = input_drive or default_input_drive(path)
    graph = graph_from_netx(path, shape, T=T, input_drive=input_drive, num_layers=num_layers)
    graph.meta.update({"netx_file": str(path.resolve()), "input_drive": input_drive})
    layers = [
        {"node": n, "op": node.op, "shape": list(node.shape), "netx_layer": n.split(".")[0].replace("layer", "layer/")}
        for n, node in ((n, graph.nodes[n]) for n in graph.order)
    ]
    report = {
        "schema": "spikeport.netx_conversion",
        "schema_version": 1,
        "source": str(path.resolve()),
        "input_shape": list(graph.nodes["input"].shape),
        "input_drive": input_drive,
        "T": T,
        "layers": layers,
        "note": "netx files are integer already: the artifact holds their integers unchanged (no quantization)",
    }
    files = artifact_io.write_conversion(graph, out, name, report)
    return NetxConversion(graph, files[0], report, files)


ONNX_CHECK_SAMPLES = 64  # test images the conversion runs through ONNX Runtime against torch


def _onnx_export(model: nn.Module, images: torch.Tensor) -> tuple[bytes, dict | None] | None:
    """The float model's ONNX export (the GPU baseline) and its ONNX Runtime parity with torch on ``images``
    (max logit difference, argmax agreement; None without onnxruntime), or None without the onnx exporter."""
    import tempfile

    try:
        from spikeport.exports.onnx import export_onnx
    except ImportError:
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        images = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        result = export_onnx(model, path, check_images=images)
        return path.read_bytes(), result.check


# ---- run -----------------------------------------------------------------------------------------------


def check_hw(artifact: str | os.PathLike, profile: str = "loihi2") -> dict[str, Any]:
    """Hardware readiness of a converted artifact (schema spikeport.check_hw): which Lava processes go on the
    chip, which stay on the host, the cores, the state each holds, the limits broken."""
    from spikeport.ir import artifact as artifact_io
    from spikeport.runtime.loihi2.check_hw import check_hw as check

    return check(artifact_io.read(str(artifact)), profile).to_dict()


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
    """Run an artifact (``.spk.h5``) or a lava-dl netx file on ``backend`` and report.

    Artifacts run on the first ``samples`` test images of their data set (``dataset`` / ``data_dir``
    override the artifact's; default: all of them on the reference simulator, 200 on Lava). netx files (and
    artifacts converted from them, ``convert_netx``) run on ``inputs`` (an .npy file or an array): with
    ``input_drive="spikes"`` binary spikes [S, T, *input_shape] (channels-last); with ``input_drive="bias"`` integer
    images [S, H, W, C] that set the file's input neuron's bias for ``steps`` steps, as lava-dl's own tests feed
    PilotNet and TinyNet; with ``input_drive="graded"`` integers [S, T, *input_shape] into an SDNN input layer.
    None: the file's own drive (docs/netx.md). ``num_layers`` reads only the file's first layers.
    ``input_layout`` ``slayer`` or ``netx`` reads slayer's or lava-dl netx's axis order instead
    (``netx_run.to_spikeport_layout``).
    ``compare="reference"`` also runs the reference simulator on the same inputs and puts the layer-by-layer
    comparison in ``RunReport.compare`` (``identical``: bit-exact spikes at every step and the same
    predictions); it is a no-op on the reference backend itself. ``batch_size`` is the reference
    simulator's batch. ``device`` (reference backend, artifacts): ``cpu`` runs the numpy reference, ``cuda`` /
    ``cuda:N`` the same integers in torch on that GPU (``runtime.sim.torch_reference``, executor
    ``reference-torch-cuda``)."""
    if backend not in BACKENDS:
        raise unknown_choice("backend", backend, BACKENDS)
    if compare is not None and compare not in COMPARE:
        raise unknown_choice("compare", compare, COMPARE)
    if samples is not None and samples < 1:
        raise ConfigError(f"samples = {samples}: expected a positive integer (or None for the default)")
    if batch_size < 1:
        raise ConfigError(f"batch_size = {batch_size}: expected a positive integer")
    if device != "cpu" and backend != "reference":
        raise ConfigError(f"device = {device!r} applies to the reference backend only (backend = {backend!r})")
    if device != "cpu":
        from spikeport.runtime.sim.torch_reference import torch_device

        torch_device(device)  # no such GPU: fail before loading anything
    if backend == "loihi2":
        from spikeport.runtime.loihi2.backend import require_loihi2

        require_loihi2()  # fails at once, before loading anything, off INRC systems
    from spikeport.ir.netx import is_netx_file

    netx = is_netx_file(artifact) or _converted_from_netx(artifact)
    if netx and device != "cpu":
        raise ConfigError(f"{artifact}: device = {device!r} runs Spikformer artifacts; netx networks run on the CPU")
    if netx:
        report = _run_netx(
            artifact,
            backend,
            compare,
            samples,
            batch_size,
            inputs,
            input_shape,
            progress,
            NetxInputs(input_drive, steps, input_layout, num_layers),
        )
    elif (input_drive, steps, input_layout, num_layers) != (None, None, "spikeport", None):
        raise ConfigError(
            f"{artifact}: input_drive, steps and input_layout (--input-drive, --steps, --input-layout) apply to "
            "lava-dl netx files only; an artifact runs on its data set's test images"
        )
    else:
        report = _run_artifact(artifact, backend, compare, samples, dataset, data_dir, batch_size, progress, device)
    return RunReport.from_dict(report, f"run report of {artifact}")


def _converted_from_netx(path: str | os.PathLike) -> bool:
    """An artifact written by ``convert_netx`` (False for anything else: reading it says what is wrong)."""
    from spikeport.errors import ArtifactError
    from spikeport.ir.artifact import read_meta

    try:
        return read_meta(path).get("source") == "netx"
    except ArtifactError:
        return False


def _run_artifact(
    path,
    backend: str,
    compare: str | None,
    samples: int | None,
    dataset: str | None,
    data_dir: str | None,
    batch_size: int,
    progress: bool,
    device: str = "cpu",
) -> dict:
    from spikeport.errors import ArtifactError
    from spikeport.ir import artifact

    graph = artifact.read(path)
    if not graph.by_op("readout"):  # converted from a checkpoint: class scores are what it is run for
        raise ArtifactError(path, "/nodes", "has no readout node (the class scores); re-run `spikeport convert`")
    x, y = _test_images(
        graph,
        dataset,
        data_dir,
        samples if samples is not None else (None if backend == "reference" else DEFAULT_LAVA_SAMPLES),
    )
    if backend == "reference" and device != "cpu":
        from spikeport.runtime.sim.torch_reference import TorchReferenceSimulator

        report = TorchReferenceSimulator(graph, device).run(x, y, batch_size=batch_size, progress=progress)
    elif backend == "reference":
        from spikeport.runtime.sim.reference import ReferenceSimulator

        report = ReferenceSimulator(graph).run(x, y, batch_size=batch_size, progress=progress)
    else:
        report, spikes = _run_lava(graph, x, y, backend, progress)
        if compare:
            report["compare"] = _compare_with_reference(graph, report, spikes, x, batch_size)
    report["artifact"], report["artifact_digest"] = str(path), graph.digest
    report["model"]["dataset"] = graph.meta.get("dataset")
    return report


def _test_images(
    graph: Graph, dataset: str | None, data_dir: str | None, samples: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``samples`` test images of the artifact's data set, channels-last, and their labels."""
    from spikeport.runtime.sim.executor import to_channels_last
    from spikeport.train.data import split_tensors

    meta = graph.meta
    x, y = split_tensors(
        dataset or meta.get("dataset", "digits"),
        data_dir or meta.get("data_dir"),
        "test",
        samples,
        (meta.get("model_config") or {}).get("img_size"),
    )
    return to_channels_last(x.numpy()), y.numpy()


def _run_lava(graph: Graph, x: np.ndarray, y: np.ndarray | None, backend: str, progress: bool) -> tuple[dict, dict]:
    if backend == "loihi2":
        from spikeport.runtime.loihi2.backend import run_loihi2

        return run_loihi2(graph, x, y)
    from spikeport.runtime.lava.run import run_lava

    return run_lava(graph, x, y, progress=progress)


@dataclass(frozen=True)
class NetxInputs:
    """How a netx file's inputs are given: ``drive`` spikes|bias|graded (None: the file's own), ``steps`` per
    sample (bias), ``layout``."""

    drive: str | None = None
    steps: int | None = None
    layout: str = "spikeport"
    num_layers: int | None = None  # the file's first layers only (lava-dl's Network(num_layers=))


def _run_netx(
    path,
    backend: str,
    compare: str | None,
    samples: int | None,
    batch_size: int,
    inputs,
    input_shape: Sequence[int] | None,
    progress: bool,
    how: NetxInputs,
) -> dict:
    """A lava-dl netx file (or an artifact converted from one) on spike inputs [S, T, *input_shape], bias images
    [S, H, W, C] or graded integers [S, T, *input_shape]; a netx network has no readout, so the prediction is the
    last layer's most active neuron."""
    from spikeport.ir.netx import INPUT_DRIVES
    from spikeport.runtime.netx_run import (
        INPUT_LAYOUTS,
        load_inputs,
        netx_graph,
        netx_input_drive,
        run_netx,
        to_spikeport_layout,
    )

    how = NetxInputs(netx_input_drive(path, how.drive), how.steps, how.layout, how.num_layers)
    if how.drive not in INPUT_DRIVES:
        raise unknown_choice("input_drive", how.drive, INPUT_DRIVES)
    if how.layout not in INPUT_LAYOUTS:
        raise unknown_choice("input_layout", how.layout, INPUT_LAYOUTS)
    bias = how.drive == "bias"
    if inputs is None:
        raise ConfigError(
            f"{path} is a netx file: give its inputs with --inputs FILE.npy: spikes [S, T, *input_shape] (0/1), "
            "or with --input-drive bias --steps T integer images [S, H, W, C] for the input neuron's bias"
        )
    if bias and (how.steps is None or how.steps < 1):
        raise ConfigError(
            f"{path}: input_drive='bias' holds each image for a number of steps: give it with --steps T (steps=T)"
        )
    if not bias and how.steps is not None:
        raise ConfigError(
            f"{path}: --steps (steps=) applies to input_drive='bias' only; spike inputs [S, T, ...] give T themselves"
        )
    shape = tuple(int(s) for s in input_shape) if input_shape else None
    if isinstance(inputs, (str, os.PathLike)):
        x = load_inputs(inputs, how.drive, shape, samples, how.layout)
    else:
        x = to_spikeport_layout(inputs, how.drive, how.layout)
        x = x[:samples] if samples else x
    report, spikes = run_netx(
        path,
        x,
        backend,
        input_shape=shape,
        batch_size=batch_size,
        progress=progress and backend != "reference",
        input_drive=how.drive,
        steps=how.steps,
        num_layers=how.num_layers,
    )
    if compare and backend != "reference":
        from spikeport.runtime.netx_run import output_predictions

        per_step = tuple(x.shape[1:] if bias else x.shape[2:])
        graph = netx_graph(path, per_step, how.steps if bias else x.shape[1], how.drive, how.num_layers)
        report["compare"] = _compare_with_reference(
            graph, report, spikes, x, batch_size, readout=lambda g, sp: output_predictions(g, sp)[0]
        )
    report["model"]["dataset"] = None
    return report


def _compare_with_reference(
    graph: Graph,
    report: dict,
    spikes: dict,
    x: np.ndarray,
    batch_size: int,
    readout: Callable[[Graph, dict], list[int]] | None = None,
) -> dict:
    """The comparison block of a run: the reference simulator on the same inputs, every spiking layer at
    every step and the predictions (``readout``: how predictions are read when the graph has no readout)."""
    from spikeport.runtime.lava.run import compare_with_reference, reference_spikes

    ref_report, ref_spikes = reference_spikes(graph, x, batch_size)
    if readout is not None:
        ref_report["predictions"] = readout(graph, ref_spikes)
    return compare_with_reference(graph, report, spikes, ref_report, ref_spikes)


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
        gpu_bench=tuple(b if isinstance(b, dict) else _load_bench(b) for b in gpu_bench),
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


def _load_bench(path: str | os.PathLike) -> dict:
    """The results of `spikeport bench gpu --json`, checked."""
    import json

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: GPU bench file not found")
    try:
        data = json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{p}: not a JSON file ({err})") from None
    if not isinstance(data, dict) or data.get("schema") != "spikeport.gpu_bench":
        raise ConfigError(
            f"{p}: field 'schema' is not 'spikeport.gpu_bench' (write it with "
            "`spikeport bench gpu ... --json > bench.json`)"
        )
    return data
