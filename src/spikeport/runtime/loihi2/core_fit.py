"""Refit the core model's synapse formats (the profile's ``core_model`` section) on compile tables: the public ones
Lava's Loihi 2 compiler printed for lava-dl's networks, and those a bundle brings back from the chip
(``spikeport calibrate --compile-table``; docs/netx_and_hardware.md, "Refitting the core model").

A table is read against its network: check-hw's neuron groups (the loads each synapse puts on a core) and which
group each row is. The points of the fit are the SynMem allocations the compiler states for one core: a row of one
core (its Synapses column is that core's allocation) and each partitioner message (``Violation ...
allocation=61440``: a whole layer before its split, matched to the layer whose one-core load is nearest). The fit

- searches the weight-matrix format's three constants (bits beside a synapse's weight, an axon list's header bits,
  the bits of a unit) for the smallest mean relative error over the allocation points, and among near-ties the
  one whose cores match the most rows;
- searches the kernel format's two (weights a unit, header units a row) on the conv rows of count tables;
- reports, for every table given, each row's cores (the compiler's, the refitted model's) and each allocation's
  error, so that a fit on some tables can be checked on the others.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spikeport.errors import ConfigError, DataError
from spikeport.runtime.loihi2.compile_table import CompileTable, PublicTable
from spikeport.runtime.loihi2.core_model import CoreModel, Group, fit_group

if TYPE_CHECKING:
    from spikeport.hw_profiles import HwProfile
    from spikeport.runtime.loihi2.hw_records import HwCheck

MATRIX_GRID = {
    "synapse_extra_bits": range(0, 25),
    "synapse_list_header_bits": range(0, 33),
    "synmem_unit_bits": range(32, 129),
}
KERNEL_GRID = {"kernel_weights_per_unit": (4, 8, 12, 16, 24, 32, 64), "kernel_row_header_units": (0, 1, 2, 3)}
NEAR_TIES = 20  # candidates within the best allocation error whose cores are compared
MAX_TABLE_BYTES = 1 << 22  # a result.json or a table's JSON


@dataclass(frozen=True)
class TableOnNetwork:
    """A compile table and the neuron groups of the network it compiled (check-hw's rows, by group name)."""

    name: str
    table: CompileTable
    groups: tuple[str, ...]  # the group of each table row
    check: HwCheck

    def group(self, name: str) -> Group:
        row = next(r for r in self.check.layers if r["group"] == name)
        loads = [p.load for p in self.check.processes if p.name in row["synapse_processes"] and p.load is not None]
        return Group(row["type"], tuple(row["shape"]), loads)


@dataclass(frozen=True)
class Allocation:
    """One SynMem allocation the compiler stated for one core holding ``neurons`` of ``group``."""

    table: str
    group: str
    neurons: int
    units: int
    kind: str  # row | message


@dataclass(frozen=True)
class RowCores:
    table: str
    group: str
    compiler: int
    model: int


@dataclass(frozen=True)
class CoreFit:
    """The refitted constants, and how the refitted model meets every table it was given and checked on."""

    constants: dict[str, int]
    base: dict[str, int]
    fitted_on: tuple[str, ...]
    allocations: tuple[tuple[Allocation, int], ...]  # (the compiler's, the model's units)
    rows: tuple[RowCores, ...]

    def errors(self, table: str) -> dict[str, float]:
        """A table's fit: rows whose cores differ, the cores' total error, the allocations' mean relative error."""
        rows = [r for r in self.rows if r.table == table]
        allocs = [(a, m) for a, m in self.allocations if a.table == table]
        compiler, model = sum(r.compiler for r in rows), sum(r.model for r in rows)
        return {
            "rows": len(rows),
            "rows_off": sum(r.model != r.compiler for r in rows),
            "cores_compiler": compiler,
            "cores_model": model,
            "cores_error": (model - compiler) / compiler if compiler else 0.0,
            "allocation_error": float(np.mean([abs(m - a.units) / a.units for a, m in allocs])) if allocs else 0.0,
        }

    def to_dict(self) -> dict[str, Any]:
        tables = sorted({r.table for r in self.rows})
        return {
            "constants": self.constants,
            "base": self.base,
            "fitted_on": list(self.fitted_on),
            "tables": {t: self.errors(t) | {"fitted_on": t in self.fitted_on} for t in tables},
            "rows": [vars(r) for r in self.rows],
            "allocations": [vars(a) | {"model": m} for a, m in self.allocations],
        }


def constants_of(model: CoreModel) -> dict[str, int]:
    return {
        "synapse_extra_bits": model.extra_bits,
        "synapse_list_header_bits": model.header_bits,
        "synmem_unit_bits": model.unit_bits,
        "kernel_weights_per_unit": model.kernel_weights_per_unit,
        "kernel_row_header_units": model.kernel_row_header,
    }


def with_constants(model: CoreModel, c: dict[str, int]) -> CoreModel:
    return replace(
        model,
        extra_bits=c["synapse_extra_bits"],
        header_bits=c["synapse_list_header_bits"],
        unit_bits=c["synmem_unit_bits"],
        kernel_weights_per_unit=c["kernel_weights_per_unit"],
        kernel_row_header=c["kernel_row_header_units"],
    )


def allocations(point: TableOnNetwork, model: CoreModel) -> list[Allocation]:
    """The one-core allocations ``point`` states: its one-core rows fed by weight matrices, and its partitioner's
    messages matched to the layer whose whole-layer load under ``model`` is nearest (within 25 %)."""
    out = []
    whole = {}
    for name, row in zip(point.groups, point.table.rows, strict=True):
        group = point.group(name)
        if not group.synapses or any(s.kernel for s in group.synapses):
            continue
        whole[name] = _units(group, model, group.neurons)
        if row.cores == 1 and not point.table.percent:
            out.append(Allocation(point.name, name, group.neurons, int(row.values["Synapses"]), "row"))
    for v in {v.allocation for v in point.table.violations if v.register == "SynMem"}:
        near = min(whole, key=lambda g: abs(whole[g] - v), default=None)
        if near is not None and abs(whole[near] - v) <= 0.25 * v:
            out.append(Allocation(point.name, near, point.group(near).neurons, v, "message"))
    return out


def _units(group: Group, model: CoreModel, neurons: int) -> int:
    return sum(model.list_units(s.per_axon(0, neurons), s.bits) for s in group.synapses)


def fit(points: Sequence[TableOnNetwork], model: CoreModel, check: Sequence[TableOnNetwork] = ()) -> CoreFit:
    """Refit ``model``'s synapse formats on ``points``; report every table of ``points`` and ``check``."""
    if not points:
        raise ConfigError("refitting the core model needs at least one compile table")
    base = constants_of(model)
    allocs = [a for p in points for a in allocations(p, model)]
    best = dict(base)
    if allocs:
        best |= _matrix_fit(allocs, {p.name: p for p in points}, model, points)
    best |= _kernel_fit(points, with_constants(model, best))
    refitted = with_constants(model, best)
    everything = list(points) + [c for c in check if c.name not in {p.name for p in points}]
    rows = tuple(
        RowCores(p.name, g, r.cores, fit_group(p.group(g), refitted).cores)
        for p in everything
        for g, r in zip(p.groups, p.table.rows, strict=True)
    )
    judged = tuple(
        (a, _units(next(p for p in everything if p.name == a.table).group(a.group), refitted, a.neurons))
        for p in everything
        for a in allocations(p, model)
    )
    return CoreFit(best, base, tuple(p.name for p in points), judged, rows)


def _matrix_fit(
    allocs: list[Allocation], by_name: dict[str, TableOnNetwork], model: CoreModel, points: Sequence[TableOnNetwork]
) -> dict[str, int]:
    """The weight-matrix constants with the least mean relative allocation error; among the near-ties, the one
    that gets the most rows' cores right (then the nearest to the base)."""
    x, h, u = (np.array(list(r))[:, None, None] for r in MATRIX_GRID.values())
    x, h, u = x, h.reshape(1, -1, 1), u.reshape(1, 1, -1)
    error = np.zeros((x.shape[0], h.shape[1], u.shape[2]))
    for a in allocs:
        group = by_name[a.table].group(a.group)
        predicted = np.zeros_like(error)
        for s in group.synapses:
            counts, times = np.unique(s.per_axon(0, a.neurons), return_counts=True)
            for c, n in zip(counts, times, strict=True):
                if c:
                    predicted += n * -((-(c * (s.bits + x) + h)) // u)
        error += np.abs(predicted - a.units) / a.units
    order = np.argsort(error, axis=None)[:NEAR_TIES]
    keys = list(MATRIX_GRID)
    base = constants_of(model)
    candidates = []
    for flat in order:
        i, j, k = np.unravel_index(flat, error.shape)
        c = dict(zip(keys, (int(x[i, 0, 0]), int(h[0, j, 0]), int(u[0, 0, k])), strict=True))
        cores_off = _rows_off(points, with_constants(model, base | c))
        candidates.append((round(float(error[i, j, k]), 9), cores_off, _distance(c, base), c))
    return min(candidates, key=lambda t: t[:3])[3]


def _kernel_fit(points: Sequence[TableOnNetwork], model: CoreModel) -> dict[str, int]:
    """The kernel constants with the smallest error on the conv rows' per-core Synapses of count tables (the base's
    where no table has such a row), the rows' cores breaking ties."""
    rows = [
        (p.group(g), r)
        for p in points
        if not p.table.percent
        for g, r in zip(p.groups, p.table.rows, strict=True)
        if r.block is not None and r.values["Synapses"] > 0
    ]
    base = constants_of(model)
    if not rows:
        return {k: base[k] for k in KERNEL_GRID}
    scored = []
    for w, hdr in itertools.product(*KERNEL_GRID.values()):
        c = base | {"kernel_weights_per_unit": w, "kernel_row_header_units": hdr}
        trial = with_constants(model, c)
        error = 0.0
        for group, row in rows:
            fitted = fit_group(group, trial)
            error += abs(fitted.load.synmem - row.values["Synapses"]) / row.values["Synapses"]
        off = sum(fit_group(group, trial).cores != row.cores for group, row in rows)
        scored.append((off, round(error, 9), _distance(c, base), {k: c[k] for k in KERNEL_GRID}))
    return min(scored, key=lambda t: t[:3])[3]


def _rows_off(points: Sequence[TableOnNetwork], model: CoreModel) -> int:
    return sum(
        fit_group(p.group(g), model).cores != r.cores
        for p in points
        for g, r in zip(p.groups, p.table.rows, strict=True)
    )


def _distance(c: dict[str, int], base: dict[str, int]) -> float:
    return sum(abs(c[k] - base[k]) / max(base[k], 1) for k in c)


# ---------------------------------------------------------------------------------------------- the tables' sources
def on_network(table: PublicTable, check: HwCheck) -> TableOnNetwork:
    """A public table read against check-hw of its network; a DataError where a row's group is not on the chip."""
    names = {row["group"] for row in check.layers}
    missing = [g for g in table.groups if g not in names]
    if missing:
        raise DataError(f"compile table {table.name}: groups {missing} are not on check-hw's chip")
    return TableOnNetwork(table.name, table.table, table.groups, check)


def from_result(path: Path, check_of: Any) -> TableOnNetwork:
    """The compile table a bundle's run on Loihi 2 kept in its result.json (``hardware.compile_table``), read
    against check-hw of the bundle's model.spk.h5 (``check_of(path)``: the HwCheck of an artifact): the rows, last
    layer first as the compiler prints them, are the chip's neuron groups in reverse."""
    if path.stat().st_size > MAX_TABLE_BYTES:
        raise DataError(f"{path}: {path.stat().st_size:,} bytes, not a run result")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise DataError(f"{path}: not a readable JSON file ({str(err)[:120]})") from None
    kept = ((data or {}).get("hardware") or {}).get("compile_table") if isinstance(data, dict) else None
    if not isinstance(kept, dict) or not kept.get("available"):
        why = kept.get("reason", "") if isinstance(kept, dict) else ""
        raise DataError(
            f"{path}: no compile table (hardware.compile_table: a bundle's run on Loihi 2 keeps the compiler's "
            f"per-core table){': ' + why if why else ''}"
        )
    table = CompileTable.parse(kept["text"], str(path))
    artifact = path.parent / "model.spk.h5"
    if not artifact.is_file():
        raise DataError(f"{path}: the bundle's model.spk.h5 is not beside it (check-hw reads the network from it)")
    check = check_of(artifact)
    groups = tuple(row["group"] for row in reversed(check.layers))
    if len(groups) != len(table.rows):
        raise DataError(
            f"{path}: the compiler's table has {len(table.rows)} rows, check-hw places {len(groups)} neuron groups "
            f"of {artifact} on the chip: the rows cannot be matched to groups"
        )
    return TableOnNetwork(path.parent.name or str(path), table, groups, check)


def fitted_model_entries(prof: HwProfile, fitted: CoreFit) -> dict[str, Any]:
    """The profile's ``core_model`` entries with the refitted values, each saying what it was fitted on."""
    on = ", ".join(fitted.fitted_on)
    out = {}
    for key, value in fitted.constants.items():
        q = prof.get("core_model", key)
        assert q is not None
        source = f"refitted by spikeport calibrate on the compile tables of {on}"
        out[key] = replace(q, value=float(value), confidence="calibrated", source=source[:1900])
    return out
