"""A trained model (or a lava-dl netx file) -> an artifact: ``convert``, ``convert_netx``, the modules convert knows."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spikeport import file_kinds
from spikeport.api._keywords import _renamed
from spikeport.api.choices import Dataset
from spikeport.atomic import check_output_dir
from spikeport.errors import ConfigError
from spikeport.netx.drive import InputDrive

if TYPE_CHECKING:
    import torch
    from torch import nn

    from spikeport.convert.api import ConversionResult
    from spikeport.netx.to_artifact import NetxConversion
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint, _LazyModule

    torch, nn = _LazyModule("torch"), _LazyModule("torch.nn")
    ConversionResult = _hint("convert.api.ConversionResult")
    NetxConversion = _hint("netx.to_artifact.NetxConversion")


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
    progress: bool | Callable[[str], None] = True,
    eval_samples: int | None = None,
    inputs: str | os.PathLike[str] | None = None,
    labels: str | os.PathLike[str] | None = None,
    dt: float | None = None,
    steps: int | None = None,
) -> ConversionResult:
    """Quantize a trained model to Loihi 2 fixed point and write ``<out>/<name>.spk.h5``, the ONNX GPU
    baseline ``<out>/<name>.onnx`` and ``<out>/conversion_report.json``.

    A NIR graph (``GRAPH.nir``: snnTorch, Norse, ...) goes through :func:`convert_nir` with ``inputs``, ``labels``,
    ``dt`` and ``steps`` (``calibrate``: the first samples that calibrate, ``samples``: the first compared on).

    ``checkpoint`` is a spikeport checkpoint file (``runs/<name>/checkpoint.pt``; ``out`` defaults to
    ``build/<run folder name>``) or a spikeport model in memory (then ``out`` is required). The fixed-point
    scales are calibrated on the first ``calibrate`` training images (0: static scales), and float,
    fake-quant and reference executors are compared on the first ``samples`` test images (None: all)
    of ``dataset`` (default: the one the model was trained on). ``host_attention``: SSA / causal attention computed
    on the host (AttentionCore) instead of the chip-native token mixing, a fallback. ``progress``: a line per stage
    on stderr (and bars on a terminal; the default, as ``train`` reports its epochs), False for none, or a function
    that takes each line. ``eval_samples``: ``samples``' old name (deprecated)."""
    from spikeport.convert.api import convert as convert_model
    from spikeport.data.images import preprocessing
    from spikeport.netx.to_artifact import check_file_name
    from spikeport.progress import progress_of
    from spikeport.runtime.lava.lowerings import lowering_summary

    check_file_name(name)
    samples = _renamed("eval_samples", eval_samples, "samples", samples)
    if isinstance(checkpoint, (str, os.PathLike)) and file_kinds.sniff(checkpoint) is file_kinds.FileKind.NIR:
        if out is None or inputs is None:
            raise ConfigError(
                f"convert {checkpoint}: a NIR graph needs `out` (--out DIR) and `inputs` (--inputs X.npy)"
            )
        return convert_nir(checkpoint, out, inputs=inputs, labels=labels, name=name, dt=dt, steps=steps,
                           calibrate=calibrate or None, samples=samples, progress=progress)  # fmt: skip
    nir_only = {"inputs": inputs, "labels": labels, "dt": dt, "steps": steps}
    given = [key for key, value in nir_only.items() if value is not None]
    if given:
        raise ConfigError(f"convert: {', '.join(given)} apply to NIR graphs (.nir) only, not to {checkpoint!r}")
    if calibrate < 0 or (samples is not None and samples < 1):
        raise ConfigError(f"calibrate = {calibrate}, samples = {samples}: expected calibrate >= 0 and samples >= 1")
    say = progress_of(progress, "convert")
    model, ckpt, source, out = _model_to_convert(checkpoint, out, name, onnx, say.stage)
    data, data_dir, calib, x, y = _conversion_images(model, ckpt, dataset, data_dir, calibrate, samples, say.stage)
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


