"""Reading a run report: its JSON text within the budgets of a file (bytes, nesting, integers, no NaN), then the
records built from it (``read_fields``: the fields ``report.RunReport`` is made of), which ``RunReport.validate``
holds to the rules of ``checks``. Each refusal is one ``ReportError`` naming the file and the field."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeVar

from spikeport.errors import ReportError
from spikeport.run_report.checks import MAX_INT, short
from spikeport.run_report.records import (
    LAYER_COUNTER_NAMES,
    ORDER,
    REQUIRED_COUNTER_NAMES,
    SCHEMA,
    ComparedLayer,
    Comparison,
    HardwareRun,
    LavaRun,
    LayerReport,
    NetxRun,
)

R = TypeVar("R")
# the JSON keys of a run report that are RunReport fields (the others are kept in ``extra``)
_TOP_FIELDS = frozenset(ORDER) | {"schema_version"}

MAX_DEPTH = 32  # nesting of a run report (a netx run's output [S][T][n] inside its block is 5 deep)
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
        elif isinstance(value, list) and not (depth < MAX_DEPTH and _plain_integers(value)):
            stack.extend((v, depth + 1, f"{field}[{i}]") for i, v in enumerate(value))
        elif isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        elif isinstance(value, int) and abs(value) >= MAX_INT:
            raise ReportError(where, field, f"an integer of {len(str(abs(value)))} digits, expected at most 64 bits")
        elif isinstance(value, float) and not math.isfinite(value):
            raise ReportError(where, field, f"is {value}, expected a finite number")


def _plain_integers(values: list[Any]) -> bool:
    """A list of integers within 64 bits (a layer's per-step counts): nothing in it to look at one by one."""
    return set(map(type, values)) <= {int} and (not values or -MAX_INT < min(values) and max(values) < MAX_INT)


def read_fields(data: Any, where: str) -> dict[str, Any]:
    """The fields of a ``RunReport`` (keyword arguments) from a run report object: its records built from whatever
    the object holds where they are objects (``RunReport.validate`` then holds every field to its rules), or a
    ReportError naming the field. The optional counters older writers left out read as zeros."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            where,
            "schema",
            f"{short(got)}: not a spikeport run report (expected '{SCHEMA}', written by `spikeport run ... --json`)",
        )
    kwargs = {key: data.get(key) for key in ("schema_version", "executor", "samples")}  # None: refused by the rules
    kwargs.update((k, v) for k, v in data.items() if k in _TOP_FIELDS)
    kwargs["extra"] = {k: v for k, v in data.items() if k not in _TOP_FIELDS and k != "schema"}
    kwargs["layers"] = _read_layers(data.get("layers"), where)
    for key, read in (("lava", _read_lava), ("netx", _read_netx), ("hardware", _read_hardware)):
        if data.get(key) is not None:
            if not isinstance(data[key], dict):
                raise ReportError(where, key, f"expected an object, got {short(data[key])}")
            kwargs[key] = read(data[key])
    if data.get("compare") is not None:
        kwargs["compare"] = _read_compare(data["compare"], where)
    return kwargs


def _read_layers(layers: Any, where: str) -> list[LayerReport]:
    """The layer rows: an object each with a name and an op; its counters in ``counts``, the optional ones it lacks as
    zeros of its steps."""
    if not isinstance(layers, list) or not layers:
        raise ReportError(where, "layers", "expected a non-empty list of layers")
    rows: list[LayerReport] = []
    for i, layer in enumerate(layers):
        if not (isinstance(layer, dict) and "name" in layer and "op" in layer):
            raise ReportError(where, f"layers[{i}]", "expected an object with 'name' and 'op'")
        spikes = layer.get("spikes")
        zeros = [0] * len(spikes) if isinstance(spikes, list) else None  # the optional counters older writers left out
        counts = {}
        for key in LAYER_COUNTER_NAMES:
            if key in layer:
                counts[key] = layer[key]
            elif zeros is not None and key not in REQUIRED_COUNTER_NAMES:
                counts[key] = list(zeros)
        rows.append(
            LayerReport(
                **{k: v for k, v in layer.items() if k in _LAYER_FIELDS},
                counts=counts,
                extra={k: v for k, v in layer.items() if k not in _LAYER_FIELDS and k not in _COUNTER_KEYS},
            )
        )
    return rows


# a layer row's JSON keys that are LayerReport fields (its counters are keys of their own, ``LAYER_COUNTER_NAMES``)
_LAYER_FIELDS = frozenset(f.name for f in fields(LayerReport)) - {"counts", "extra"}
_COUNTER_KEYS = frozenset(LAYER_COUNTER_NAMES)


def _read_compare(data: Any, where: str) -> Comparison:
    if not isinstance(data, dict) or not isinstance(data.get("identical"), bool):
        raise ReportError(where, "compare", f"expected an object with a boolean 'identical', got {short(data)}")
    rows = data.get("layers", [])
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ReportError(
            where, "compare.layers", "expected a list of {layer, spikes, reference_spikes, per_step_equal}"
        )
    data = {"against": "reference", "first_divergence": None, "prediction_agreement": 0.0, **data}
    data["layers"] = [record(ComparedLayer, {"spikes": 0, "reference_spikes": 0, **r}) for r in rows]
    return record(Comparison, data)


def _read_lava(data: dict[str, Any]) -> LavaRun:
    defaults = {"reset_interval": 0, "steps": 0, "processes": 0, "host_only": [], "max_depth": 0, "restarts": 0}
    return record(LavaRun, {**defaults, "state": [], **data})


def _read_netx(data: dict[str, Any]) -> NetxRun:
    return record(NetxRun, {"input_shape": [], **data})


def _read_hardware(data: dict[str, Any]) -> HardwareRun:
    return record(HardwareRun, data)


def record(cls: Callable[..., R], data: dict[str, Any]) -> R:
    """A record from its JSON object: known keys as fields (a required one it lacks as None, which the rules
    refuse), the rest in ``extra`` (key order kept)."""
    declared = fields(cls)  # type: ignore[arg-type]
    known = {f.name for f in declared} - {"extra"}
    required = {f.name: None for f in declared if f.default is MISSING and f.default_factory is MISSING}
    return cls(
        **{**required, **{k: v for k, v in data.items() if k in known}},
        extra={k: v for k, v in data.items() if k not in known},
    )
