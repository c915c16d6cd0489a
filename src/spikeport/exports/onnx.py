"""ONNX export of the float network: the GPU baseline (DESIGN.md section 6), checked in ONNX Runtime.

What is exported: the whole float model (images [B, C, H, W] -> logits [B, classes]) with the
plain-torch neuron path (``ModelConfig(neuron_backend="torch")``): the weights of a SpikingJelly-backend
model load unchanged into a torch-backend copy (LIFs hold no parameters, the state dicts are the same
keys). ``TorchLIF`` uses a hard threshold ``h >= v_th`` while exporting, and its loop over T is unrolled
(T is fixed by the config, so the tracer's "iterating over a tensor" warning is expected and silenced).
The attention runs in its parallel form by default (the GPU form); ``inference_form="recurrent"``
exports the token-by-token form instead.

Exporter: ``torch.onnx.export(..., dynamo=False)``, the TorchScript-based one. Checked on torch 2.13:
the dynamo exporter needs ``onnxscript`` (not a spikeport dependency), took ~30 s instead of ~1 s for
digits-tiny, and for ``lrf_dyn`` produced a graph whose batch dimension was specialised to 1 in spite
of ``dynamic_shapes``. The TorchScript exporter has no symbolic for ``aten::diag_embed`` (the LRF-Dyn
transition matrix A); A and the dendritic kernel depend on parameters only, so the export copy
computes them once and the graph holds them as constants.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from spikeport.atomic import atomic_write
from spikeport.brief import brief_repr
from spikeport.data.images import dataset_of, preprocessing as preprocessing_of
from spikeport.errors import ConfigError, ConversionError, WriteError
from spikeport.train.checkpoint import load_model
from spikeport.train.data import split_tensors
from spikeport.train.model_config import ModelConfig, config_of

EXPORTER = "torch.onnx.export(dynamo=False)"
DEFAULT_OPSET = 17  # ONNX Runtime >= 1.14, TensorRT >= 8.6
OPSETS = range(14, 21)  # Trilu (lrf_causal mask) needs 14; the TorchScript exporter stops at 20
INPUT_NAME, OUTPUT_NAME = "images", "logits"


@dataclass
class OnnxExport:
    path: Path
    opset: int
    batch_size: int | str  # an int, or "dynamic"
    input_shape: list[int | str]  # [batch, C, H, W]; batch is "batch" when dynamic
    file_bytes: int
    exporter: str = EXPORTER
    inference_form: str = "parallel"
    check: dict[str, Any] | None = None  # ONNX Runtime vs torch, when check_images was given
    metadata: dict[str, str] = field(default_factory=dict)  # the model's metadata_props (preprocessing contract)

    __repr__ = brief_repr


def export_copy(model: nn.Module, inference_form: str = "parallel") -> nn.Module:
    """An eval-mode copy ready for tracing: torch neuron backend, the given attention form, parameter-only
    subgraphs (the dendritic A and kernel) frozen to constants, all neuron states reset."""
    from spikeport.train.attention import Dendrites
    from spikeport.train.models import Spikformer, build_model, set_inference_form
    from spikeport.train.neurons import reset_net

    if not isinstance(model, Spikformer):
        twin = copy.deepcopy(model).eval()
    else:
        cfg = replace(model.cfg, neuron_backend="torch")
        twin = build_model(cfg).eval()
        twin.load_state_dict(model.state_dict(), strict=True)  # LIFs hold no parameters: same keys
        set_inference_form(twin, inference_form)
        for den in twin.modules():
            if isinstance(den, Dendrites):
                den.freeze(cfg.num_tokens)
    for p in twin.parameters():
        p.requires_grad_(False)
    reset_net(twin)
    return twin


def _model_config(model: nn.Module) -> ModelConfig:
    """``train.model_config.config_of``, refused as what it is here: a model ONNX export cannot trace."""
    try:
        return config_of(model)
    except ConfigError as err:
        raise ConversionError(f"ONNX export: {err}") from None


def _input_shape(model: nn.Module) -> tuple[int, int, int]:
    cfg = _model_config(model)
    return cfg.in_channels, cfg.img_size, cfg.img_size


def export_onnx(
    model: nn.Module,
    path: str | os.PathLike[str],
    *,
    batch_size: int | str = "dynamic",
    opset: int = DEFAULT_OPSET,
    inference_form: str = "parallel",
    check_images: torch.Tensor | None = None,
    preprocessing: dict[str, Any] | None = None,
) -> OnnxExport:
    """Export ``model`` (Spikformer with any attention, or the ViT) to ONNX at ``path``, atomically.

    batch_size: "dynamic" (a symbolic batch axis, the default: one file for every batch) or a fixed positive
        int. A fixed batch makes the tracer fold the batch-sized zeros of every neuron's initial state into the
        graph as constants: the file grows with the batch (digits-tiny: 1.6 MB at 1, 193 MB at 256).
    opset: ONNX opset, 14..20 (default 17).
    check_images: optional [B, C, H, W]; when given the file is run in ONNX Runtime (CPU) and compared
        with the torch model (``OnnxExport.check``: max |logit difference|, argmax agreement).
    preprocessing: what the input expects (``train.data.preprocessing``: mean, std, pixel scale, classes);
        written with the layout and T into the file's metadata_props (``metadata``), so that a reader of the
        file alone feeds it what it was trained on.
    The input is named "images", the output "logits".
    """
    if not (batch_size == "dynamic" or (isinstance(batch_size, int) and batch_size > 0)):
        raise ConfigError(f"ONNX batch_size must be 'dynamic' or a positive int, got {batch_size!r}")
    if opset not in OPSETS:
        raise ConfigError(f"ONNX opset {opset} is not supported; use {OPSETS.start}..{OPSETS.stop - 1}")
    import onnx

    path = Path(path)
    twin = export_copy(model, inference_form)
    c, h, w = _input_shape(model)
    example = torch.zeros(batch_size if isinstance(batch_size, int) else 1, c, h, w)  # "dynamic": traced at 1
    dynamic = {INPUT_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}} if batch_size == "dynamic" else None
    with atomic_write(path) as tmp:
        with warnings.catch_warnings():
            # T is fixed by the config: unrolling the time loop is intended; the legacy exporter is chosen
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
            try:
                torch.onnx.export(
                    twin,
                    (example,),
                    tmp,
                    dynamo=False,
                    opset_version=opset,
                    input_names=[INPUT_NAME],
                    output_names=[OUTPUT_NAME],
                    dynamic_axes=dynamic,
                    do_constant_folding=True,
                )
            except RuntimeError as err:  # protobuf's limit on one message: the whole file
                if "2GiB" not in str(err):
                    raise
                n = sum(p.numel() for p in model.parameters())
                raise ConversionError(
                    f"ONNX export: the model's {n:,} parameters ({4 * n / 2**30:.1f} GiB as float32, more once "
                    "constants are folded) exceed the 2 GiB one ONNX file holds (protobuf's limit)"
                ) from None
        metadata = input_metadata(model, preprocessing)
        graph = onnx.load(tmp)
        for key, value in metadata.items():
            graph.metadata_props.add(key=key, value=value)
        onnx.save(graph, tmp)
        onnx.checker.check_model(tmp)
    result = OnnxExport(
        path,
        opset,
        batch_size,
        ["batch" if batch_size == "dynamic" else batch_size, c, h, w],
        path.stat().st_size,
        inference_form=inference_form,
        metadata=metadata,
    )
    if check_images is not None:
        result.check = check_onnx(model, path, check_images, inference_form)
    return result


CHECK_SAMPLES = 64  # test images an export of a checkpoint runs through ONNX Runtime against torch (as convert's)


def export_checkpoint(
    checkpoint: str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    check: bool = True,
    batch_size: int | str = "dynamic",
    opset: int = DEFAULT_OPSET,
    inference_form: str = "parallel",
) -> OnnxExport:
    """``export_onnx`` of a trained model's checkpoint (``spikeport export CKPT --onnx OUT``), the same file
    ``spikeport convert`` writes beside its artifact: the data set's preprocessing in its metadata and, with
    ``check`` and onnxruntime installed, its logits compared with torch's on the first test images."""
    model, ckpt = load_model(checkpoint)
    dataset = dataset_of(ckpt, None)
    images = None
    if check:
        try:
            import onnxruntime  # noqa: F401

            data_dir = (ckpt.get("train_config") or {}).get("data_dir")
            images = split_tensors(dataset, data_dir, "test", CHECK_SAMPLES, config_of(model).img_size)[0]
        except ImportError:  # no ONNX Runtime: the file is written unchecked
            images = None
    return export_onnx(
        model,
        path,
        batch_size=batch_size,
        opset=opset,
        inference_form=inference_form,
        check_images=images,
        preprocessing=preprocessing_of(dataset),
    )


