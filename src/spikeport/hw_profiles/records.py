"""The records a hardware profile is read into: ``HwProfile`` (its sections of ``Quantity`` entries, the chip's
processes and systems) and what it holds. ``hw_profiles.load`` builds them from a checked file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spikeport.errors import ProfileError
from spikeport.hw_profiles.schema import FIRM_CONFIDENCES, SCHEMA_VERSION, UNITS


@dataclass(frozen=True)
class Quantity:
    """One number of a profile, with its unit, where it comes from and how sure we are of it."""

    value: float
    unit: str
    source: str
    confidence: str  # one of CONFIDENCES
    dimension: str
    note: str = ""
    range: tuple[float, float] | None = None

    @property
    def firm(self) -> bool:
        """Published, measured or the vendor's own (FIRM_CONFIDENCES): not derived, not an estimate."""
        return self.confidence in FIRM_CONFIDENCES

    @property
    def si(self) -> float:
        """The value in the SI base of its dimension (J, s, W, op/s, B/s, B, bit, count)."""
        return self.value * UNITS[self.dimension][self.unit]

    def to_dict(self) -> dict[str, Any]:
        d = {"value": self.value, "unit": self.unit, "source": self.source, "confidence": self.confidence}
        if self.note:
            d["note"] = self.note
        if self.range is not None:
            d["range"] = list(self.range)
        return d


@dataclass(frozen=True)
class ChipProcess:
    """A Lava process type the chip runs: what it is, how sure we are, and the public source."""

    kind: str  # one of PROCESS_KINDS
    evidence: str  # one of PROCESS_EVIDENCE
    source: str


@dataclass(frozen=True)
class System:
    """A system built of the profile's chips: its name, whether it is a board or a whole system, its chips
    and, for a board that stacks, how many boards one stack takes (None: it does not stack)."""

    key: str
    name: str
    form: str  # one of SYSTEM_FORMS
    chips: Quantity  # chips in one board (or system)
    max_stack: Quantity | None = None  # boards in the largest stack

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "form": self.form, "chips": self.chips.to_dict()}
        if self.max_stack is not None:
            d["max_stack"] = self.max_stack.to_dict()
        return d


@dataclass(frozen=True)
class HwProfile:
    name: str
    kind: str  # one of KINDS
    description: str
    path: str
    sections: dict[str, dict[str, Quantity]] = field(default_factory=dict)
    processes: dict[str, ChipProcess] = field(default_factory=dict)  # Lava process type -> chip support
    systems: tuple[System, ...] = ()  # smallest first
    calibration: dict[str, Any] = field(default_factory=dict)  # where a calibrated profile's values come from

    def get(self, section: str, key: str) -> Quantity | None:
        return self.sections.get(section, {}).get(key)

    def has(self, section: str, key: str) -> bool:
        return self.get(section, key) is not None

    def si(self, section: str, key: str) -> float:
        """The SI value of ``section.key``; a ProfileError naming the profile if it has none."""
        q = self.get(section, key)
        if q is None:
            raise ProfileError(
                f"{self.path}: profile '{self.name}' has no '{section}.{key}' "
                f"(needed here; add it to the profile or choose another one)"
            )
        return q.si

    def cite(self, section: str, key: str) -> str:
        """'value unit (confidence; source)' for reports."""
        q = self.get(section, key)
        return "n/a" if q is None else f"{q.value:g} {q.unit} ({q.confidence}; {q.source})"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
        }
        d.update({s: {k: q.to_dict() for k, q in entries.items()} for s, entries in self.sections.items()})
        if self.processes:
            d["processes"] = {k: vars(v).copy() for k, v in self.processes.items()}
        if self.systems:
            d["systems"] = {s.key: s.to_dict() for s in self.systems}
        if self.calibration:
            d["calibration"] = self.calibration
        return d
