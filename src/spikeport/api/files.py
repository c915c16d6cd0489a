"""The files: an artifact's or a netx file's graph, what an artifact holds, and the exports (netx, NIR, ONNX)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from spikeport import file_kinds
from spikeport.api.choices import AttentionForm
from spikeport.errors import ArtifactError

if TYPE_CHECKING:
    from spikeport.exports.onnx import OnnxExport
    from spikeport.ir.graph import Graph
else:  # typing.get_type_hints resolves each name on use (spikeport.api._hints)
    from spikeport.api._hints import _hint

    OnnxExport = _hint("exports.onnx.OnnxExport")
    Graph = _hint("ir.graph.Graph")


def load_graph(path: str | os.PathLike[str], input_shape: Sequence[int] | None = None) -> Graph:
    """The graph of an artifact (``.spk.h5``) or of a lava-dl netx file (``input_shape``: its input, H,W,C or N;
    default the file's)."""
    from spikeport.runtime.sources import Source

    return Source.open(path, "load_graph").file_graph(tuple(input_shape) if input_shape else None)


def inspect(artifact: str | os.PathLike[str]) -> dict[str, Any]:
    """An artifact's graph: per node its op, inputs, shape, the attributes of its fixed-point plan and the integer
    range of each parameter; with T, the model config, the data set and whether it was fine-tuned (QAT)."""
    from spikeport.ir import artifact as artifact_io
    from spikeport.ir.describe import describe

    file_kinds.expect(artifact, file_kinds.ARTIFACT_ONLY, "inspect")
    return describe(artifact_io.read(artifact))


def is_netx_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a lava-dl netx HDF5 file (not a spikeport artifact, not a checkpoint)."""
    from spikeport.netx.read import is_netx_file as netx

    return netx(path)


def is_nir_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a NIR graph file (``nir.write``: snnTorch, Norse, ``spikeport export --nir``)."""
    return file_kinds.sniff(path) is file_kinds.FileKind.NIR


def artifact_source(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Where a converted artifact came from, as check-hw and the reports name it: ``{"kind": "nir" | "netx" |
    "checkpoint", "file": ..., "library": ...}`` (library: NIR graphs whose metadata names one); None for a file that
    is no artifact or names no source."""
    from spikeport.ir import artifact as artifact_io

    try:
        meta = artifact_io.read_meta(path)
    except ArtifactError:
        return None
    if meta.get("source") == "nir":
        return {"kind": "nir", "file": meta.get("nir_file"), "library": meta.get("nir_library") or None}
    if meta.get("source") == "netx":
        return {"kind": "netx", "file": meta.get("netx_file")}
    if meta.get("checkpoint"):
        return {"kind": "checkpoint", "file": meta["checkpoint"]}
    return None


def stale_conversion_report(digest: str | None, artifact: str | os.PathLike[str]) -> str | None:
    """Why the conversion report beside ``artifact`` (root digest ``digest``) is another conversion's, or None."""
    from spikeport.ir.artifact import stale_report

    return stale_report(digest, artifact)


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
