"""A lava-dl netx file -> a spikeport artifact (``spikeport convert network.net``), and such an artifact read back.

netx files hold integers already: the artifact keeps them unchanged (no quantization), with the input drive and
the number of time steps fixed at conversion (``meta["source"] == "netx"``, ``meta["input_drive"]`` the drive's
name). No torch is needed (this module imports only the IR and the netx reader).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spikeport.atomic import check_output_dir
from spikeport.brief import brief_repr
from spikeport.errors import ArtifactError, ConfigError
from spikeport.ir import artifact as artifact_io
from spikeport.ir.graph import Graph
from spikeport.ir.limits import MAX_T
from spikeport.netx.drive import InputDrive
from spikeport.netx.read import NetxDeclared, declared, graph_from_netx

DEFAULT_STEPS = 16  # a file that declares no simulation/tSample
# why a conversion chose the drive it chose (the conversion report's note)
INPUT_DRIVE_REASONS = {
    InputDrive.GRADED: "its input layer is an SDNN Delta encoder",
    InputDrive.BIAS: "it starts with an Input block whose CUBA neuron lava-dl drives through its bias",
    InputDrive.SPIKES: "its first layer reads spikes",
}


@dataclass(frozen=True)
class NetxConversion:
    """What ``convert_netx`` wrote: the artifact, its conversion report (also in ``conversion_report.json``)."""

    graph: Graph
    artifact_path: Path
    report: dict[str, Any]
    files: list[Path]

    BRIEF = ("artifact_path", "graph", "files")
    __repr__ = brief_repr


def check_file_name(name: str) -> None:
    """A conversion's ``name`` is the stem of files that go into ``out``: ``../../x`` would write outside it."""
    if not name or Path(name).name != name or name in (".", ".."):
        raise ConfigError(f"name = {name!r}: expected a file name (no folder): the files go into `out`")


def conversion_input_drive(file: NetxDeclared) -> InputDrive:
    """The input drive a conversion fixes when none is asked for: ``GRADED`` for an SDNN input layer, ``BIAS`` for an
    Input block with a CUBA neuron (lava-dl feeds PilotNet-LIF and TinyNet the image as that neuron's bias, and
    their ground truths are for that), else ``SPIKES``."""
    drive = file.input_drive
    return InputDrive.BIAS if drive is InputDrive.SPIKES and file.input_block else drive


def convert_netx(
    netx_file: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    name: str = "model",
    input_shape: Sequence[int] | None = None,
    input_drive: InputDrive | str | None = None,
    steps: int | None = None,
    num_layers: int | None = None,
) -> NetxConversion:
    """``<out>/<name>.spk.h5`` (the graph ``graph_from_netx`` reads) and ``<out>/conversion_report.json`` (netx
    layer -> spikeport nodes). ``input_drive`` (an :class:`InputDrive` or its name) is fixed in the artifact;
    ``steps`` is its T (default: the file's ``simulation/tSample``, else 16; spike inputs of another length
    still run)."""
    path, out = Path(netx_file), check_output_dir(out, "convert out")
    check_file_name(name)
    artifact_io.check_conversion_targets(out, name)
    if steps is not None and not 1 <= steps <= MAX_T:  # a bad option is said before any file is read
        raise ConfigError(f"steps = {steps}: expected 1..{MAX_T} time steps per sample")
    file = declared(path)  # the file's input and timing, read once
    declared_steps = file.steps if steps is None else None
    T = steps if steps is not None else declared_steps or DEFAULT_STEPS
    if not 1 <= T <= MAX_T and declared_steps is not None:  # the file's own: name it, and the way around it
        raise ArtifactError(
            path,
            "simulation/tSample",
            f"is {declared_steps}, expected 1..{MAX_T} time steps per sample (--steps T sets T)",
        )
    shape = tuple(input_shape) if input_shape else file.input_shape
    chosen = input_drive is None
    drive = InputDrive.of(input_drive) if input_drive else conversion_input_drive(file)
    graph = graph_from_netx(path, shape, T=T, input_drive=drive, num_layers=num_layers)
    graph.meta.update({"netx_file": str(path.resolve()), "input_drive": drive.value})
    layers = [
        {"node": n, "op": node.op, "shape": list(node.shape), "netx_layer": n.split(".")[0].replace("layer", "layer/")}
        for n, node in ((n, graph.nodes[n]) for n in graph.order)
    ]
    report = {
        "schema": "spikeport.netx_conversion",
        "schema_version": 1,
        "source": str(path.resolve()),
        "input_shape": list(graph.nodes["input"].shape),
        "input_drive": drive.value,
        "T": T,
        "layers": layers,
        "note": "netx files are integer already: the artifact holds their integers unchanged (no quantization)",
    }
    if chosen:
        report["input_drive_note"] = (
            f"input drive {drive.value!r} chosen from the file ({INPUT_DRIVE_REASONS[drive]}); "
            "--input-drive sets another"
        )
    files = artifact_io.write_conversion(graph, out, name, report)
    return NetxConversion(graph, files[0], report, files)


# ---- an artifact converted from a netx file, read back
def converted_input_drive(graph: Graph) -> InputDrive:
    """The input drive an artifact converted from a netx file was made with (``spikes`` where its meta names none)."""
    return InputDrive.of(str(graph.meta.get("input_drive", InputDrive.SPIKES.value)))
