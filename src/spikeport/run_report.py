"""``RunReport``: the run report of one executor on one artifact (schema ``spikeport.run``, version 1).

Every Target (``spikeport.runtime.targets``) returns one; ``spikeport run`` writes it as JSON, ``spikeport
report`` and the energy estimates read it. It is typed end to end: a row per layer (``LayerReport``), the
comparison with the reference (``Comparison``), what a Lava run did (``LavaRun``), how a netx file was read
(``NetxRun``). The JSON is the one spikeport has always written, key for key and in the same order, so files
written before these classes existed read back and write out unchanged. Reading validates every field a reader
relies on and refuses a bad file with one ``ReportError`` naming the file and the field.

Counts in ``layers`` are sums over all samples, one entry per time step (docs/counting.md); readers divide
by ``samples`` for figures per inference.

Standard library only: the deploy side (numpy + h5py + lava, no torch) reads and writes run reports too.
"""

from __future__ import annotations

import copy
import json
import math
import os
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

from spikeport import bundle_result, counters, measured
from spikeport.atomic import write_text
from spikeport.brief import brief_repr
from spikeport.chip_limits import HALA_POINT_CORES, MAX_IO_LATENCY
from spikeport.errors import ReportError
from spikeport.value_kinds import ACTIVATION

SCHEMA = "spikeport.run"
SCHEMA_VERSION = 1
READABLE_VERSIONS = (1,)
# the per-time-step counters of a layer (``spikeport.counters``), in the order a layer row writes them; the
# required ones every run report has, the others newer writers add (a row without one reads as zeros)
COUNTERS = tuple(c.name for c in counters.LAYER)
REQUIRED_COUNTERS = tuple(c.name for c in counters.LAYER if c.required)

R = TypeVar("R")