def input_metadata(model: nn.Module, preprocessing: dict[str, Any] | None = None) -> dict[str, str]:
    """The ONNX metadata_props of an export: the input contract (layout, shape, T) and, when known, the
    preprocessing (the metadata key ``"spikeport.preprocessing"``, JSON: mean, std, pixel scale, class names).
    Read them back with ``onnx.load(path).metadata_props`` or
    ``onnxruntime.InferenceSession(path).get_modelmeta().custom_metadata_map``."""
    c, h, w = _input_shape(model)
    cfg = _model_config(model)
    out = {
        "spikeport.input": json.dumps(
            {
                "name": INPUT_NAME,
                "layout": "NCHW",
                "shape": ["batch", c, h, w],
                "dtype": "float32",
                "T": cfg.T if cfg.arch == "spikformer" else None,
                "note": "the network repeats each image over T time steps itself; feed one normalised image per sample",
            }
        ),
        "spikeport.output": json.dumps({"name": OUTPUT_NAME, "shape": ["batch", cfg.num_classes], "meaning": "logits"}),
    }
    if preprocessing:
        out["spikeport.preprocessing"] = json.dumps(preprocessing)
        out["mean"] = json.dumps(preprocessing.get("mean"))
        out["std"] = json.dumps(preprocessing.get("std"))
        if preprocessing.get("classes"):
            out["class_names"] = json.dumps(preprocessing["classes"])
    return out


