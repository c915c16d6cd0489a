"""The records of an energy estimate: what is priced and what comes out (``metrics/energy.py`` fills them).

In: ``OpCounts`` (one layer's events per inference, sorted into the classes priced differently: ``CLASSES``) and
``CountingRule`` (how counts become priced operations). Out: ``EnergyEstimate`` (per inference, per layer
``LayerEnergy`` of ``Term`` s, what it leaves out), its ``StaticEnergy`` and ``ChipCrossingEnergy`` lines, and
``EnergyReport`` (every estimate of one run: the JSON of schema ``SCHEMA``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from spikeport import counters
from spikeport.errors import unknown_choice

SCHEMA = "spikeport.energy"
SCHEMA_VERSION = 1
INTEGER_RULES = ("value_acs", "event_macs")
PRECISIONS = ("fp32", "fp16", "int32", "int8")


@dataclass(frozen=True)
class CountingRule:
    """How counts become priced operations. Defaults reproduce the published Spikformer arithmetic."""

    # Integer (graded) inputs such as SEW residual sums: "value_acs" = value x fan-out accumulates (the
    # public syops counter's rate = sum/numel, Spikingformer's "calculation 1"); "event_macs" = one
    # multiply-accumulate per non-zero input and synapse (a graded spike / an integer-weight product).
    integer_inputs: str = "value_acs"
    # The analog first layer sees the same image at every time step (direct coding): charge its MACs at
    # every step (True: Spikformer's published figures) or once per inference (False).
    first_layer_per_timestep: bool = True
    # CMOS arithmetic precision of add / mult / mac entries ("fp32" is the literature's 0.9 / 4.6 pJ).
    precision: str = "fp32"

    def __post_init__(self) -> None:
        if self.integer_inputs not in INTEGER_RULES:
            raise unknown_choice("integer-input rule", self.integer_inputs, INTEGER_RULES)
        if self.precision not in PRECISIONS:
            raise unknown_choice("precision", self.precision, PRECISIONS)


@dataclass
class Term:
    counter: str  # which class of counted events (see OpCounts)
    count: float  # events per inference
    cost: str  # the profile entries that price one event
    unit_energy_J: float
    energy_J: float


@dataclass
class LayerEnergy:
    name: str
    op: str
    energy_J: float
    terms: list[Term] = field(default_factory=list)


@dataclass
class ChipCrossingEnergy:
    """The chip-to-chip line of a neuromorphic estimate: per inference, separate from ``energy_J``."""

    label: str
    chips: int
    messages: float  # per inference
    cost: str  # the profile entry, cited
    unit_energy_J: float | None  # None: the profile has no spike_chip_hop
    energy_J: float | None
    traffic_source: str


@dataclass
class EnergyEstimate:
    label: str  # "estimated (op counts x cost table cmos45nm)" / "measured (NVML)"
    kind: str  # "estimated" | "measured"
    method: str  # one of METHODS, or the measuring tool
    profile: str | None
    energy_J: float  # per inference
    layers: list[LayerEnergy] = field(default_factory=list)
    by_counter: dict[str, float] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rule: dict[str, Any] = field(default_factory=dict)
    chip_crossings: ChipCrossingEnergy | None = None  # a multi-chip placement's spikes between chips
    # static power x time, as Intel's benchmarks split a measurement (energy_J is then the dynamic part)
    static: StaticEnergy | None = None

    @property
    def total_J(self) -> float:
        """Dynamic (``energy_J``) plus static, where the static part is known; else ``energy_J``."""
        return self.energy_J + (self.static.energy_J if self.static is not None else 0.0)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("chip_crossings", "static"):  # absent: the JSON of before
            if d[key] is None:
                del d[key]
        if self.static is not None:
            d["total_J"] = self.total_J
        return d


@dataclass(frozen=True)
class StaticEnergy:
    """Static power x the time an inference holds the chips: chips x power per chip x steps x time per step."""

    energy_J: float  # per inference
    power_W: float  # per chip
    chips: int
    steps: int  # time steps an inference occupies (samples stream one every ``steps``)
    step_s: float  # seconds per time step
    label: str  # where power and time come from (measured, or the profile's anchors)


@dataclass
class EnergyReport:
    executor: str
    samples: int
    estimates: list[EnergyEstimate]
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "schema_version": self.schema_version,
            "executor": self.executor,
            "samples": self.samples,
            "per": "inference",
            "estimates": [e.to_dict() for e in self.estimates],
        }


# The classes the synaptic counters (``Price(by_kind=True)``: ``BY_KIND``, what op_counts sorts) are sorted into by
# the layer's value kind; each counter priced by an entry of its own (``counters.PRICED``) is a class named after it.
BY_KIND = ("synops", "synops_valued", "macs")
KIND_CLASSES = ("first_layer_macs", "spike_acs", "integer_values", "integer_events", "other_macs")
ENTRIES = tuple((c.name, c.price.entry) for c in counters.PRICED if c.price.entry)  # (counter, profile entry)
CLASSES = KIND_CLASSES + tuple(name for name, _ in ENTRIES)


@dataclass
class OpCounts:
    """One layer's events per inference, sorted into the classes that are priced differently."""

    name: str
    op: str
    first_layer_macs: float = 0.0  # MACs on analog input (the encoding conv)
    spike_acs: float = 0.0  # accumulates driven by binary spikes (conv/dense synops, attention)
    integer_events: float = 0.0  # synapses driven by non-zero integer inputs
    integer_values: float = 0.0  # the same, weighted by the input value
    other_macs: float = 0.0  # attention rescale, dendritic dynamics, readout
    # the counters priced by a profile entry of their own (counters.PRICED: spikes, neuron and dendritic updates),
    # per inference; also read as ``c.spikes``
    counted: dict[str, float] = field(default_factory=dict)

    def __getattr__(self, name: str) -> float:
        counted = self.__dict__.get("counted")
        if counted is None or name not in counted:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        value: float = counted[name]
        return value
