"""The report's records: what ``spikeport report`` knows about run reports, typed (schema ``spikeport.report`` v1).

``summary.build_summary`` fills them from run reports and what ``spikeport.api.report`` passes beside each
(``RunInput``: the float accuracy of the conversion report, check-hw's counts for the artifact, ONNX Runtime
measured on this CPU); the views (``report.terminal``, ``report.html``, through ``report.tables``) print them;
``to_dict`` is the JSON. Figures are per inference. Parts that come whole from another module stay the JSON
objects that module writes (an energy estimate: ``metrics.energy``; a GPU baseline: ``baselines.gpu``; the
analytic memory breakdown: ``metrics.memory``).

The JSON keeps every key of the first version; fields added since (``chip``, ``cpu``, ``memory.chip``,
``memory.claim``, ``headline``, ``ratio_reasons``) are new keys, so readers of version 1 read it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from spikeport import counters
from spikeport.report.format import Ratio
from spikeport.run_report import RunReport

SCHEMA = "spikeport.report"
SCHEMA_VERSION = 1
# the per-layer counters (spikeport.counters) in the order the report writes them: version 1 wrote the counters every
# run report has, then synops_valued; counters added since follow in their records' order
COUNTERS = tuple(sorted(counters.LAYER, key=lambda c: not c.required))


def plain(value: Any) -> Any:
    """The JSON value of a record, a Ratio, or a list / dict holding them."""
    if isinstance(value, Ratio):
        return value.value
    if hasattr(value, "to_dict") and not isinstance(value, type):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# ---- what the api passes in ------------------------------------------------------------------------------


@dataclass
class FloatAccuracy:
    """The float model's test accuracy, read from the conversion report beside the artifact."""

    accuracy: float
    samples: int

    def to_dict(self) -> dict[str, Any]:
        return {"accuracy": self.accuracy, "samples": self.samples}


@dataclass
class ChipFootprint:
    """A converted network on a neuromorphic chip as check-hw counts it (``runtime/loihi2/check_hw.py``).

    ``synapse_bytes`` is synaptic memory at the chip's weight precision: check-hw's per-neuron-group bytes
    (weight bits, plus delay bits where a group delays; a Conv's kernel once per core that holds it), summed."""

    profile: str
    artifact: str
    cores: int
    chips: int | None  # None: this check-hw places no chips (or the profile sets no cores per chip)
    neurons: int
    synapses: int
    stored_weights: int
    synapse_bytes: int
    weight_bits: int | None
    state_bytes_on_chip: int
    state_bytes_on_host: int
    host_computing: list[str]
    ok: bool
    verdict: str

    @classmethod
    def from_check_hw(cls, check: dict[str, Any], artifact: str, weight_bits: int | None = None) -> ChipFootprint:
        """From ``check_hw(...).to_dict()``; fields a newer check-hw adds (chips, verdict) read where present."""
        t = check["totals"]
        chips = t.get("chips")
        cores = int(t["cores"])
        verdict = check.get("verdict") or (
            f"{'OK' if check.get('ok', True) else 'FAILS'}: ~{cores:,} cores"
            + (f" on {chips} chip{'s' if chips != 1 else ''}" if chips else "")
        )
        return cls(
            profile=str(check.get("profile", "loihi2")),
            artifact=artifact,
            cores=cores,
            chips=None if chips is None else int(chips),
            neurons=int(t.get("neurons_on_chip", 0)),
            synapses=int(t.get("synapses_on_chip", 0)),
            stored_weights=int(t.get("weights_stored_on_chip", 0)),
            synapse_bytes=int(sum(int(row.get("synapse_bytes", 0)) for row in check.get("layers", []))),
            weight_bits=weight_bits,
            state_bytes_on_chip=int(t.get("state_bytes_on_chip", 0)),
            state_bytes_on_host=int(t.get("state_bytes_on_host", 0)),
            host_computing=list(t.get("host_computing", [])),
            ok=bool(check.get("ok", True)),
            verdict=str(verdict),
        )

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


