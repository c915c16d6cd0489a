"""What check-hw returns: ``HwCheck`` (its verdict, totals and JSON, schema spikeport.check_hw) and its parts, the
limits broken (``Finding``), the neuron groups' cores (``GroupPlacement``) and the system that holds the chips
(``SystemFit``). Apart from the steps that compute them (``rules.py``, ``traffic.py``), so that a reader of a
check needs only the records."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.brief import brief_repr
from spikeport.chip_traffic import ChipTraffic
from spikeport.errors import HardwareLimitError
from spikeport.runtime import placement
from spikeport.runtime.lava.facts import Role
from spikeport.runtime.loihi2.floor import Floor
from spikeport.runtime.loihi2.plan import HardwarePlan
from spikeport.runtime.loihi2.processes import ProcessInfo

if TYPE_CHECKING:
    from spikeport.hw_profiles import System

SCHEMA = "spikeport.check_hw"
# 2: the chips, the system, the placement and the chip-to-chip traffic; a layer wider than one chip is placed
# across chips (no longer a 'cores_per_chip' violation); processes carry their role and largest decay
# 3: the floor (totals.floor) and the packing: totals.cores counts the packed runs of groups (placement.runs),
# totals.cores_alone every group on cores of its own; each layer row its loads, floor, origin and share
# 4: the core model fitted to Lava's Loihi 2 compiler: every group on cores of its own (no packing: placement.runs,
# totals.cores_alone and the rows' share are gone); each layer row its block, cores, bound_by, the fullest core's
# neurons / SynMem units / AxonIn, lower_bound and bound_kind, extrapolated and cores_high; totals.cores_high (the
# high end where a neuron model or synapse format is extrapolated), totals.floor in whole cores per budget
# (by_budget), totals.ratio_to_floor against it; synapse_bytes is stored weights x bits (no kernel copies)
SCHEMA_VERSION = 4
# what a reader of an older schema gets told (spikeport reads its own JSON back only through this module)
SCHEMA_CHANGES = {
    4: "cores come from the core model fitted to Lava's compiler; the packing (runs, cores_alone) is gone"
}


@dataclass
class Finding:
    layer: str
    rule: str
    value: float
    limit: float
    severity: str  # violation | warning
    message: str

    def error(self, profile: str) -> HardwareLimitError:
        return HardwareLimitError(self.layer, self.rule, self.value, self.limit, profile)


@dataclass(frozen=True)
class GroupPlacement:
    """A neuron group's cores: ``cores`` consecutive core slots from ``start`` (slot // cores_per_chip is the
    chip); its neurons spread evenly over them in index order."""

    group: str  # the neuron process
    layer: str
    neurons: int
    cores: int
    start: int

    def chips(self, per_chip: int) -> list[int]:
        return placement.Slot(self.group, self.cores, self.start).bins(per_chip)

    def core_of(self, neuron: np.ndarray) -> np.ndarray:
        """The core slot of each neuron index."""
        return self.start + (neuron.astype(np.int64) * self.cores) // max(self.neurons, 1)


@dataclass(frozen=True)
class SystemFit:
    """The smallest system of the profile that holds ``chips`` chips: ``stack`` boards of ``system``."""

    system: System
    stack: int
    chips: int

    @property
    def capacity(self) -> int:
        return int(self.system.chips.si) * self.stack

    @property
    def phrase(self) -> str:
        name, form = self.system.name, self.system.form
        if self.stack > 1:
            what = f"a stack of {self.stack} {name} {form}s"
        elif form == "system":
            what = f"the {name} system"
        else:
            what = f"{'an' if name[0] in 'AEIOU' else 'a'} {name} {form}"
        return f"{what} ({self.chips} of {self.capacity:,} chip{'s' if self.capacity > 1 else ''})"

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.system.name, "form": self.system.form, "stack": self.stack, "capacity": self.capacity}
        d["chips_source"] = self.system.chips.source
        if self.stack > 1 and self.system.max_stack is not None:
            d["stack_source"] = f"{self.system.max_stack.confidence}: {self.system.max_stack.source}"
        return d


@dataclass
class HwCheck:
    profile: str
    processes: list[ProcessInfo]
    layers: list[dict[str, Any]]  # per neuron group: neurons, synapses, bytes, cores (and what drove them)
    findings: list[Finding]
    boundaries: list[dict[str, str]]  # host <-> chip connections (each needs an adapter on hardware)
    placement: list[GroupPlacement] = field(default_factory=list)
    cores_per_chip: int | None = None  # None: the profile sets none (no chips estimated)
    system: SystemFit | None = None  # None: no system of the profile holds the chips (or it lists none)
    largest_system: str = ""  # the largest system the profile lists, for the verdict when none holds it
    traffic: ChipTraffic | None = None  # spikes that cross chips (check_hw; evaluate alone leaves it None)
    plan: HardwarePlan | None = None  # what a Loihi 2 system runs (check_hw; evaluate alone leaves it None)
    floor: Floor | None = None  # the lower bound on cores (floor.py)

    BRIEF = ("profile", "verdict", "cores", "chips", "processes")  # print(check): the verdict, not every layer
    __repr__ = brief_repr

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "violation"]

    @property
    def chips(self) -> int | None:
        if self.cores_per_chip is None:
            return None
        end = max((g.start + g.cores for g in self.placement), default=1)
        return math.ceil(end / self.cores_per_chip)

    @property
    def cores(self) -> int:
        """The cores the compiler's cut takes: every neuron group on cores of its own (core_model.py)."""
        return int(sum(layer["cores"] for layer in self.layers))

    @property
    def cores_high(self) -> int:
        """The high end of the cores where a group's neuron model or synapse format is extrapolated."""
        return int(sum(layer["cores_high"] for layer in self.layers))

    @property
    def extrapolated(self) -> bool:
        return any(layer["extrapolated"] for layer in self.layers)

    @property
    def ratio(self) -> float | None:
        """The cores over the lower bound."""
        return self.cores / self.floor.cores if self.floor is not None and self.floor.cores else None

    @property
    def size(self) -> str:
        """'~74 cores' (with its range where extrapolated)."""
        span = f"-{self.cores_high:,}" if self.cores_high > self.cores else ""
        return f"~{self.cores:,}{span} cores"

    @property
    def verdict(self) -> str:
        """The one summary line: what the network fits (and its cores against the floor), or why it fits nothing."""
        floor = f", {self.ratio:.2f}x the lower bound of {self.floor.cores:,}" if self.floor and self.ratio else ""
        size = self.size + (f" on {self.chips} chips" if self.chips else "")
        if self.violations:
            first = self.violations[0]
            return (
                f"FAILS: {len(self.violations)} limit(s) of profile {self.profile} broken "
                f"(first: layer '{first.layer}', rule '{first.rule}'); {size}{floor}"
            )
        warned = len(self.findings) - len(self.violations) + (len(self.plan.warnings) if self.plan else 0)
        pitfalls = len(self.plan.pitfalls) if self.plan else 0
        said = [f"{n} {word}{'s' if n > 1 else ''}" for n, word in ((warned, "warning"), (pitfalls, "pitfall")) if n]
        caveat = f" ({', '.join(said)} above)" if said else ""  # said, not buried
        if self.chips is None:
            ok = f"OK: {self.size}{floor} (profile {self.profile} sets no cores_per_chip: chips not estimated)"
        elif self.system is not None:
            ok = f"OK: fits {self.system.phrase}, {self.size}{floor}"
        else:
            ok = f"OK: {size} (profile {self.profile} lists no systems)"
        return ok + caveat

    def raise_for_violations(self) -> None:
        if self.violations:
            raise self.violations[0].error(self.profile)

    def by_layer(self) -> dict[str, dict[str, Any]]:
        """The neuron groups summed per graph node (a lowering may build several), with the chips they use."""
        out: dict[str, dict[str, Any]] = {}
        placed = {g.group: g for g in self.placement}
        for row in self.layers:
            zero = dict.fromkeys(("neurons", "synapses", "stored_weights", "cores", "cores_high", "lower_bound"), 0)
            est = out.setdefault(row["layer"], {**row, **zero, "chips": []})
            for key in zero:
                est[key] += row[key]
            est["fan_in"] = max(est["fan_in"], row["fan_in"])
            if self.cores_per_chip and row["group"] in placed:
                est["chips"] = sorted({*est["chips"], *placed[row["group"]].chips(self.cores_per_chip)})
        return out

    def to_dict(self) -> dict[str, Any]:
        chip = [p for p in self.processes if p.placement == "chip"]
        per_chip = self.cores_per_chip
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "schema_change": SCHEMA_CHANGES[SCHEMA_VERSION],  # what a reader of the schema before it must know
            "profile": self.profile,
            "ok": not self.violations,
            "verdict": self.verdict,
            "totals": {
                "processes": len(self.processes),
                "chip_mappable": len(chip),
                "host_only": len(self.processes) - len(chip),
                "cores": self.cores,
                "cores_high": self.cores_high,
                "floor": None if self.floor is None else self.floor.to_dict(),
                "ratio_to_floor": None if self.ratio is None else round(self.ratio, 3),
                "neurons_model": int(sum(layer["model_neurons"] for layer in self.layers)),
                "synapses_model": int(sum(p.synapses for p in chip if p.origin == "model")),
                "chips": self.chips,
                "neurons_on_chip": int(sum(layer["neurons"] for layer in self.layers)),
                "synapses_on_chip": int(sum(layer["synapses"] for layer in self.layers)),
                "weights_stored_on_chip": int(sum(layer["stored_weights"] for layer in self.layers)),
                "host_chip_boundaries": len(self.boundaries),
                "host_computing": [p.name for p in self.processes if p.role == Role.HOST_COMPUTE.value],
                "state_bytes_on_chip": int(sum(p.state_bytes for p in chip)),
                "state_bytes_on_host": int(sum(p.state_bytes for p in self.processes if p not in chip)),
            },
            "system": None if self.system is None else self.system.to_dict(),
            "placement": {
                "cores_per_chip": per_chip,
                "rule": "layer order, every neuron group on cores of its own (as Lava's compiler places them); a group "
                "goes whole onto the current chip if it fits, else starts the next; only a group wider than a chip "
                "spans chips",
                "chips": [] if not per_chip else self.chip_loads(),
                "groups": [asdict(g) | {"chips": g.chips(per_chip) if per_chip else []} for g in self.placement],
            },
            "traffic": None if self.traffic is None else self.traffic.to_dict(),
            "plan": None if self.plan is None else self.plan.to_dict(),
            "processes": [p.to_dict() for p in self.processes],
            "layers": self.layers,
            "findings": [asdict(f) for f in self.findings],
            "boundaries": self.boundaries,
        }

    def chip_loads(self) -> list[dict[str, Any]]:
        """Per chip: its cores in use and the first and last layer on it."""
        assert self.cores_per_chip
        per_chip = self.cores_per_chip
        loads: dict[int, dict[str, Any]] = {}
        for g in self.placement:
            for slot in range(g.start, g.start + g.cores):
                load = loads.setdefault(slot // per_chip, {"chip": slot // per_chip, "slots": set(), "layers": []})
                load["slots"].add(slot)
                if not load["layers"] or load["layers"][-1] != g.layer:
                    load["layers"].append(g.layer)
        return [
            {"chip": c, "cores": len(d["slots"]), "first": d["layers"][0], "last": d["layers"][-1]}
            for c, d in sorted(loads.items())
        ]