def _model_to_convert(
    checkpoint: str | os.PathLike[str] | nn.Module,
    out: str | os.PathLike[str] | None,
    name: str,
    onnx: bool,
    stage: Callable[[str], None],
) -> tuple[nn.Module, dict[str, Any], dict[str, str], Path]:
    """(the model, its checkpoint dict, where it came from, the checked output folder): a checkpoint file loaded,
    or a model in memory with its configuration as the checkpoint."""
    from spikeport.ir.artifact import check_conversion_targets
    from spikeport.train.checkpoint import load_model
    from spikeport.train.model_config import config_of

    if isinstance(checkpoint, (str, os.PathLike)):
        file_kinds.expect(checkpoint, file_kinds.CONVERTIBLE, "convert")
        folder = check_output_dir(out if out is not None else Path("build") / Path(checkpoint).resolve().parent.name)
        check_conversion_targets(folder, name, onnx)
        stage(f"loading {checkpoint}")
        model, ckpt = load_model(checkpoint)
        return model, ckpt, {"checkpoint": str(Path(checkpoint).resolve())}, folder
    if out is None:
        raise ConfigError("convert: give `out` (the output folder) for a model in memory")
    config = config_of(checkpoint)
    folder = check_output_dir(out)
    check_conversion_targets(folder, name, onnx)
    return checkpoint, {"model_config": config.to_dict()}, {}, folder


def _conversion_images(
    model: nn.Module,
    ckpt: dict[str, Any],
    dataset: Dataset | None,
    data_dir: str | None,
    calibrate: int,
    samples: int | None,
    stage: Callable[[str], None],
) -> tuple[str, str | None, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """(dataset, data folder, calibration images, test images, test labels): the dataset the model was trained on
    unless another is given, checked against the model's input before any image is read."""
    from spikeport.data.images import check_model_input, dataset_of
    from spikeport.train.data import split_tensors
    from spikeport.train.model_config import config_of

    data = dataset_of(ckpt, dataset)
    data_dir = data_dir or (ckpt.get("train_config") or {}).get("data_dir")
    size = config_of(model).img_size
    check_model_input(data, size, config_of(model).in_channels)  # before any image is read or anything converted
    stage(f"reading {data}: {calibrate} training images to calibrate, the test images to compare on")
    calib = split_tensors(data, data_dir, "train", calibrate, size)[0] if calibrate else None
    x, y = split_tensors(data, data_dir, "test", samples, size)
    return data, data_dir, calib, x, y


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


def convert_nir(
    nir_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    inputs: str | os.PathLike[str],
    labels: str | os.PathLike[str] | None = None,
    name: str = "model",
    dt: float | None = None,
    steps: int | None = None,
    calibrate: int | None = None,
    samples: int | None = None,
    progress: bool | Callable[[str], None] = True,
) -> ConversionResult:
    """A NIR graph -> ``<out>/<name>.spk.h5`` and ``<out>/conversion_report.json`` (docs/nir.md): its primitives
    mapped onto spikeport's ops with Euler steps of ``dt`` seconds (default: the graph's metadata ``dt``; the
    libraries write none, so give it), ``steps`` time steps per sample (default: the graph's ``T``, else 16), the
    scales calibrated on the first ``calibrate`` (None: all) analog samples of ``inputs`` (.npy [S, *input shape],
    NIR's layout, fed every step), float / fake-quant / reference compared on the first ``samples`` (None: all) and
    scored on ``labels`` (.npy [S] integers) where given. The artifact runs on those samples (``run``, ``bundle``)."""
    from spikeport.nir_import.to_artifact import convert_nir as convert_file
    from spikeport.progress import progress_of
    from spikeport.runtime.lava.lowerings import lowering_summary

    if (calibrate is not None and calibrate < 1) or (samples is not None and samples < 1):
        raise ConfigError(
            f"calibrate = {calibrate}, samples = {samples}: expected positive numbers of samples (or None)"
        )
    return convert_file(
        nir_file,
        out,
        inputs=inputs,
        labels=labels,
        name=name,
        dt=dt,
        steps=steps,
        calibrate_samples=calibrate,
        samples=samples,
        lowering=lowering_summary,
        progress=progress_of(progress, "convert"),
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


def supported_modules() -> list[tuple[str, str]]:
    """(torch module, what it becomes) for every module ``convert`` knows."""
    from spikeport.convert.handlers import supported_modules as listed

    return [tuple(r) for r in listed()]  # type: ignore[misc]