@dataclass
class RunInput:
    """One run report and what the api found beside it (the summary reads no file itself)."""

    report: RunReport
    source: str
    float_accuracy: FloatAccuracy | None = None  # the conversion report's torch-float accuracy
    chip: ChipFootprint | None = None  # check-hw on the artifact that ran
    chip_note: str = ""  # why there is no chip footprint
    cpu: list[dict[str, Any]] = field(default_factory=list)  # baselines measured on this CPU (baselines.gpu.Baseline)


# ---- per run ---------------------------------------------------------------------------------------------


@dataclass
class LayerRow:
    """One layer of a run, per inference (the run report's sums over samples divided by ``samples``)."""

    name: str
    op: str
    input_kind: str | None
    neurons: int
    fan_out: float | None
    counts: dict[str, float]  # per counter of ``COUNTERS``, per inference; also read as ``row.spikes``
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
        """The fields, each counter a key of its own (in ``COUNTERS``' order) where ``counts`` stands."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "counts":
                out.update((c.name, self.counts[c.name]) for c in COUNTERS if c.name in self.counts)
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
    totals: dict[str, float | None]  # every counter of the run (COUNTERS, then the per-run ones), and firing_rate
    layers: list[LayerRow]
    energy: list[dict[str, Any]]  # metrics.energy estimates (+ profile_kind, per_layer_J)
    state_memory: StateMemory
    static_energy_J: dict[str, float]
    host_io: dict[str, dict[str, float]]
    host_computing: list[str]
    float_accuracy: FloatAccuracy | None
    chip: ChipFootprint | None = None
    chip_note: str = ""
    gpu: list[dict[str, Any]] = field(default_factory=list)  # baselines.gpu baselines + network / source / mode
    cpu: list[dict[str, Any]] = field(default_factory=list)  # measured on this CPU, + mode
    comparison: list[dict[str, Any]] = field(default_factory=list)  # estimate vs GPU, per pair
    notes: list[str] = field(default_factory=list)
    per: str = "inference"

    def to_dict(self) -> dict[str, Any]:
        return plain_fields(self)


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
class StateClaim:
    """The paper's attention-state claim (SSA O(d^2), LRF-Dyn O(kd)) priced in bytes, next to what the chosen
    chip lowering holds and what the token-serial lowering (the one that holds the claim) would cost."""

    layers: int  # attention layers of the network
    ssa_entries: int  # K^T V, per layer: H x d_h x d_h
    ssa_bytes: int  # at the chip's K^T V precision
    dyn_entries: int  # X, per layer: k x d
    dyn_bytes: int  # at the chip's state precision
    ratio: Ratio  # dyn / ssa
    lowerings: dict[str, dict[str, Any]]  # name -> neurons, neuron_state_bytes, stored_weights, weight_bytes, cores
    chosen: str  # the lowering runtime/lava/lowering.py builds
    serial: str  # the lowering that holds the claim
    profile: str
    statement: str  # the plain sentence

    def to_dict(self) -> dict[str, Any]:
        out = plain_fields(self)
        out["ratio_reason"] = self.ratio.reason
        return out


@dataclass
class MemorySection:
    """SSA vs LRF-Dyn: counted by the executors, on the chip (check-hw), on the GPU, analytic, the paper's claim."""

    from_runs: list[dict[str, Any]]
    runs_ratio: dict[str, Any] | None
    analytic: dict[str, Any] | None
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
    headline: list[str]  # the first screen's sentences: what differs between the variants, in chip terms
    notes: list[str] = field(default_factory=list)
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        out = {"schema": self.schema, "schema_version": self.schema_version}
        out.update({k: v for k, v in plain_fields(self).items() if k not in out})
        return out


def plain_fields(record: Any) -> dict[str, Any]:
    return {f.name: plain(getattr(record, f.name)) for f in fields(record)}
