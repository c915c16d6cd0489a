"""The floor under a network's cores, and its neuron groups packed onto cores (docs/netx_and_hardware.md, "The floor
and the packing").

Each neuron group (a neuron process with the chip synapses that feed it, check_hw's rows) loads a core three ways,
each in cores: its neurons / ``neurons_per_core``, its synapse bytes / ``synaptic_memory_per_core``, its input axons
(presynaptic neurons) / ``fan_in_axons_per_core``. No placement can use fewer cores than the largest of the three
totals over the network: that is the floor, rounded up. A group alone takes the largest of its own three, rounded
up; many small groups so waste most of a core each. Packing puts up to ``neuron_groups_per_core`` consecutive
groups (layer order) on one run of cores, each group spread evenly over the run: the run needs the largest of the
three totals of its groups, rounded up once. The runs are chosen to use the fewest cores (dynamic programming over
the layer order: each group joins a run of at most that many groups).

The floor is split by where its load comes from: the float model's own neurons and synapses (a neuron layer of the
model and the weighted synapses that feed it) and what the lowering adds beyond them (coincidence pairs, products,
relays, partial sums, delay lines); ``Floor.model`` is the floor of the model's share alone, ``Floor.lowering`` what
the lowering's additions raise it by, and the placement's own overhead is the cores past the floor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spikeport.hw_profiles import HwProfile

# (the row's key, the profile limit it is divided by): the three loads of a neuron group
LOADS = (
    ("neurons", "neurons_per_core"),
    ("synapse_bytes", "synaptic_memory_per_core"),
    ("inputs", "fan_in_axons_per_core"),
)
EPS = 1e-9  # loads are sums of quotients: a run whose exact load is a whole number of cores takes that many


def loads(row: dict[str, Any], limits: dict[str, float | None], prefix: str = "") -> tuple[float, ...]:
    """The row's three loads in cores (0 where the profile sets no such limit); ``prefix`` 'model_': the float
    model's share."""
    return tuple(row[prefix + key] / limits[limit] if limits[limit] else 0.0 for key, limit in LOADS)


def ceil_cores(x: float) -> int:
    return max(1, math.ceil(x - EPS))


@dataclass(frozen=True)
class Limit:
    """One limit of the floor: its value and what it rests on (the profile's confidence and source)."""

    key: str
    value: float
    confidence: str
    source: str


@dataclass(frozen=True)
class Floor:
    """The lower bound on cores: ``cores`` = the largest of ``totals`` (cores by each limit, summed over the
    groups), rounded up; ``by`` the limit that sets it. ``model``: the same bound on the float model's own share
    (its neuron layers and weighted synapses); ``lowering``: what the lowering's additions raise it by."""

    cores: int
    by: str
    totals: dict[str, float]
    model: float
    model_by: str
    limits: tuple[Limit, ...]

    @property
    def lowering(self) -> float:
        return max(self.totals.values()) - self.model

    def to_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "by": self.by,
            "by_limit": {k: round(v, 3) for k, v in self.totals.items()},
            "model": round(self.model, 3),
            "model_by": self.model_by,
            "lowering": round(self.lowering, 3),
            "limits": [
                {"key": lim.key, "value": lim.value, "confidence": lim.confidence, "source": lim.source}
                for lim in self.limits
            ],
        }


def limits_of(prof: HwProfile) -> dict[str, float | None]:
    return {limit: prof.si("limits", limit) if prof.has("limits", limit) else None for _, limit in LOADS}


def network_floor(rows: Sequence[dict[str, Any]], prof: HwProfile) -> Floor:
    """The floor of check_hw's neuron-group rows on the profile (each row with the model_ keys too)."""
    limits = limits_of(prof)
    total = [sum(x) for x in zip(*(loads(r, limits) for r in rows), strict=True)] if rows else [0.0] * len(LOADS)
    model = [sum(x) for x in zip(*(loads(r, limits, "model_") for r in rows), strict=True)] if rows else total
    keys = [limit for _, limit in LOADS]
    by, model_by = keys[total.index(max(total))], keys[model.index(max(model))]
    cited = []
    for key in keys:
        q = prof.get("limits", key)
        if q is not None:
            cited.append(Limit(key, float(q.si), q.confidence, q.source))
    return Floor(ceil_cores(max(total)), by, dict(zip(keys, total, strict=True)), max(model), model_by, tuple(cited))


@dataclass(frozen=True)
class Run:
    """Consecutive neuron groups (``rows``: their indices) sharing ``cores`` cores, each spread evenly over them."""

    rows: tuple[int, ...]
    cores: int


def pack(rows: Sequence[dict[str, Any]], limits: dict[str, float | None], per_core: int | None) -> list[Run]:
    """The groups in layer order cut into runs of at most ``per_core`` groups (None or 1: every group alone) that
    use the fewest cores, a run taking the largest of its three summed loads, rounded up; among equal totals the
    shorter runs."""
    n, span = len(rows), max(1, per_core or 1)
    each = [loads(r, limits) for r in rows]
    best, cut = [0] + [math.inf] * n, [0] * (n + 1)
    for i in range(1, n + 1):
        summed = [0.0] * len(LOADS)
        for j in range(i - 1, max(-1, i - 1 - span), -1):  # the run rows[j:i], shortest first
            summed = [a + b for a, b in zip(summed, each[j], strict=True)]
            cores = best[j] + ceil_cores(max(summed))
            if cores < best[i]:
                best[i], cut[i] = cores, j
    runs: list[Run] = []
    i = n
    while i > 0:
        j = cut[i]
        runs.append(Run(tuple(range(j, i)), int(best[i] - best[j])))
        i = j
    return runs[::-1]


def shares(runs: Sequence[Run], rows: Sequence[dict[str, Any]], limits: dict[str, float | None]) -> list[float]:
    """Each row's share of its run's cores: the run's cores split by the rows' loads on the limit that sets the run
    (a group bound by another limit rides on the spare room of the others' cores)."""
    out = [0.0] * len(rows)
    for run in runs:
        each = [loads(rows[i], limits) for i in run.rows]
        summed = [sum(x) for x in zip(*each, strict=True)]
        binding = summed.index(max(summed))
        for i, load in zip(run.rows, each, strict=True):
            out[i] = run.cores * (load[binding] / summed[binding] if summed[binding] else 1 / len(run.rows))
    return out
