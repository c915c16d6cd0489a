"""The report's records: what ``spikeport report`` says about run reports, typed (schema ``spikeport.report`` v1).

``summary.build_summary`` fills them from the report's inputs (``report.inputs.ReportInputs``: the run reports
and what the gathering stage, ``spikeport.gather``, found, measured and timed beside them); the views
(``report.terminal``, ``report.html``, through ``report.tables``) print them; ``to_dict`` is the JSON. Figures are
per inference. Parts that come whole from another module stay the JSON objects that module writes (an energy
estimate: ``metrics.energy``; a memory breakdown: ``metrics.memory``).

The JSON keeps every key of the first version; fields added since (``chip``, ``cpu``, ``memory.chip``,
``memory.claim``, ``headline``, ``ratio_reasons``, ``models``, ``accounting``, ``ratios``) are new keys, so readers
of version 1 read it unchanged. ``runs`` stays one entry per run report; ``models`` merges them per artifact.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from spikeport import counters
from spikeport.brief import brief_repr
from spikeport.report.format import Ratio
from spikeport.report.inputs import (
    AnalyticMemory,
    ChipFootprint,
    CpuBaseline,
    FloatAccuracy,
    GpuBaseline,
    StateClaim,
    plain,
    plain_fields,
)

SCHEMA = "spikeport.report"
SCHEMA_VERSION = 1
# the per-layer counters (spikeport.counters) in the order the report writes them: version 1 wrote the counters every
# run report has, then synops_valued; counters added since follow in their records' order
ROW_COUNTERS = tuple(sorted(counters.LAYER, key=lambda c: not c.required))


# ---- per run ---------------------------------------------------------------------------------------------


@dataclass
class LayerRow:
    """One layer of a run, per inference (the run report's sums over samples divided by ``samples``)."""

    name: str
    op: str
    input_kind: str | None
    neurons: int
    fan_out: float | None
    counts: dict[str, float]  # per counter of ``ROW_COUNTERS``, per inference; also read as ``row.spikes``
    spikes_per_step: list[float]
    firing_rate: float | None  # spikes / (neurons x T): the fraction of neuron-steps that spike
    state_bytes: int
    weight_bytes: int

    def __getattr__(self, name: str) -> float:
        counts = self.__dict__.get("counts")
        if counts is None or name not in counts:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        value: float = counts[name]
        return value

    def to_dict(self) -> dict[str, Any]:
        """The fields, each counter a key of its own (in ``ROW_COUNTERS``' order) where ``counts`` stands."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "counts":
                out.update((c.name, self.counts[c.name]) for c in ROW_COUNTERS if c.name in self.counts)
            else:
                out[f.name] = plain(getattr(self, f.name))
        return out


@dataclass
class StateMemory:
    """The state the executor counted (run report ``state_bytes``, Loihi precision, one sample)."""

    label: str
    attention_state_bytes: int
    attention_state_kind: list[str]
    neuron_state_bytes: int
    other_state_bytes: int
    state_bytes: int
    weight_bytes: int
    per_layer: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class RunSummary:
    """One run report, per inference: counts, energy per profile, memory, baselines, and what they compare."""

    source: str
    variant: str  # the attention variant, or the artifact's name for a network without one (netx)
    executor: str
    counts_by: str
    artifact: str | None
    attention: str | None
    model: dict[str, Any]
    T: int | None
    samples: int
    accuracy: float | None
    wall_time_s: float | None
    latency_timesteps: int | None
    compare: dict[str, Any] | None
    totals: dict[str, float | None]  # every counter of the run (ROW_COUNTERS, then the per-run ones), and firing_rate
    layers: list[LayerRow]
    energy: list[dict[str, Any]]  # metrics.energy estimates (+ profile_kind, per_layer_J)
    state_memory: StateMemory
    static_energy_J: dict[str, float]
    host_io: dict[str, dict[str, float]]
    host_computing: list[str]
    float_accuracy: FloatAccuracy | None
    chip: ChipFootprint | None = None
    chip_note: str = ""
    gpu: list[GpuBaseline] = field(default_factory=list)  # the same network on a GPU (and its ViT counterpart)
    cpu: list[CpuBaseline] = field(default_factory=list)  # ONNX Runtime on this CPU
    comparison: list[dict[str, Any]] = field(default_factory=list)  # estimate vs GPU, per pair
    notes: list[str] = field(default_factory=list)
    per: str = "inference"
    artifact_digest: str | None = None  # the artifact's root digest: the runs of one model share it

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


# ---- per model: its runs merged -------------------------------------------------------------------------


@dataclass
class Exactness:
    """One run checked against the reference (``spikeport run --compare reference``, or a hardware plan's outputs
    against the reference's expected ones), as a model's column shows it."""

    source: str
    executor: str
    against: str  # "reference", "the reference's expected outputs"
    identical: bool
    samples: int
    first_divergence: Any = None

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class ModelEnergy:
    """A model's energy per inference on one profile (or as measured), in the report's accounting (``Accounting``):
    ``energy_J`` holds the static part exactly when ``static_included``."""

    profile: str  # the profile, or the measuring tool of a measured figure
    kind: str  # estimated | measured
    label: str
    energy_J: float  # the figure the report compares: dynamic + static where static_included, else dynamic
    dynamic_J: float  # op counts x per-op energies (measured: the measurement less static)
    static_J: float | None  # static power x time; None: the profile has no static power (CMOS arithmetic)
    static_included: bool
    static_label: str = ""  # where static power and time come from

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class ModelGpu:
    """The GPU as one figure, in one mode, for a model's network: measured where a bench file (or CUDA here) gave
    it, else the first GPU profile's estimate by the utilisation power model (``baselines.gpu``), whose bounds (idle
    power x time .. TDP x time) are a caveat."""

    mode: str  # latency | throughput
    batch: int
    device: str
    kind: str  # measured | estimated
    label: str
    energy_J: float | None  # per inference, in the report's accounting: board energy, or less idle power
    static_included: bool
    low_J: float | None  # an estimate's floor, idle power x time (None: measured)
    high_J: float | None  # an estimate's upper bound, TDP x time (None: measured)
    latency_s: float | None  # one call at ``batch``
    assumption: str  # what the figure assumes, in one line
    over_chip: float | None = None  # this figure / the model's chip figure (same accounting)

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class ModelSummary:
    """One model (one artifact: its runs merged by root digest, else by variant): the counts of its run over the
    most samples (the reference preferred) price it; the other runs say whether they were bit-exact with the
    reference, on how many samples."""

    name: str  # the attention variant (the artifact's name for a network without one)
    attention: str | None
    artifact: str | None
    artifact_digest: str | None
    runs: list[str]  # the run reports merged (sources)
    executors: list[str]  # their executors, in the same order
    samples: list[int]  # their samples, in the same order
    counts_from: str  # the run report whose counts price the model
    counts_by: str  # its executor
    counted_samples: int  # the samples those counts average
    accuracy: float | None  # that run's integer accuracy
    float_accuracy: FloatAccuracy | None
    exactness: list[Exactness]
    chip: ChipFootprint | None
    chip_note: str
    energy: list[ModelEnergy]
    gpu: list[ModelGpu]
    cpu: list[CpuBaseline]
    notes: list[str] = field(default_factory=list)
    firing_rate: float | None = None  # spikes / (LIF neurons x T) of the counted run: its LIF layers' firing rate
    barely_fires: bool = False  # firing_rate below ``BARELY_FIRES``: the headline flags its ratios

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


# A model whose LIF neurons spike on fewer than this share of their neuron-steps "barely fires": an event-driven chip
# charges it almost nothing, so its ratio to a GPU (which computes every value dense) grows as the model gets worse (a
# model trained one epoch fires a fraction of a trained one's); the headline says so beside its ratios.
BARELY_FIRES = 0.02


@dataclass
class Accounting:
    """How the headline's energies are compared: static power on both sides or on neither, and which per-op energies
    the chip profile uses (its sources, or its calibration)."""

    chip: str | None  # the profile the headline prices models with (the first neuromorphic; else the first priced)
    static_included: bool
    statement: str  # the sentence the headline prints
    per_op_energies: str  # where the chip profile's per-op energies come from
    calibrated: bool  # the profile has a ``calibration`` section (spikeport calibrate)

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class EnergyRatio:
    """One ratio of the headline: a model against the base model on the chip, or the GPU against the chip."""

    name: str  # "lrf_dyn / ssa on loihi2", "h100 latency mode / loihi2 (ssa)"
    model: str
    top_J: float | None
    bottom_J: float | None
    ratio: Ratio
    mode: str | None = None  # the GPU's mode, for a GPU ratio

    def to_dict(self) -> dict[str, Any]:
        out = plain_fields(self)
        out["ratio_reason"] = self.ratio.reason
        return out


# ---- across runs -----------------------------------------------------------------------------------------


@dataclass
class VariantMemory:
    """One attention variant's memory on the chip and on the GPU (the memory story, per variant)."""

    variant: str
    source: str  # the run report whose artifact check-hw read
    chip: ChipFootprint | None
    chip_note: str
    gpu_weights_bytes: int | None  # the float network's weights (fp32, analytic)
    gpu_peak_bytes: dict[str, int | None]  # mode -> weights + activations peak of one call (latency: batch 1)
    gpu_batch: dict[str, int | None]  # mode -> batch of that call
    gpu_device: str | None
    gpu_kind: str | None

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class MemorySection:
    """SSA vs LRF-Dyn: counted by the executors, on the chip (check-hw), on the GPU, analytic, the paper's claim."""

    from_runs: list[dict[str, Any]]
    runs_ratio: dict[str, Any] | None
    analytic: AnalyticMemory | None
    check: list[dict[str, Any]]
    notes: list[str]
    chip: list[VariantMemory] = field(default_factory=list)
    claim: StateClaim | None = None

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class ReportSummary:
    """The whole report (schema ``spikeport.report`` v1)."""

    per: str
    generator: str
    options: dict[str, Any]
    runs: list[RunSummary]
    memory: MemorySection
    profiles: list[dict[str, Any]]
    caveats: list[str]
    headline: list[str]  # the first screen's sentences: energy per model and its ratios, then the chip footprint
    notes: list[str] = field(default_factory=list)
    models: list[ModelSummary] = field(default_factory=list)  # one per artifact, its runs merged
    accounting: Accounting | None = None  # None: no energy priced
    ratios: list[EnergyRatio] = field(default_factory=list)
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    BRIEF = ("per", "runs", "headline")  # print(summary): what it covers, not every table (to_dict() has them)
    __repr__ = brief_repr

    def to_dict(self) -> dict[str, Any]:
        out = {"schema": self.schema, "schema_version": self.schema_version}
        out.update({k: v for k, v in plain_fields(self).items() if k not in out})
        return out
