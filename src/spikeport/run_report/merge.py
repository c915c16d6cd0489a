"""Merging run reports: the shards of one run (the same graph on the same executor, on consecutive samples;
``runtime.distributed``) into the report of all their samples, equal field for field to a run of all of them in one
process, wall time aside."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Any, ClassVar, Protocol, TypeVar

from spikeport.run_report.checks import short
from spikeport.run_report.records import LayerReport


class Shard(Protocol):
    """What merging reads of a run report (``report.RunReport``)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]
    samples: int
    layers: list[LayerReport]
    model: dict[str, Any] | None
    predictions: list[int] | None
    accuracy: float | None
    wall_time_s: float | None
    totals: dict[str, int] | None
    state_peak: dict[str, float] | None
    extra: dict[str, Any]


S = TypeVar("S", bound=Shard)


def merge_shards(parts: Sequence[S]) -> S:
    """One run report of the samples of ``parts`` in their order: shards of one run (the same graph on the same
    executor, on consecutive samples; ``runtime.distributed``), equal field for field to a run of all of them
    in one process, wall time aside. Counts and totals are summed, predictions concatenated, the accuracy
    recomputed from each part's correct predictions, state peaks are the largest of any part, and the wall time
    is the longest part's (shards run side by side). What every part holds of the run itself (executor, model,
    layers' names and sizes, ...) must agree. ``recording`` is not merged here (``runtime.recording.concat``).
    A Lava run's and the hardware plan's records are merged by ``runtime.merge`` (their networks' records);
    a measured energy, a comparison and a netx run's outputs each describe one whole run (made after the merge
    where a run is sharded): all of these are refused here."""
    if not parts:
        raise ValueError("no run reports to merge")
    first = parts[0]
    for key in ("lava", "hardware", "energy_measured", "compare", "netx"):
        if any(getattr(part, key) is not None for part in parts):
            raise ValueError(f"run reports with '{key}' describe one whole run: they cannot be merged")
    for key in MERGED_SAME:
        same(parts, key, attrgetter(key))
    same(parts, "layers", lambda part: [row.name for row in part.layers])
    layers = []
    for i, row in enumerate(first.layers):
        rows = [part.layers[i] for part in parts]
        for key in LAYER_SAME:
            same(rows, f"layers[{i}].{key}", attrgetter(key))
        same(rows, f"layers[{i}] counters", lambda r: list(r.counts))
        counts = {key: [sum(step) for step in zip(*(r.counts[key] for r in rows), strict=True)] for key in row.counts}
        layers.append(replace(row, counts=counts, extra=copy.deepcopy(row.extra)))
    samples = sum(part.samples for part in parts)
    predictions = joined(parts, "predictions", lambda part: part.predictions)
    accuracy = joined(parts, "accuracy", lambda part: part.accuracy)
    if accuracy is not None:  # each part's accuracy is its correct predictions over its samples: add those up
        accuracy = sum(round(part.accuracy * part.samples) for part in parts if part.accuracy is not None) / samples
    walls = [part.wall_time_s for part in parts if part.wall_time_s is not None]
    totals = joined(parts, "totals", lambda part: part.totals)
    if totals is not None:
        totals = {key: sum(part.totals[key] for part in parts if part.totals) for key in totals}
    peaks = joined(parts, "state_peak", lambda part: part.state_peak)
    if peaks is not None:
        names = dict.fromkeys(name for part in parts for name in part.state_peak or {})
        peaks = {name: max((part.state_peak or {}).get(name, 0.0) for part in parts) for name in names}
    return replace(
        first,
        samples=samples,
        layers=layers,
        model=copy.deepcopy(first.model),
        predictions=None if predictions is None else [p for part in parts for p in part.predictions or []],
        accuracy=accuracy,
        wall_time_s=max(walls) if walls else None,
        totals=totals,
        state_peak=peaks,
        extra=copy.deepcopy(first.extra),
        recording=None,
    )


# what every shard of one run holds alike (RunReport.merge): the run's, not its samples'
MERGED_SAME = (
    "executor",
    "model",
    "T",
    "latency_timesteps",
    "peak_state_bytes",
    "artifact",
    "artifact_digest",
    "extra",
    "schema_version",
)
LAYER_SAME = ("op", "input_kind", "neurons", "fan_out", "state_bytes", "weight_bytes", "extra")


def same(items: Sequence[Any], what: str, get: Callable[[Any], Any]) -> None:
    """Every item's ``get`` is the first's, or a ValueError naming ``what`` (shards of different runs)."""
    values = [get(item) for item in items]
    for i, value in enumerate(values[1:], 1):
        if value != values[0]:
            raise ValueError(
                f"run report {i} has another {what} ({short(value)} vs {short(values[0])}): not a shard of the same run"
            )


def joined(parts: Sequence[S], what: str, get: Callable[[S], Any]) -> Any:
    """The first part's ``get`` where every part has one, None where none has; a ValueError where only some do."""
    given = [get(part) is not None for part in parts]
    if any(given) and not all(given):
        raise ValueError(f"'{what}' is in some of the run reports only: not shards of the same run")
    return get(parts[0])