# ---- the records --------------------------------------------------------------------------------------


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
    # per counter of ``COUNTERS`` (spikeport.counters), its per-time-step list; also read as ``row.spikes``
    counts: dict[str, list[int]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # keys of newer writers, kept as they are

    def __getattr__(self, name: str) -> list[int]:
        # only called for names that are not attributes: a counter's list, ``row.synops`` for row.counter("synops")
        counts = self.__dict__.get("counts")
        if counts is None or name not in COUNTERS:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return self.counter(name)

    def counter(self, key: str) -> list[int]:
        """The per-step list of counter ``key`` (one of ``COUNTERS``; empty where the row has not counted it)."""
        if key not in COUNTERS:
            raise KeyError(f"unknown counter {key!r}; counters: {', '.join(COUNTERS)}")
        return self.counts.setdefault(key, [])

    def total(self, key: str) -> int:
        """Counter ``key`` summed over time steps (and samples)."""
        return sum(self.counter(key))

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object: the fields, the counters in ``COUNTERS``' order, then ``extra``."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("counts", "extra")}
        out.update((key, self.counts[key]) for key in COUNTERS if key in self.counts)
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
        return _to_dict(self)


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
        out = _to_dict(self, keep_none=("first_divergence",))
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
        return _to_dict(self)


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
        return _to_dict(self)


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
        return _to_dict(self)


@dataclass
class RunReport:
    """One run of an executor. Optional fields are None when the run did not produce them (``accuracy``
    without labels, ``compare`` without ``compare='reference'``, ``lava`` on the reference simulator...);
    they are left out of the JSON then. ``recording`` (the recorded spikes of every spiking layer, when the
    run was asked to record them) lives in memory only."""

    executor: str  # reference | reference-torch-<device> | lava-fixed_pt | loihi2
    samples: int  # inputs run (counts are summed over them)
    layers: list[LayerReport]  # per node in topological order
    model: dict[str, Any] | None = None  # the artifact's model config (+ "dataset")
    T: int | None = None  # time steps per sample
    predictions: list[int] | None = None  # predicted class per sample
    accuracy: float | None = None  # against the labels, when there were labels
    wall_time_s: float | None = None  # the executor's own time for all samples
    ranks: int | None = None  # processes the samples were sharded over (torchrun), None: one process
    latency_timesteps: int | None = None  # steps from a sample's first input to its last output
    totals: dict[str, int] | None = None  # every counter summed over layers, steps and samples
    state_peak: dict[str, float] | None = None  # largest |state| seen per node (headroom of the 24-bit state)
    peak_state_bytes: int | None = None  # state held by the whole network at once, Loihi precision
    artifact: str | None = None  # the file that ran
    artifact_digest: str | None = None  # its root digest (artifacts of schema 2): which conversion it came from
    lava: LavaRun | None = None  # Lava runs
    netx: NetxRun | None = None  # netx files
    hardware: HardwareRun | None = None  # the hardware plan's runs (loihi2, or its simulation)
    energy_measured: dict[str, Any] | None = None  # executors that measure energy (Loihi 2 profiler)
    compare: Comparison | None = None  # against the reference
    extra: dict[str, Any] = field(default_factory=dict)  # fields of newer writers, kept as they are
    schema_version: int = SCHEMA_VERSION
    recording: dict[str, Any] | None = field(default=None, repr=False, compare=False)  # node -> [S, T, *shape]

    # print(report): what ran and what it found, not every per-step count (to_json() has them)
    BRIEF = ("executor", "artifact", "samples", "accuracy", "identical", "T", "latency_timesteps", "wall_time_s")
    __repr__ = brief_repr

    @property
    def identical(self) -> bool | None:
        """Bit-exact with the reference: every layer, every step, every prediction (``compare``), or for the hardware
        plan, which compares itself every run, its outputs every step and its read states (``hardware``); None
        where neither compared."""
        if self.compare is not None:
            return self.compare.identical
        hw = self.hardware
        if hw is not None and hw.outputs_identical is not None:
            return bool(hw.outputs_identical) and hw.states_identical is not False
        return None

    def layer(self, name: str) -> LayerReport:
        for row in self.layers:
            if row.name == name:
                return row
        raise KeyError(f"run report has no layer {name!r}")

    @classmethod
    def merge(cls, parts: Sequence[RunReport]) -> RunReport:
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
        for key in _MERGED_SAME:
            _same(parts, key, attrgetter(key))
        _same(parts, "layers", lambda part: [row.name for row in part.layers])
        layers = []
        for i, row in enumerate(first.layers):
            rows = [part.layers[i] for part in parts]
            for key in _LAYER_SAME:
                _same(rows, f"layers[{i}].{key}", attrgetter(key))
            _same(rows, f"layers[{i}] counters", lambda r: list(r.counts))
            counts = {
                key: [sum(step) for step in zip(*(r.counts[key] for r in rows), strict=True)] for key in row.counts
            }
            layers.append(replace(row, counts=counts, extra=copy.deepcopy(row.extra)))
        samples = sum(part.samples for part in parts)
        predictions = _joined(parts, "predictions", lambda part: part.predictions)
        accuracy = _joined(parts, "accuracy", lambda part: part.accuracy)
        if accuracy is not None:  # each part's accuracy is its correct predictions over its samples: add those up
            accuracy = sum(round(part.accuracy * part.samples) for part in parts if part.accuracy is not None) / samples
        walls = [part.wall_time_s for part in parts if part.wall_time_s is not None]
        totals = _joined(parts, "totals", lambda part: part.totals)
        if totals is not None:
            totals = {key: sum(part.totals[key] for part in parts if part.totals) for key in totals}
        peaks = _joined(parts, "state_peak", lambda part: part.state_peak)
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

    # ---- dict / JSON --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (a copy), keys in the order spikeport has always written them; None fields left out."""
        out: dict[str, Any] = {"schema": SCHEMA, "schema_version": self.schema_version}
        for key in _ORDER:
            value = getattr(self, key)
            if value is None:
                continue
            if key == "layers":
                value = [row.to_dict() for row in value]
            elif hasattr(value, "to_dict"):
                value = value.to_dict()
            out[key] = _tree_copy(value)
        out.update(_tree_copy(self.extra))
        return out

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The JSON text; also written atomically to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            write_text(path, text)
        return text

    @classmethod
    def from_dict(cls, data: Any, where: str = "run report") -> RunReport:
        """Validate and type a run report object (copied); ``where`` (a file name) opens every error message."""
        _check_tree(data, str(where))  # before the copy, which recurses
        return _read_report(_tree_copy(data), str(where))

    @classmethod
    def from_json(cls, source: str | os.PathLike[str]) -> RunReport:
        """A run report from a file path, or from JSON text (a string starting with ``{``)."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            return cls.from_dict(_parse(source, "run report"), "run report")
        path = Path(source)
        if not path.is_file():
            raise ReportError(path, None, "run report not found (write one with `spikeport run ... --json`)")
        try:
            if path.stat().st_size > MAX_BYTES:
                raise ReportError(path, None, f"{path.stat().st_size} bytes: not a run report (at most {MAX_BYTES})")
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise ReportError(path, None, f"not a readable JSON file ({str(err)[:200]})") from None
        report = cls.from_dict(_parse(text, str(path)), str(path))
        if report.hardware is not None:
            _check_bundle_result(report, path)
        return report


# what every shard of one run holds alike (RunReport.merge): the run's, not its samples'
_MERGED_SAME = (
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
_LAYER_SAME = ("op", "input_kind", "neurons", "fan_out", "state_bytes", "weight_bytes", "extra")


def _same(items: Sequence[Any], what: str, get: Callable[[Any], Any]) -> None:
    """Every item's ``get`` is the first's, or a ValueError naming ``what`` (shards of different runs)."""
    values = [get(item) for item in items]
    for i, value in enumerate(values[1:], 1):
        if value != values[0]:
            raise ValueError(
                f"run report {i} has another {what} ({_short(value)} vs {_short(values[0])}): "
                "not a shard of the same run"
            )


def _joined(parts: Sequence[RunReport], what: str, get: Callable[[RunReport], Any]) -> Any:
    """The first part's ``get`` where every part has one, None where none has; a ValueError where only some do."""
    given = [get(part) is not None for part in parts]
    if any(given) and not all(given):
        raise ValueError(f"'{what}' is in some of the run reports only: not shards of the same run")
    return get(parts[0])


# JSON key order of a run report: the order the executors have always written them in
_ORDER = (
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


def as_dict(run: RunReport | dict[str, Any]) -> dict[str, Any]:
    """The JSON object of a run report given either way (readers that work on dicts accept both)."""
    return run.to_dict() if isinstance(run, RunReport) else run


def _tree_copy(value: Any) -> Any:
    """A copy of a JSON tree (dicts, lists, tuples of scalars): what ``copy.deepcopy`` makes of one, five times
    faster (no memo: a JSON tree shares nothing). A run report of 18 000 layers was deep-copied three times on its
    way into a report, 20 s of the report's 73. Anything else is deep-copied as before."""
    if isinstance(value, dict):
        return {k: _tree_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else _tree_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_tree_copy(v) for v in value)
    if type(value) in _SCALARS:
        return value
    return copy.deepcopy(value)


_SCALARS = frozenset((int, float, str, bool, type(None)))


def _to_dict(record: Any, keep_none: tuple[str, ...] = ()) -> dict[str, Any]:
    """A record's JSON object: its fields in declaration order (None left out unless kept), then ``extra``."""
    out: dict[str, Any] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name != "extra" and (value is not None or f.name in keep_none):
            out[f.name] = value
    out.update(record.extra)
    return out


# ---- reading and validation ---------------------------------------------------------------------------

MAX_DEPTH = 32  # nesting of a run report (a netx run's output [S][T][n] inside its block is 5 deep)
MAX_INT = 2**63  # |integer| anywhere in a run report: counts of any run fit in 64 bits
MAX_BYTES = 2**30  # a run report file (a netx run's per-step outputs are the largest part)
# ir.limits' MAX_T and MAX_SAMPLES: run_report sits below the IR (tests/test_reliability checks they agree)
MAX_T, MAX_SAMPLES = 10_000, 10**8


def _parse(text: str, where: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(where, None, f"not a JSON file ({err})") from None
    except (RecursionError, ValueError) as err:  # nested too deeply; an integer of more than 4300 digits
        raise ReportError(
            where, None, f"not a run report: {'nested too deeply' if isinstance(err, RecursionError) else err}"
        ) from None
    return data


def _check_tree(data: Any, where: str) -> None:
    """No nesting deeper than MAX_DEPTH, no integer beyond 64 bits, no NaN or infinity anywhere: a file that would
    overflow a copy, a float conversion or a sum later is refused here, before anything is read from it."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        value, depth, field = stack.pop()
        if depth > MAX_DEPTH:
            top = field.split("[")[0].split(".")[0] or None
            raise ReportError(where, top, f"nested more than {MAX_DEPTH} levels deep: not a run report")
        if isinstance(value, dict):
            stack.extend((v, depth + 1, f"{field}.{k}" if field else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, depth + 1, f"{field}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        elif isinstance(value, int) and abs(value) >= MAX_INT:
            raise ReportError(where, field, f"an integer of {len(str(abs(value)))} digits, expected at most 64 bits")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ReportError(where, field, f"is {value}, expected a finite number")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integer(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: Any) -> bool:
    return _integer(v) and v >= 0


_REPR = reprlib.Repr()  # never the whole of a value: a few elements, two levels, 60 characters each
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxstring, _REPR.maxother = 2, 4, 6, 60, 60


def _short(v: Any) -> str:
    text = _REPR.repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# optional fields of a run report: (check, what is expected)
_OPTIONAL: dict[str, tuple[Callable[[Any], bool], str]] = {
    "model": (lambda v: isinstance(v, dict), "an object (the model config)"),
    "T": (lambda v: _integer(v) and 1 <= v <= MAX_T, f"an integer in 1..{MAX_T} (time steps per sample)"),
    "predictions": (lambda v: isinstance(v, list) and all(_count(p) for p in v), "a list of class indices"),
    "accuracy": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "wall_time_s": (lambda v: _number(v) and v >= 0, "seconds (a number >= 0)"),
    "ranks": (lambda v: _integer(v) and v >= 2, "an integer >= 2 (the torchrun processes that shared the samples)"),
    "latency_timesteps": (lambda v: _count(v), "an integer >= 0"),
    "totals": (lambda v: isinstance(v, dict) and all(_number(x) and x >= 0 for x in v.values()), "counts (>= 0)"),
    "state_peak": (lambda v: isinstance(v, dict) and all(_number(x) and x >= 0 for x in v.values()), "numbers >= 0"),
    "peak_state_bytes": (lambda v: _count(v), "an integer >= 0"),
    "artifact": (lambda v: isinstance(v, str), "a file path"),
    "artifact_digest": (
        lambda v: isinstance(v, str) and len(v) == 64 and set(v) <= set("0123456789abcdef"),
        "a SHA-256 hex digest (64 hex digits)",
    ),
    "lava": (lambda v: isinstance(v, dict), "an object"),
    "netx": (lambda v: isinstance(v, dict), "an object"),
    "hardware": (lambda v: isinstance(v, dict), "an object"),
    "energy_measured": (lambda v: isinstance(v, dict), "an object"),
    "compare": (
        lambda v: isinstance(v, dict) and isinstance(v.get("identical"), bool),
        "an object with a boolean 'identical'",
    ),
}


def _read_report(data: Any, where: str) -> RunReport:
    """A RunReport from a run report object, or a ReportError naming the field."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            where,
            "schema",
            f"{_short(got)}: not a spikeport run report (expected '{SCHEMA}', written by `spikeport run ... --json`)",
        )
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise ReportError(where, "schema_version", f"expected one of {list(READABLE_VERSIONS)}, got {_short(version)}")
    if not isinstance(data.get("executor"), str):
        raise ReportError(where, "executor", f"expected the executor's name, got {_short(data.get('executor'))}")
    samples = data.get("samples")
    if not _integer(samples) or not 1 <= samples <= MAX_SAMPLES:
        raise ReportError(where, "samples", f"expected an integer in 1..{MAX_SAMPLES}, got {_short(samples)}")
    for key, (ok, expected) in _OPTIONAL.items():
        if data.get(key) is not None and not ok(data[key]):
            raise ReportError(where, key, f"expected {expected}, got {_short(data[key])}")
    predictions = data.get("predictions")
    if predictions and len(predictions) != samples:
        raise ReportError(where, "predictions", f"{len(predictions)} predictions for {samples} samples")
    known = {f.name for f in fields(RunReport)} - {"extra", "recording"}
    kwargs = {k: v for k, v in data.items() if k in known}
    kwargs["extra"] = {k: v for k, v in data.items() if k not in known and k != "schema"}
    T = data.get("T")
    kwargs["layers"] = _read_layers(data.get("layers"), where, samples, T if _integer(T) else None)
    for key, read in (
        ("lava", _read_lava),
        ("netx", _read_netx),
        ("hardware", _read_hardware),
        ("compare", _read_compare),
    ):
        if data.get(key) is not None:
            kwargs[key] = read(data[key], where)
    if data.get("energy_measured"):
        _check_energy(data["energy_measured"], where)
        _check_measured(data, where)
    if data.get("hardware") is not None:
        _check_hardware_run(data, where)
    return RunReport(**kwargs)


def _read_layers(layers: Any, where: str, samples: int, T: int | None) -> list[LayerReport]:
    """The layer rows: per-time-step lists of counts >= 0, as long as T (or all of one length without T), and no
    more spikes in a step than the layer has neurons in all samples (a neuron spikes at most once a step)."""
    if not isinstance(layers, list) or not layers:
        raise ReportError(where, "layers", "expected a non-empty list of layers")
    rows: list[LayerReport] = []
    for i, layer in enumerate(layers):
        if not (isinstance(layer, dict) and isinstance(layer.get("name"), str) and isinstance(layer.get("op"), str)):
            raise ReportError(where, f"layers[{i}]", "expected an object with 'name' and 'op'")
        name = layer["name"]
        steps = T if T is not None else (len(rows[0].spikes) if rows else None)
        for key in COUNTERS:
            if key not in REQUIRED_COUNTERS and key not in layer:
                continue
            v = layer.get(key)
            if not isinstance(v, list) or not all(_number(x) and x >= 0 for x in v):
                raise ReportError(
                    where,
                    f"layers[{i}].{key}",
                    f"layer '{name}': expected a per-time-step list of counts (numbers >= 0), got {_short(v)}",
                )
            if steps is not None and len(v) != steps or not 1 <= len(v) <= MAX_T:
                raise ReportError(
                    where,
                    f"layers[{i}].{key}",
                    f"layer '{name}': {len(v)} time steps, expected {steps or f'1..{MAX_T}'}"
                    + (" (the report's T)" if T is not None else " (as the first layer)"),
                )
            steps = len(v)
        for key in ("state_bytes", "weight_bytes", "neurons"):
            if not _count(layer.get(key, 0)):
                raise ReportError(
                    where, f"layers[{i}].{key}", f"layer '{name}': expected an integer >= 0, got {_short(layer[key])}"
                )
        if not (_number(layer.get("fan_out", 0)) and layer.get("fan_out", 0) >= 0):
            raise ReportError(
                where, f"layers[{i}].fan_out", f"layer '{name}': expected a number >= 0, got {_short(layer['fan_out'])}"
            )
        if not isinstance(layer.get("input_kind", ""), str):
            raise ReportError(where, f"layers[{i}].input_kind", f"layer '{name}': expected a value kind's name")
        most = samples * layer.get("neurons", 0)
        # a neuron group (it reads synaptic activations) sends at most one spike per neuron and sample a step
        if layer.get("input_kind") == ACTIVATION and most and max(layer["spikes"]) > most:
            raise ReportError(
                where,
                f"layers[{i}].spikes",
                f"layer '{name}': {max(layer['spikes'])} spikes in one step, more than its {layer['neurons']} "
                f"neurons x {samples} samples",
            )
        zeros = [0] * len(layer["spikes"])  # the optional counters older writers left out
        rows.append(
            LayerReport(
                **{k: v for k, v in layer.items() if k in _LAYER_FIELDS},
                counts={key: layer[key] if key in layer else list(zeros) for key in COUNTERS},
                extra={k: v for k, v in layer.items() if k not in _LAYER_FIELDS and k not in COUNTERS},
            )
        )
    return rows


# a layer row's JSON keys that are LayerReport fields (its counters are keys of their own, ``COUNTERS``)
_LAYER_FIELDS = frozenset(f.name for f in fields(LayerReport)) - {"counts", "extra"}


def _read_compare(data: dict[str, Any], where: str) -> Comparison:
    rows = data.get("layers", [])
    if not isinstance(rows, list) or not all(
        isinstance(r, dict)
        and isinstance(r.get("layer"), str)
        and isinstance(r.get("per_step_equal"), bool)
        and all(_count(r.get(k, 0)) for k in ("spikes", "reference_spikes"))
        for r in rows
    ):
        raise ReportError(
            where, "compare.layers", "expected a list of {layer, spikes, reference_spikes, per_step_equal}"
        )
    agreement = data.get("prediction_agreement", 0.0)
    if not (_number(agreement) and 0 <= agreement <= 1):
        raise ReportError(
            where, "compare.prediction_agreement", f"expected a number in [0, 1], got {_short(agreement)}"
        )
    if not isinstance(data.get("first_divergence"), (dict, type(None))):
        raise ReportError(where, "compare.first_divergence", "expected an object or null")
    data = {"against": "reference", "first_divergence": None, "prediction_agreement": 0.0, **data}
    data["layers"] = [_record(ComparedLayer, {"spikes": 0, "reference_spikes": 0, **r}) for r in rows]
    return _record(Comparison, data)


def _read_lava(data: dict[str, Any], where: str) -> LavaRun:
    defaults = {"reset_interval": 0, "steps": 0, "processes": 0, "host_only": [], "max_depth": 0, "restarts": 0}
    data = {**defaults, "state": [], **data}
    for key in ("reset_interval", "max_depth"):
        if not (_count(data[key]) and data[key] <= 2 * MAX_T):
            raise ReportError(where, f"lava.{key}", f"expected time steps in 0..{2 * MAX_T}, got {_short(data[key])}")
    for key in ("steps", "processes", "restarts"):
        if not _count(data[key]):
            raise ReportError(where, f"lava.{key}", f"expected an integer >= 0, got {_short(data[key])}")
    if not isinstance(data["host_only"], list) or not all(isinstance(n, str) for n in data["host_only"]):
        raise ReportError(where, "lava.host_only", "expected a list of node names")
    if not isinstance(data["state"], list):
        raise ReportError(where, "lava.state", "expected a list (per process: its state Vars)")
    return _record(LavaRun, data)


def _read_netx(data: dict[str, Any], where: str) -> NetxRun:
    for key in ("file", "input_drive", "prediction"):
        if not isinstance(data.get(key), str):
            raise ReportError(where, f"netx.{key}", f"expected a string, got {_short(data.get(key))}")
    shape = data.get("input_shape", [])
    if not isinstance(shape, list) or not all(_integer(s) and s > 0 for s in shape):
        raise ReportError(where, "netx.input_shape", f"expected a list of positive sizes, got {_short(shape)}")
    return _record(NetxRun, {"input_shape": [], **data})


def _read_hardware(data: dict[str, Any], where: str) -> HardwareRun:
    for key in ("run_config", "embedded_io", "drive", "counts_from"):
        if not isinstance(data.get(key), str):
            raise ReportError(where, f"hardware.{key}", f"expected a string, got {_short(data.get(key))}")
    if not isinstance(data.get("plan"), dict):
        raise ReportError(where, "hardware.plan", "expected an object (the hardware plan)")
    for key in ("outputs_identical", "states_identical"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise ReportError(where, f"hardware.{key}", f"expected true, false or null, got {_short(data[key])}")
    for key in ("io_latency", "samples"):
        if key in data and not (_count(data[key]) and data[key] <= MAX_SAMPLES):
            raise ReportError(where, f"hardware.{key}", f"expected an integer >= 0, got {_short(data[key])}")
    _check_compile_table(data.get("compile_table"), where)
    if data.get("chip_profile") is not None and not isinstance(data["chip_profile"], dict):
        raise ReportError(where, "hardware.chip_profile", f"expected an object, got {_short(data['chip_profile'])}")
    return _record(HardwareRun, data)


def _check_compile_table(table: Any, where: str) -> None:
    """What the compiler printed, as a run on Loihi 2 keeps it: its cores (a whole number within the largest
    system) and its lines, or that there was none and why."""
    if table is None:
        return
    if not isinstance(table, dict) or not isinstance(table.get("available"), bool):
        raise ReportError(where, "hardware.compile_table", "expected an object with 'available' true or false")
    if not table["available"]:
        return
    cores = table.get("cores")
    if not (isinstance(cores, int) and _count(cores) and 1 <= cores <= HALA_POINT_CORES):
        raise ReportError(
            where, "hardware.compile_table.cores", f"expected 1..{HALA_POINT_CORES:,}, got {_short(cores)}"
        )
    text = table.get("text")
    if not (isinstance(text, list) and all(isinstance(line, str) for line in text)):
        raise ReportError(where, "hardware.compile_table.text", "expected the compiler's lines (a list of strings)")


def _check_energy(data: dict[str, Any], where: str) -> None:
    """An executor's energy measurement: joules, watts and seconds as numbers >= 0, the static part no more than the
    total."""
    units = {"total_J": "joules", "dynamic_J": "joules", "static_J": "joules", "total_power_W": "watts",
             "static_power_W": "watts", "time_per_step_s": "seconds"}  # fmt: skip
    for key, unit in units.items():
        if key in data and not (_number(data[key]) and data[key] >= 0):
            raise ReportError(where, f"energy_measured.{key}", f"expected {unit} >= 0, got {_short(data[key])}")
    if not isinstance(data.get("per_inference", True), bool):
        raise ReportError(where, "energy_measured.per_inference", "expected true or false")
    for part, whole in (("static_J", "total_J"), ("dynamic_J", "total_J"), ("static_power_W", "total_power_W")):
        if part in data and whole in data and data[part] > data[whole] * (1 + 1e-9):
            raise ReportError(
                where, f"energy_measured.{part}", f"{data[part]:.4g} is more than {whole} {data[whole]:.4g}"
            )


def _check_measured(data: dict[str, Any], where: str) -> None:
    """A measurement's figures within what a Loihi 2 run can measure (``spikeport.measured``: positive, chips a
    whole number, no chip drawing more than a Hala Point system): 1e300 J and a 0 s time step were accepted."""
    m = data["energy_measured"]
    if m.get("available") is False:  # the run says it measured nothing: no figures to hold
        return
    lava = data.get("lava")
    steps = (lava.get("reset_interval") if isinstance(lava, dict) else None) or data.get("T")
    found = measured.problem(m, steps if _integer(steps) and steps >= 1 else None, data["samples"])
    if found is not None:
        raise ReportError(where, f"energy_measured.{found[0]}", found[1])


# the hardware plan's two ways to run (runtime/loihi2/plan_run.py): executor -> (run_config's class, embedded IO)
HARDWARE_RUNS = {
    "loihi2": ("Loihi2HwCfg", "lava.proc.embedded_io"),
    "loihi2-sim": ("Loihi2SimCfg", "simulated embedded IO"),
}


def _check_hardware_run(data: dict[str, Any], where: str) -> None:
    """A ``hardware`` block that agrees with itself and with the run report around it (a result file brought back
    from a bundle run is read as it is: a forged or damaged one is refused naming the field)."""
    hw, samples, T = data["hardware"], data["samples"], data.get("T")
    executor = data["executor"]
    if executor not in HARDWARE_RUNS:
        raise ReportError(where, "hardware", f"executor {_short(executor)} does not run the hardware plan")
    config, io = HARDWARE_RUNS[executor]
    if not hw["run_config"].startswith(config) or hw["embedded_io"] != io:
        raise ReportError(
            where, "hardware.run_config", f"{hw['run_config']!r} with {hw['embedded_io']!r} is not how {executor} runs"
        )
    if hw.get("drive") not in ("bias", "adapter"):
        raise ReportError(where, "hardware.drive", f"expected 'bias' or 'adapter', got {_short(hw.get('drive'))}")
    if hw.get("samples", samples) not in (0, samples):
        raise ReportError(where, "hardware.samples", f"{hw['samples']}, the run report's samples are {samples}")
    latency = hw.get("io_latency", 0)
    if latency > (MAX_IO_LATENCY if executor == "loihi2" else 0):
        raise ReportError(where, "hardware.io_latency", f"{latency} steps: the {io} adds 0..{MAX_IO_LATENCY}"
                          if executor == "loihi2" else f"{latency} steps: the simulated adapters add none")  # fmt: skip
    bits = hw.get("bias_bits")
    if bits is not None and not (_integer(bits) and 1 <= bits <= 64 and hw["drive"] == "bias"):
        raise ReportError(where, "hardware.bias_bits", f"{_short(bits)}: expected null, or 1..64 with the bias drive")
    agreed = hw.get("outputs_identical") in (True, None) and hw.get("states_identical") in (True, None)
    mismatch = hw.get("first_mismatch")
    if agreed != (mismatch is None) or not isinstance(mismatch, (dict, type(None))):
        raise ReportError(
            where,
            "hardware.first_mismatch",
            f"{_short(mismatch)} beside outputs_identical {hw.get('outputs_identical')} and states_identical "
            f"{hw.get('states_identical')}",
        )
    for key, most in (("sample", samples), ("time_step", T)):
        value = (mismatch or {}).get(key)
        if value is not None and not (_count(value) and (most is None or value < most)):
            bound = "an integer >= 0" if most is None else f"0..{most - 1}"
            raise ReportError(where, f"hardware.first_mismatch.{key}", f"{_short(value)}: expected {bound}")
    measured = data.get("energy_measured") or {}
    if measured.get("available") and executor != "loihi2":
        raise ReportError(where, "energy_measured", f"a measurement in a run of {executor}: a simulation measures none")


def _check_bundle_result(report: RunReport, path: Path) -> None:
    """A bundle's result.json read in its bundle folder, against the bundle (``bundle_result``)."""
    hw = report.hardware
    assert hw is not None
    claimed = bundle_result.Claimed(
        report.artifact_digest, report.samples, report.T, hw.drive, report.predictions, report.accuracy,
        hw.outputs_identical, hw.first_mismatch,
    )  # fmt: skip
    bundle_result.check(claimed, path)


def _record(cls: Callable[..., R], data: dict[str, Any]) -> R:
    """A record from its JSON object: known keys as fields, the rest in ``extra`` (key order kept)."""
    known = {f.name for f in fields(cls)} - {"extra"}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in known}, extra={k: v for k, v in data.items() if k not in known})
