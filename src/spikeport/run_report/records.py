"""The records of a run report (schema ``spikeport.run``, version 1): a row per layer (``LayerReport``), the
comparison with the reference (``Comparison``), what a Lava run did (``LavaRun``), how a netx file was read
(``NetxRun``), how the hardware plan ran (``HardwareRun``); ``report.RunReport`` holds them. Each writes the JSON
spikeport has always written, key for key and in the same order (``to_dict``).

Counts in a layer row are sums over all samples, one entry per time step (docs/counting.md); readers divide by
``samples`` for figures per inference. Standard library only: the deploy side reads and writes run reports too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

from spikeport import counters

SCHEMA = "spikeport.run"
SCHEMA_VERSION = 1
READABLE_VERSIONS = (1,)
# the per-time-step counters of a layer (``spikeport.counters``), in the order a layer row writes them; the
# required ones every run report has, the others newer writers add (a row without one reads as zeros)
LAYER_COUNTER_NAMES = tuple(c.name for c in counters.LAYER)
REQUIRED_COUNTER_NAMES = tuple(c.name for c in counters.LAYER if c.required)

# JSON key order of a run report: the order the executors have always written them in
ORDER = (
    "executor",
    "model",
    "T",
    "samples",
    "predictions",
    "wall_time_s",
    "ranks",
    "latency_timesteps",
    "layers",
    "totals",
    "state_peak",
    "peak_state_bytes",
    "accuracy",
    "lava",
    "energy_measured",
    "netx",
    "hardware",
    "compare",
    "artifact",
    "artifact_digest",
)


@dataclass
class LayerReport:
    """One node of the graph in one run: what it is and its counters per time step, summed over samples."""

    name: str
    op: str
    input_kind: str = "none"  # the value kind it reads (docs/architecture.md): analog | spikes | integer | ...
    neurons: int = 0  # neuron updates per time step and sample
    fan_out: float = 0.0  # synapses one spike of this node drives (synops = spikes x fan-out)
    state_bytes: int = 0  # state held between inputs and outputs, Loihi precision
    weight_bytes: int = 0
    # per counter of ``LAYER_COUNTER_NAMES`` (spikeport.counters), its per-time-step list; also read as ``row.spikes``
    counts: dict[str, list[int]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # keys of newer writers, kept as they are

    def __getattr__(self, name: str) -> list[int]:
        # only called for names that are not attributes: a counter's list, ``row.synops`` for row.counter("synops")
        counts = self.__dict__.get("counts")
        if counts is None or name not in LAYER_COUNTER_NAMES:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return self.counter(name)

    def counter(self, key: str) -> list[int]:
        """The per-step list of counter ``key`` (one of ``LAYER_COUNTER_NAMES``; empty where the row has not counted
        it)."""
        if key not in LAYER_COUNTER_NAMES:
            raise KeyError(f"unknown counter {key!r}; counters: {', '.join(LAYER_COUNTER_NAMES)}")
        return self.counts.setdefault(key, [])

    def total(self, key: str) -> int:
        """Counter ``key`` summed over time steps (and samples)."""
        return sum(self.counter(key))

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object: the fields, the counters in ``LAYER_COUNTER_NAMES``' order, then ``extra``."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("counts", "extra")}
        out.update((key, self.counts[key]) for key in LAYER_COUNTER_NAMES if key in self.counts)
        out.update(self.extra)
        return out


@dataclass
class ComparedLayer:
    """One spiking layer of a run against the reference: spike totals, whether every step agrees."""

    layer: str
    spikes: int
    reference_spikes: int
    per_step_equal: bool
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self)


@dataclass
class Comparison:
    """A run against the reference simulator on the same inputs (``run --compare reference``)."""

    against: str
    identical: bool  # bit-exact spikes in every layer at every step, and the same predictions
    first_divergence: dict[str, Any] | None  # layer, time_step, sample, neuron, values, mismatches
    layers: list[ComparedLayer]
    prediction_agreement: float
    silent_layers: list[str] | None = None  # compared layers in which neither run spiked (None: older reports)
    extra: dict[str, Any] = field(default_factory=dict)

    def silent(self) -> list[str]:
        """The compared layers in which neither run spiked: bit-exactness there says nothing."""
        if self.silent_layers is not None:
            return list(self.silent_layers)
        return [row.layer for row in self.layers if row.spikes == 0 and row.reference_spikes == 0]

    def to_dict(self) -> dict[str, Any]:
        out = record_dict(self, keep_none=("first_divergence",))
        out["layers"] = [row.to_dict() for row in self.layers]
        return out


@dataclass
class LavaRun:
    """What a Lava run did: samples streamed one every ``reset_interval`` steps, ``steps`` simulated."""

    reset_interval: int
    steps: int
    processes: int
    host_only: list[str]  # nodes whose processes run on the host (not on the chip)
    max_depth: int  # Lava steps from the input to the deepest output
    restarts: int  # networks restarted after a stall
    state: list[dict[str, Any]]  # per process: its state Vars
    # a partitioned run: per part, its first and last node, boundary, processes, steps and wall_s
    parts: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self)


@dataclass
class NetxRun:
    """How a lava-dl netx file ran: its input and how predictions were read (it has no readout)."""

    file: str
    input_shape: list[int]
    input_drive: str  # spikes | bias | graded
    prediction: str  # how predictions are read, or why there are none
    output_v: list[list[int]] | None = None  # a non-spiking output integrator's v at the last step, per sample
    output: list[list[list[int]]] | None = None  # an SDNN output layer's values [S, T, n]
    output_layer: str | None = None  # the layer output_v / output come from
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self)


@dataclass
class HardwareRun:
    """How the hardware plan ran (``runtime/loihi2/plan_run.py``): on Loihi 2, or simulated on ``Loihi2SimCfg`` with
    stand-ins for the embedded-IO adapters; what it was compared with and where it first differed."""

    run_config: str  # Loihi2HwCfg | Loihi2SimCfg(select_tag='fixed_pt')
    embedded_io: str  # lava.proc.embedded_io | simulated embedded IO
    drive: str  # bias | adapter
    plan: dict[str, Any]  # the HardwarePlan's JSON (boundaries, host traffic, pitfalls)
    counts_from: str  # the plan reads only its outputs: the layers' counts are the reference's on the same samples
    outputs_identical: bool | None = None  # the outputs every step equal the expected ones (None: none given)
    states_identical: bool | None = None  # the read states equal the expected ones (None: none read or given)
    first_mismatch: dict[str, Any] | None = None
    io_latency: int = 0  # steps the adapters added (0 for the stand-ins; found by alignment on the chip)
    bias_bits: int | None = None  # signed bits the bias drive needed on these samples (Loihi 2 holds 13)
    samples: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # on Loihi 2: what Lava's compiler printed (its per-core table and cores: plan_run.CompilerLog) and the memory
    # and activity profilers' per-core figures (plan_run.PlanProbe.chip_profile); None in simulation
    compile_table: dict[str, Any] | None = None
    chip_profile: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return record_dict(self)


def record_dict(record: Any, keep_none: tuple[str, ...] = ()) -> dict[str, Any]:
    """A record's JSON object: its fields in declaration order (None left out unless kept), then ``extra``."""
    out: dict[str, Any] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name != "extra" and (value is not None or f.name in keep_none):
            out[f.name] = value
    out.update(record.extra)
    return out


def tree_copy(value: Any) -> Any:
    """A copy of a JSON tree (dicts, lists, tuples of scalars): what ``copy.deepcopy`` makes of one, five times
    faster (no memo: a JSON tree shares nothing). A run report of 18 000 layers was deep-copied three times on its
    way into a report, 20 s of the report's 73. Anything else is deep-copied as before."""
    if isinstance(value, dict):
        return {k: tree_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else tree_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(tree_copy(v) for v in value)
    if type(value) in _SCALARS:
        return value
    return copy.deepcopy(value)


_SCALARS = frozenset((int, float, str, bool, type(None)))
