"""NIR export of a converted network: ``export_nir`` writes the parts that ``nir_graph.build_nir`` lowers
(atomically, with the export report beside them) and, given images, checks each part in norse first."""

from __future__ import annotations

import io
import os
from pathlib import Path

import torch
from torch import nn

from spikeport.atomic import write_bytes, write_json
from spikeport.data.images import dataset_of
from spikeport.exports.nir_check import check_parts

# re-exported: the parts' building blocks, for callers and tests that import them from exports.nir
from spikeport.exports.nir_graph import (
    DEFAULT_DT,
    NIR_LOWERINGS as NIR_LOWERINGS,
    NirExport,
    NirPart as NirPart,
    build_nir,
    euler_step_exact as euler_step_exact,
    lif_node as lif_node,
    nir_threshold as nir_threshold,
)
from spikeport.train.checkpoint import load_model
from spikeport.train.data import split_tensors
from spikeport.train.model_config import config_of


def export_nir(
    model: nn.Module, path: str | os.PathLike[str], *, dt: float = DEFAULT_DT, check_images: torch.Tensor | None = None
) -> NirExport:
    """Write the NIR parts of ``model`` to ``path`` (nir.write, atomically) and the export report next
    to it as ``<path>.json``. With ``check_images`` ([B, C, H, W]) every part is also loaded with
    ``norse.torch.from_nir`` and its spikes compared with the torch model's (``report["parity"]``).

    Load a part back with: ``norse.torch.from_nir(nir.read(path).nodes[part_name], dt=dt)``.
    """
    import nir

    path = Path(path)
    export = build_nir(model, dt)
    if check_images is not None:
        export.report["parity"] = check_parts(model, export, check_images)
    image = io.BytesIO()  # built in memory: HDF5 crashes writing to a disk that fills up
    nir.write(image, export.graph)
    write_bytes(path, image.getbuffer())

    export.path = path
    export.report_path = write_json(path.with_name(path.name + ".json"), export.report)
    return export


def export_checkpoint(
    checkpoint: str | os.PathLike[str], out: str | os.PathLike[str], *, check: bool = True
) -> NirExport:
    """``export_nir`` of a trained model's checkpoint (``spikeport export nir``); with ``check`` and norse installed
    each part is checked on the first 16 test images of the data set the model was trained on."""
    model, ckpt = load_model(checkpoint)
    images = None
    if check:
        try:
            import norse  # noqa: F401

            images = split_tensors(dataset_of(ckpt, None), None, "test", 16, config_of(model).img_size)[0]
        except ImportError:  # no norse: the parts are written unchecked
            images = None
    return export_nir(model, out, check_images=images)
