"""The lower bound under a network's cores (docs/netx_and_hardware.md, "The lower bound"): each neuron group's
cores can go no lower than its neurons, its synapses stored once and its input axons, each over a core's budget
(``core_model.lower_bound``), rounded up; the network's bound is their sum, since the compiler gives every group
cores of its own. The compiler's cut sits above the bound (blocks of powers of two, kernels copied to every core of
a channel block, the partitioner's splits): the ratio says by how much.

The bound is split by where its load comes from: the float model's own neuron layers (``origin`` model) and what
the lowering adds beyond them (coincidence pairs, products, relays, partial sums, delay lines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from spikeport.hw_profiles import HwProfile

# the profile's limits the bound divides by, as check-hw names them
BUDGET_LIMITS = (
    ("neurons", "neurons_per_core"),
    ("synaptic memory", "synmem_units_per_core"),
    ("input axons", "fan_in_axons_per_core"),
)


@dataclass(frozen=True)
class Limit:
    """One budget of a core: its value and what it rests on (the profile's confidence and source)."""

    key: str
    value: float
    confidence: str
    source: str


@dataclass(frozen=True)
class Floor:
    """The lower bound on cores: ``cores`` the sum of the groups' bounds, each rounded up; ``by`` the budget that
    sets most of it; ``model`` the part of the float model's own neuron groups, ``lowering`` the rest."""

    cores: int
    by: str
    by_budget: dict[str, int]
    model: int
    limits: tuple[Limit, ...]

    @property
    def lowering(self) -> int:
        return self.cores - self.model

    def to_dict(self) -> dict[str, Any]:
        return {
            "cores": self.cores,
            "by": self.by,
            "by_budget": dict(self.by_budget),
            "model": self.model,
            "lowering": self.lowering,
            "limits": [
                {"key": lim.key, "value": lim.value, "confidence": lim.confidence, "source": lim.source}
                for lim in self.limits
            ],
        }


def group_bound(row: dict[str, Any]) -> int:
    """A group's bound in whole cores."""
    return max(1, math.ceil(float(row["lower_bound"]) - 1e-9))


def network_floor(rows: Sequence[dict[str, Any]], prof: HwProfile) -> Floor:
    """The bound of check-hw's neuron-group rows (each with its ``lower_bound``, ``bound_kind`` and ``origin``)."""
    by_budget = {name: 0 for name, _ in BUDGET_LIMITS}
    for row in rows:
        by_budget[row["bound_kind"]] += group_bound(row)
    cores = sum(by_budget.values())
    model = sum(group_bound(r) for r in rows if r["origin"] == "model")
    cited = []
    for _, key in BUDGET_LIMITS:
        q = prof.get("limits", key)
        if q is not None:
            cited.append(Limit(key, float(q.si), q.confidence, q.source))
    by = max(by_budget, key=lambda k: by_budget[k]) if rows else "neurons"
    return Floor(cores, by, by_budget, model, tuple(cited))
