"""A run's chip footprint: check-hw on the artifact that ran, on the first neuromorphic profile of the report, once
per artifact digest and profile (kept in the report cache, ``gather.cache``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from spikeport.gather.cache import ReportCache, file_digest, profile_digest
from spikeport.gather.kept import typed
from spikeport.hw_profiles import HwProfile
from spikeport.ir.graph import Graph
from spikeport.report.inputs import ChipFootprint
from spikeport.runtime.loihi2.check_hw import check_hw


def chip_footprint(
    path: Path,
    digest: str | None,
    profile: HwProfile,
    read_graph: Callable[[Path], Graph],
    say: Callable[[str], None],
    cache: ReportCache,
) -> ChipFootprint:
    """check-hw's footprint of the artifact at ``path`` (root digest ``digest``; None: a netx file, keyed by its
    bytes). ``read_graph`` reads an artifact or a lava-dl netx file (``spikeport.api.load_graph``). A file check-hw
    cannot read raises its SpikeportError."""
    key = {"artifact": digest or file_digest(path), "profile": profile_digest(profile)}
    kept = cache.get("chip", key, lambda value: typed(ChipFootprint, value))
    if kept is not None:
        return replace(kept, artifact=str(path))
    graph = read_graph(path)
    say(f"check-hw on {path} ({profile.name}): cores, synapses, state")
    result = check_hw(graph, profile).to_dict()
    bits = int(profile.si("limits", "weight_bits")) if profile.has("limits", "weight_bits") else None
    footprint = ChipFootprint.from_check_hw(result, str(path), bits)
    cache.put("chip", key, footprint.to_dict())
    return footprint
