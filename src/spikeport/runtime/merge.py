"""The run report of a sharded run (``runtime.distributed``) from its shards' reports, in rank order.

``RunReport.merge`` merges what every executor reports (counts, predictions, accuracy, state peaks); the records a
streaming target adds describe its network and how the samples streamed through it, and are merged here, so that
a run of the lava or loihi2 target sharded over the ranks of a torchrun job reports, field for field, what one
process running every sample reports (its wall times aside: each the longest shard's):

* ``lava`` (``LavaRun``): the network's record (reset interval, processes, host-only nodes, depth, state) is every
  shard's; restarts are summed; ``steps`` is the run's stream as one network streams it, ``samples x R`` and one
  drain of the deepest node (``max_depth + 1``), plus every step a restart ran again, so each further rank's own
  drain is the sharding's overhead, like its wall time (a partitioned run: per part, its rows' ``steps`` likewise,
  and ``wall_s`` the longest rank's);
* ``hardware`` (``HardwareRun``, the hardware plan in simulation): the plan and its configuration are every
  shard's; outputs and states are identical where every shard's are; the first mismatch is the one the whole run
  meets first (outputs in the plan's order, then read states), its sample counted from the run's first; the bias
  bits are the most any shard needed. A chip's measured records (compile table, profile, energy) describe one run
  of one chip and are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from spikeport.run_report import HardwareRun, LavaRun, RunReport

# what a streaming target's record of one network holds alike in every shard: the network's, not its samples'
_LAVA_SAME = ("reset_interval", "processes", "host_only", "max_depth", "state", "extra")
_PART_SAME = ("first", "last", "boundary", "processes")
_HARDWARE_SAME = ("run_config", "embedded_io", "drive", "plan", "counts_from", "io_latency", "extra")


def merge_reports(parts: Sequence[RunReport]) -> RunReport:
    """One run report of the samples of ``parts`` (shards of one run, in order): ``RunReport.merge`` for what every
    executor reports, then a Lava run's and the hardware plan's records (see the module docstring)."""
    lava = [part.lava for part in parts]
    hardware = [part.hardware for part in parts]
    for key, records in (("lava", lava), ("hardware", hardware)):
        if any(r is not None for r in records) and not all(r is not None for r in records):
            raise ValueError(f"'{key}' is in some of the run reports only: not shards of the same run")
    merged = RunReport.merge([replace(part, lava=None, hardware=None) for part in parts])
    samples = [part.samples for part in parts]
    if lava[0] is not None:
        merged.lava = merge_lava([r for r in lava if r is not None], samples)
    if hardware[0] is not None:
        merged.hardware = merge_hardware([r for r in hardware if r is not None])
    return merged


def merge_lava(runs: Sequence[LavaRun], samples: Sequence[int]) -> LavaRun:
    """The ``LavaRun`` of one network streaming the samples of every shard (``samples[i]`` streamed by ``runs[i]``)."""
    first = runs[0]
    for key in _LAVA_SAME:
        _same([getattr(run, key) for run in runs], f"lava.{key}")
    R, total = first.reset_interval, sum(samples)
    if first.parts is None:
        if any(run.parts is not None for run in runs):
            raise ValueError("lava.parts is in some of the run reports only: not shards of the same run")
        drain = first.max_depth + 1
        again = sum(run.steps - (n * R + drain) for run, n in zip(runs, samples, strict=True))
        return replace(first, steps=total * R + drain + again, restarts=sum(run.restarts for run in runs))
    tables = [run.parts or [] for run in runs]
    _same([[{key: row[key] for key in _PART_SAME} for row in table] for table in tables], "lava.parts")
    rows = []
    for index, row in enumerate(first.parts):
        drains = [table[index]["steps"] - n * R for table, n in zip(tables, samples, strict=True)]
        _same(drains, f"lava.parts[{index}] drain steps")
        walls = [table[index]["wall_s"] for table in tables]
        rows.append({**row, "steps": total * R + drains[0], "wall_s": max(walls)})
    return replace(
        first,
        steps=sum(row["steps"] for row in rows),
        restarts=sum(run.restarts for run in runs),
        parts=rows,
    )


def merge_hardware(runs: Sequence[HardwareRun]) -> HardwareRun:
    """The ``HardwareRun`` of the hardware plan's simulation over the samples of every shard, in order."""
    first = runs[0]
    for key in _HARDWARE_SAME:
        _same([getattr(run, key) for run in runs], f"hardware.{key}")
    if any(run.compile_table is not None or run.chip_profile is not None for run in runs):
        raise ValueError("run reports measured on Loihi 2 describe one run of the chip: they cannot be merged")
    states = [run.states_identical for run in runs]
    bits = [run.bias_bits for run in runs if run.bias_bits is not None]
    return replace(
        first,
        outputs_identical=all(run.outputs_identical for run in runs),
        states_identical=None if all(s is None for s in states) else all(s is not False for s in states),
        first_mismatch=_first_mismatch(runs),
        bias_bits=max(bits) if bits else None,
        samples=sum(run.samples for run in runs),
    )


def _first_mismatch(runs: Sequence[HardwareRun]) -> dict[str, Any] | None:
    """The first mismatch of the whole run: the plan compares its outputs in order, each over every sample, then
    its read states; each shard reports its own first, its sample counted from the shard's first."""
    outputs, states = list(runs[0].plan.get("outputs", [])), list(runs[0].plan.get("states", []))

    def order(mismatch: dict[str, Any]) -> tuple[int, ...]:
        if "output" in mismatch:
            name = mismatch["output"]
            return (0, outputs.index(name) if name in outputs else len(outputs))
        layer, _, var = str(mismatch.get("state", "")).rpartition(".")
        return (
            1,
            states.index(layer) if layer in states else len(states),
            ("u", "v").index(var) if var in ("u", "v") else 2,
        )

    found: list[tuple[tuple[int, ...], int, dict[str, Any]]] = []
    offset = 0
    for index, run in enumerate(runs):
        if run.first_mismatch is not None:
            mismatch = dict(run.first_mismatch)
            if "sample" in mismatch:
                mismatch["sample"] += offset
            found.append(((*order(mismatch), index), index, mismatch))
        offset += run.samples
    return min(found, key=lambda item: item[0])[2] if found else None


def _same(values: Sequence[Any], what: str) -> None:
    """Every shard's ``what`` is the first's, or a ValueError naming it (shards of different runs)."""
    for i, value in enumerate(values[1:], 1):
        if value != values[0]:
            raise ValueError(f"run report {i} has another {what}: not a shard of the same run")
