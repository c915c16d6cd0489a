"""A run's chip footprint: check-hw on the artifact that ran, on the first neuromorphic profile of the report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spikeport.errors import SpikeportError
from spikeport.hw_profiles import HwProfile
from spikeport.ir.graph import Graph
from spikeport.report.inputs import ChipFootprint
from spikeport.run_report import RunReport
from spikeport.runtime.loihi2.check_hw import check_hw


def chip_footprint(
    run: RunReport, profile: HwProfile, read_graph: Callable[[Path], Graph], say: Callable[[str], None]
) -> tuple[ChipFootprint | None, str]:
    """(check-hw's footprint of the artifact that ran, or None; why not). ``read_graph`` reads an artifact or a
    lava-dl netx file (``spikeport.api.load_graph``): a netx run report names the netx file it ran."""
    if not run.artifact:
        return None, "the run report names no artifact"
    path = Path(run.artifact)
    if not path.is_file():
        return None, f"artifact {path} not found here"
    try:
        graph = read_graph(path)
        if run.artifact_digest and graph.digest and graph.digest != run.artifact_digest:
            return None, f"{path} is another conversion than the one that ran (root digest differs)"
        say(f"check-hw on {path} ({profile.name}): cores, synapses, state")
        result = check_hw(graph, profile).to_dict()
    except (SpikeportError, ImportError) as err:
        return None, f"check-hw could not read {path}: {err}"
    bits = int(profile.si("limits", "weight_bits")) if profile.has("limits", "weight_bits") else None
    return ChipFootprint.from_check_hw(result, str(path), bits), ""