def read_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The metadata_props of an ONNX file (``input_metadata``'s keys for a spikeport export)."""
    import onnx

    return {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}


def ort_session(path: str | os.PathLike[str], threads: int | None = None) -> Any:  # onnxruntime is untyped
    """An ONNX Runtime CPU session (``threads`` intra-op threads; None = ORT's default)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if threads:
        opts.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def torch_logits(model: nn.Module, images: torch.Tensor, inference_form: str = "parallel") -> np.ndarray:
    """Logits of the float torch model (the export copy: same weights, plain-torch neurons)."""
    from spikeport.train.neurons import reset_net

    twin = export_copy(model, inference_form)
    with torch.no_grad():
        out: np.ndarray = twin(images).numpy()
    reset_net(twin)
    return out


CHECK_PIXELS = 16 * 32 * 32  # image pixels per chunk of check_onnx (16 CIFAR images, 1 ImageNet image)


def check_onnx(
    model: nn.Module,
    path: str | os.PathLike[str],
    images: torch.Tensor,
    inference_form: str = "parallel",
    atol: float = 1e-5,
    rtol: float = 1e-5,
    threads: int | None = None,
) -> dict[str, Any]:
    """ONNX Runtime (CPU, default optimisations) against torch on the same images.

    A spiking network is discontinuous: where ORT's kernels round differently from torch's (another
    summation order in conv/GEMM), a membrane within ~1 ulp of the threshold flips a spike and that
    sample's logits move by a macroscopic amount. So the check reports the share of samples whose
    logits agree within ``atol + rtol |torch logit|`` (numpy.isclose), the largest difference, and the
    argmax agreement (docs/exports.md)."""
    session = ort_session(path, threads)
    batch = session.get_inputs()[0].shape[0]
    # a dynamic batch runs in chunks of CHECK_PIXELS: 64 CIFAR images at once held 1.6 GB of activations in torch and
    # in ORT, 64 ImageNet ones would hold 50x that
    size = batch if isinstance(batch, int) else max(1, CHECK_PIXELS // int(np.prod(images.shape[2:])))
    chunks = torch.split(images, size)
    ref = np.concatenate([torch_logits(model, x, inference_form) for x in chunks])
    if isinstance(batch, int) and len(images) % batch:
        raise ConfigError(f"{path}: fixed batch {batch} does not divide {len(images)} check images")
    out = np.concatenate([session.run([OUTPUT_NAME], {INPUT_NAME: x.numpy()})[0] for x in chunks])
    close = np.isclose(out, ref, rtol=rtol, atol=atol).all(1)
    return {
        "executors": ["onnxruntime-cpu", "torch-float"],
        "samples": int(len(images)),
        "atol": atol,
        "rtol": rtol,
        "samples_within_tolerance": float(np.mean(close)),
        "max_abs_diff": float(np.abs(out - ref).max()),
        "argmax_agreement": float(np.mean(out.argmax(1) == ref.argmax(1))),
    }


def ort_latency(
    path: str | os.PathLike[str],
    images: torch.Tensor,
    repeats: int = 20,
    warmup: int = 3,
    threads: int | None = None,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """Median wall time of one ONNX Runtime CPU call on ``images`` and the same per sample: ``warmup`` calls, then
    ``repeats`` timed ones (at least 3, fewer than ``repeats`` once ``budget_s`` seconds are spent)."""
    session = ort_session(path, threads)
    feed = {INPUT_NAME: images.numpy()}
    for _ in range(warmup):
        session.run([OUTPUT_NAME], feed)
    times: list[float] = []
    while len(times) < repeats and (budget_s is None or len(times) < 3 or sum(times) < budget_s):
        start = time.perf_counter()
        session.run([OUTPUT_NAME], feed)
        times.append(time.perf_counter() - start)
    median = float(np.median(times))
    return {
        "executor": "onnxruntime-cpu",
        "batch": int(len(images)),
        "repeats": len(times),
        "median_s": median,
        "per_sample_s": median / len(images),
    }


def onnx_bytes(
    model: nn.Module, images: torch.Tensor | None, preprocessing: dict[str, Any] | None = None
) -> tuple[bytes, dict[str, Any] | None]:
    """The float model's ONNX file as bytes (the GPU baseline a conversion writes beside its artifact, its
    preprocessing in its metadata) and its ONNX Runtime parity with torch on ``images`` (max logit difference,
    argmax agreement; None without onnxruntime or without images)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        images = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        try:
            result = export_onnx(model, path, check_images=images, preprocessing=preprocessing)
        except WriteError as err:  # the temporary folder is full or limited: name what was being written
            raise WriteError(
                f"the ONNX export (in {tmp})", err.reason, "nothing was written; --no-onnx converts without it"
            ) from None
        return path.read_bytes(), result.check
