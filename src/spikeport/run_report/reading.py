"""Reading a run report: its JSON text within the budgets of a file (bytes, nesting, integers), then every
field a reader relies on typed and checked (``checks``), refused with one ``ReportError`` naming the file and the
field. ``read_fields`` gives the fields ``report.RunReport`` is built from."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from spikeport.errors import ReportError
from spikeport.run_report.checks import (
    MAX_SAMPLES,
    MAX_T,
    OPTIONAL,
    check_compile_table,
    check_energy,
    check_hardware_run,
    check_measured,
    count,
    integer,
    number,
    short,
)
from spikeport.run_report.records import (
    COUNTERS,
    ORDER,
    READABLE_VERSIONS,
    REQUIRED_COUNTERS,
    SCHEMA,
    ComparedLayer,
    Comparison,
    HardwareRun,
    LavaRun,
    LayerReport,
    NetxRun,
)
from spikeport.value_kinds import ACTIVATION

R = TypeVar("R")
# the JSON keys of a run report that are RunReport fields (the others are kept in ``extra``)
_TOP_FIELDS = frozenset(ORDER) | {"schema_version"}

MAX_DEPTH = 32  # nesting of a run report (a netx run's output [S][T][n] inside its block is 5 deep)
MAX_INT = 2**63  # |integer| anywhere in a run report: counts of any run fit in 64 bits
MAX_BYTES = 2**30  # a run report file (a netx run's per-step outputs are the largest part)


def parse(text: str, where: str) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReportError(where, None, f"not a JSON file ({err})") from None
    except (RecursionError, ValueError) as err:  # nested too deeply; an integer of more than 4300 digits
        raise ReportError(
            where, None, f"not a run report: {'nested too deeply' if isinstance(err, RecursionError) else err}"
        ) from None
    return data


def check_tree(data: Any, where: str) -> None:
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


def read_fields(data: Any, where: str) -> dict[str, Any]:
    """The fields of a ``RunReport`` (keyword arguments) from a run report object, or a ReportError naming the
    field."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            where,
            "schema",
            f"{short(got)}: not a spikeport run report (expected '{SCHEMA}', written by `spikeport run ... --json`)",
        )
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise ReportError(where, "schema_version", f"expected one of {list(READABLE_VERSIONS)}, got {short(version)}")
    if not isinstance(data.get("executor"), str):
        raise ReportError(where, "executor", f"expected the executor's name, got {short(data.get('executor'))}")
    samples = data.get("samples")
    if not integer(samples) or not 1 <= samples <= MAX_SAMPLES:
        raise ReportError(where, "samples", f"expected an integer in 1..{MAX_SAMPLES}, got {short(samples)}")
    for key, (ok, expected) in OPTIONAL.items():
        if data.get(key) is not None and not ok(data[key]):
            raise ReportError(where, key, f"expected {expected}, got {short(data[key])}")
    predictions = data.get("predictions")
    if predictions and len(predictions) != samples:
        raise ReportError(where, "predictions", f"{len(predictions)} predictions for {samples} samples")
    kwargs = {k: v for k, v in data.items() if k in _TOP_FIELDS}
    kwargs["extra"] = {k: v for k, v in data.items() if k not in _TOP_FIELDS and k != "schema"}
    T = data.get("T")
    kwargs["layers"] = _read_layers(data.get("layers"), where, samples, T if integer(T) else None)
    for key, read in (
        ("lava", _read_lava),
        ("netx", _read_netx),
        ("hardware", _read_hardware),
        ("compare", _read_compare),
    ):
        if data.get(key) is not None:
            kwargs[key] = read(data[key], where)
    if data.get("energy_measured"):
        check_energy(data["energy_measured"], where)
        check_measured(data, where)
    if data.get("hardware") is not None:
        check_hardware_run(data, where)
    return kwargs


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
            if not isinstance(v, list) or not all(number(x) and x >= 0 for x in v):
                raise ReportError(
                    where,
                    f"layers[{i}].{key}",
                    f"layer '{name}': expected a per-time-step list of counts (numbers >= 0), got {short(v)}",
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
            if not count(layer.get(key, 0)):
                raise ReportError(
                    where, f"layers[{i}].{key}", f"layer '{name}': expected an integer >= 0, got {short(layer[key])}"
                )
        if not (number(layer.get("fan_out", 0)) and layer.get("fan_out", 0) >= 0):
            raise ReportError(
                where, f"layers[{i}].fan_out", f"layer '{name}': expected a number >= 0, got {short(layer['fan_out'])}"
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
        and all(count(r.get(k, 0)) for k in ("spikes", "reference_spikes"))
        for r in rows
    ):
        raise ReportError(
            where, "compare.layers", "expected a list of {layer, spikes, reference_spikes, per_step_equal}"
        )
    agreement = data.get("prediction_agreement", 0.0)
    if not (number(agreement) and 0 <= agreement <= 1):
        raise ReportError(where, "compare.prediction_agreement", f"expected a number in [0, 1], got {short(agreement)}")
    if not isinstance(data.get("first_divergence"), (dict, type(None))):
        raise ReportError(where, "compare.first_divergence", "expected an object or null")
    data = {"against": "reference", "first_divergence": None, "prediction_agreement": 0.0, **data}
    data["layers"] = [record(ComparedLayer, {"spikes": 0, "reference_spikes": 0, **r}) for r in rows]
    return record(Comparison, data)


def _read_lava(data: dict[str, Any], where: str) -> LavaRun:
    defaults = {"reset_interval": 0, "steps": 0, "processes": 0, "host_only": [], "max_depth": 0, "restarts": 0}
    data = {**defaults, "state": [], **data}
    for key in ("reset_interval", "max_depth"):
        if not (count(data[key]) and data[key] <= 2 * MAX_T):
            raise ReportError(where, f"lava.{key}", f"expected time steps in 0..{2 * MAX_T}, got {short(data[key])}")
    for key in ("steps", "processes", "restarts"):
        if not count(data[key]):
            raise ReportError(where, f"lava.{key}", f"expected an integer >= 0, got {short(data[key])}")
    if not isinstance(data["host_only"], list) or not all(isinstance(n, str) for n in data["host_only"]):
        raise ReportError(where, "lava.host_only", "expected a list of node names")
    if not isinstance(data["state"], list):
        raise ReportError(where, "lava.state", "expected a list (per process: its state Vars)")
    return record(LavaRun, data)


def _read_netx(data: dict[str, Any], where: str) -> NetxRun:
    for key in ("file", "input_drive", "prediction"):
        if not isinstance(data.get(key), str):
            raise ReportError(where, f"netx.{key}", f"expected a string, got {short(data.get(key))}")
    shape = data.get("input_shape", [])
    if not isinstance(shape, list) or not all(integer(s) and s > 0 for s in shape):
        raise ReportError(where, "netx.input_shape", f"expected a list of positive sizes, got {short(shape)}")
    return record(NetxRun, {"input_shape": [], **data})


def _read_hardware(data: dict[str, Any], where: str) -> HardwareRun:
    for key in ("run_config", "embedded_io", "drive", "counts_from"):
        if not isinstance(data.get(key), str):
            raise ReportError(where, f"hardware.{key}", f"expected a string, got {short(data.get(key))}")
    if not isinstance(data.get("plan"), dict):
        raise ReportError(where, "hardware.plan", "expected an object (the hardware plan)")
    for key in ("outputs_identical", "states_identical"):
        if data.get(key) is not None and not isinstance(data[key], bool):
            raise ReportError(where, f"hardware.{key}", f"expected true, false or null, got {short(data[key])}")
    for key in ("io_latency", "samples"):
        if key in data and not (count(data[key]) and data[key] <= MAX_SAMPLES):
            raise ReportError(where, f"hardware.{key}", f"expected an integer >= 0, got {short(data[key])}")
    check_compile_table(data.get("compile_table"), where)
    if data.get("chip_profile") is not None and not isinstance(data["chip_profile"], dict):
        raise ReportError(where, "hardware.chip_profile", f"expected an object, got {short(data['chip_profile'])}")
    return record(HardwareRun, data)


def record(cls: Callable[..., R], data: dict[str, Any]) -> R:
    """A record from its JSON object: known keys as fields, the rest in ``extra`` (key order kept)."""
    known = {f.name for f in fields(cls)} - {"extra"}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in known}, extra={k: v for k, v in data.items() if k not in known})
