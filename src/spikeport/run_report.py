"""``RunReport``: the run report of one executor on one artifact (schema ``spikeport.run``, version 1).

``spikeport run`` / ``spikeport.run(...)`` write it; ``spikeport report`` and the energy estimates read it.
The JSON is the one the executors have always written (``runtime.sim.reference.build_report`` plus what
the Lava / Loihi 2 / netx runners and the comparison add), so files written before this class existed
read back unchanged. Reading validates every field a reader relies on and refuses a bad file with one
``ReportError`` naming the file and the field.

Counts in ``layers`` are sums over all samples, one entry per time step (docs/counting.md); readers divide
by ``samples`` for figures per inference.

Standard library only: the deploy side (numpy + h5py + lava, no torch) reads and writes run reports too.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from spikeport.atomic import atomic_write
from spikeport.errors import ReportError

SCHEMA = "spikeport.run"
SCHEMA_VERSION = 1
READABLE_VERSIONS = (1,)
# per-time-step counters every layer carries (the report and the energy estimates price them)
LAYER_COUNTERS = ("spikes", "synops", "macs", "neuron_updates", "dendritic_updates")
# JSON key order: the order the executors have always written them in
_ORDER = (
    "executor",
    "model",
    "T",
    "samples",
    "predictions",
    "wall_time_s",
    "latency_timesteps",
    "layers",
    "totals",
    "state_peak",
    "peak_state_bytes",
    "accuracy",
    "lava",
    "energy_measured",
    "netx",
    "compare",
    "artifact",
    "artifact_digest",
)


@dataclass
class RunReport:
    """One run of an executor. Optional fields are None when the run did not produce them (``accuracy``
    without labels, ``compare`` without ``compare='reference'``, ``lava`` on the reference simulator...);
    they are left out of the JSON then, as before."""

    executor: str  # reference | lava-fixed_pt | loihi2 | ...
    samples: int  # inputs run (counts are summed over them)
    layers: list[dict[str, Any]]  # per node in topological order: name, op, neurons, counters per step
    model: dict[str, Any] | None = None  # the artifact's model config (+ "dataset")
    T: int | None = None  # time steps per sample
    predictions: list[int] | None = None  # predicted class per sample
    accuracy: float | None = None  # against the labels, when there were labels
    wall_time_s: float | None = None  # the executor's own time for all samples
    latency_timesteps: int | None = None  # steps from a sample's first input to its last output
    totals: dict[str, int] | None = None  # every counter summed over layers, steps and samples
    state_peak: dict[str, float] | None = None  # largest |state| seen per node (headroom of the 24-bit state)
    peak_state_bytes: int | None = None  # state held by the whole network at once, Loihi precision
    artifact: str | None = None  # the file that ran
    artifact_digest: str | None = None  # its root digest (artifacts of schema 2): which conversion it came from
    lava: dict[str, Any] | None = None  # Lava runs: reset_interval, steps, processes, host_only, restarts ...
    netx: dict[str, Any] | None = None  # netx files: file, input_shape, how predictions are read
    energy_measured: dict[str, Any] | None = None  # executors that measure energy (Loihi 2 profiler)
    compare: dict[str, Any] | None = None  # against the reference: identical, first_divergence, layers ...
    extra: dict[str, Any] = field(default_factory=dict)  # fields of newer writers, kept as they are
    schema_version: int = SCHEMA_VERSION

    @property
    def identical(self) -> bool | None:
        """Bit-exact with the reference (every layer, every step, every prediction); None without ``compare``."""
        return None if self.compare is None else bool(self.compare["identical"])

    # ---- dict / JSON --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (a copy), keys in the order the executors write them; None fields left out."""
        out: dict[str, Any] = {"schema": SCHEMA, "schema_version": self.schema_version}
        out.update((key, getattr(self, key)) for key in _ORDER if getattr(self, key) is not None)
        out.update(self.extra)
        return copy.deepcopy(out)

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The JSON text; also written atomically to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            with atomic_write(path) as tmp:
                Path(tmp).write_text(text)
        return text

    @classmethod
    def from_dict(cls, data: Any, where: str = "run report") -> RunReport:
        """Validate and type a run report object (copied); ``where`` (a file name) opens every error message."""
        return cls(**copy.deepcopy(_validated(data, str(where))))

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> RunReport:
        """A run report from a file path, or from JSON text (a string starting with ``{``)."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            return cls.from_dict(_parse(source, "run report"), "run report")
        path = Path(source)
        if not path.is_file():
            raise ReportError(path, None, "run report not found (write one with `spikeport run ... --json`)")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise ReportError(path, None, f"not a readable JSON file ({err})") from None
        return cls.from_dict(_parse(text, str(path)), str(path))


def as_dict(run: RunReport | dict[str, Any]) -> dict[str, Any]:
    """The JSON object of a run report given either way (readers that work on dicts accept both)."""
    return run.to_dict() if isinstance(run, RunReport) else run


# ---- validation ---------------------------------------------------------------------------------------


def _parse(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(where, None, f"not a JSON file ({err})") from None


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# optional fields: (check, what is expected)
_OPTIONAL = {
    "model": (lambda v: isinstance(v, dict), "an object (the model config)"),
    "T": (lambda v: _integer(v) and v > 0, "a positive integer"),
    "predictions": (lambda v: isinstance(v, list) and all(_integer(p) for p in v), "a list of class indices"),
    "accuracy": (lambda v: _number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "wall_time_s": (lambda v: _number(v) and v >= 0, "seconds (a number >= 0)"),
    "latency_timesteps": (lambda v: _integer(v) and v >= 0, "an integer >= 0"),
    "totals": (lambda v: isinstance(v, dict) and all(_number(x) for x in v.values()), "an object of numbers"),
    "state_peak": (lambda v: isinstance(v, dict) and all(_number(x) for x in v.values()), "an object of numbers"),
    "peak_state_bytes": (lambda v: _integer(v) and v >= 0, "an integer >= 0"),
    "artifact": (lambda v: isinstance(v, str), "a file path"),
    "artifact_digest": (lambda v: isinstance(v, str), "a SHA-256 hex digest"),
    "lava": (lambda v: isinstance(v, dict), "an object"),
    "netx": (lambda v: isinstance(v, dict), "an object"),
    "energy_measured": (lambda v: isinstance(v, dict), "an object"),
    "compare": (
        lambda v: isinstance(v, dict) and isinstance(v.get("identical"), bool),
        "an object with a boolean 'identical'",
    ),
}


def _validated(data: Any, where: str) -> dict[str, Any]:
    """The keyword arguments of RunReport from a run report object, or a ReportError naming the field."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            where,
            "schema",
            f"{got!r}: not a spikeport run report (expected '{SCHEMA}', written by `spikeport run ... --json`)",
        )
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise ReportError(where, "schema_version", f"expected one of {list(READABLE_VERSIONS)}, got {version!r}")
    if not isinstance(data.get("executor"), str):
        raise ReportError(where, "executor", f"expected the executor's name, got {data.get('executor')!r}")
    samples = data.get("samples")
    if not _integer(samples) or samples <= 0:
        raise ReportError(where, "samples", f"expected a positive integer, got {samples!r}")
    _check_layers(data.get("layers"), where)
    for key, (ok, expected) in _OPTIONAL.items():
        if data.get(key) is not None and not ok(data[key]):
            raise ReportError(where, key, f"expected {expected}, got {_short(data[key])}")
    known = {f.name for f in fields(RunReport)} - {"extra"}
    kwargs = {k: v for k, v in data.items() if k in known}
    kwargs["extra"] = {k: v for k, v in data.items() if k not in known and k != "schema"}
    return kwargs


def _check_layers(layers: Any, where: str) -> None:
    if not isinstance(layers, list) or not layers:
        raise ReportError(where, "layers", "expected a non-empty list of layers")
    for i, layer in enumerate(layers):
        if not (isinstance(layer, dict) and isinstance(layer.get("name"), str) and isinstance(layer.get("op"), str)):
            raise ReportError(where, f"layers[{i}]", "expected an object with 'name' and 'op'")
        for key in LAYER_COUNTERS:
            v = layer.get(key)
            if not isinstance(v, list) or not all(_number(x) for x in v):
                raise ReportError(
                    where,
                    f"layers[{i}].{key}",
                    f"layer '{layer['name']}': expected a per-time-step list of numbers, got {_short(v)}",
                )
        for key in ("state_bytes", "weight_bytes", "neurons"):
            if not _number(layer.get(key, 0)):
                raise ReportError(
                    where, f"layers[{i}].{key}", f"layer '{layer['name']}': expected a number, got {_short(layer[key])}"
                )


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."
