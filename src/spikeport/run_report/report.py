"""``RunReport``: the run report of one executor on one artifact (schema ``spikeport.run``, version 1).

Every Target (``spikeport.runtime.targets``) returns one; ``spikeport run`` writes it as JSON, ``spikeport
report`` and the energy estimates read it. It is typed end to end: a row per layer and a record per block
(``records``). The JSON is the one spikeport has always written, key for key and in the same order, so files
written before these classes existed read back and write out unchanged. Reading validates every field a reader
relies on and refuses a bad file with one ``ReportError`` naming the file and the field (``reading``).

Standard library only: the deploy side (numpy + h5py + lava, no torch) reads and writes run reports too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spikeport import bundle_result
from spikeport.atomic import write_text
from spikeport.brief import brief_repr
from spikeport.errors import ReportError
from spikeport.run_report.checks import (
    check_compare,
    check_energy,
    check_fields,
    check_hardware,
    check_hardware_run,
    check_lava,
    check_layers,
    check_measured,
    check_netx,
    check_ops,
)
from spikeport.run_report.merge import merge_shards
from spikeport.run_report.reading import MAX_BYTES, check_tree, parse, read_fields
from spikeport.run_report.records import (
    ORDER,
    SCHEMA,
    SCHEMA_VERSION,
    Comparison,
    HardwareRun,
    LavaRun,
    LayerReport,
    NetxRun,
    tree_copy,
)

# the op registry as the validator reads it: op -> the counters its kernel record counts
Ops = Mapping[str, Collection[str]]


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
        in one process, wall time aside (``merge.merge_shards`` says what is summed, joined and refused)."""
        return merge_shards(parts)

    # ---- dict / JSON --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (a copy), keys in the order spikeport has always written them; None fields left out."""
        out: dict[str, Any] = {"schema": SCHEMA, "schema_version": self.schema_version}
        for key in ORDER:
            value = getattr(self, key)
            if value is None:
                continue
            if key == "layers":
                value = [row.to_dict() for row in value]
            elif hasattr(value, "to_dict"):
                value = value.to_dict()
            out[key] = tree_copy(value)
        out.update(tree_copy(self.extra))
        return out

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The JSON text; also written atomically to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            write_text(path, text)
        return text

    @classmethod
    def from_dict(cls, data: Any, where: str = "run report", ops: Ops | None = None) -> RunReport:
        """Validate and type a run report object (copied); ``where`` (a file name) opens every error message, ``ops``
        as ``validate`` takes it."""
        check_tree(data, str(where))  # before the copy, which recurses
        return cls._read(tree_copy(data), str(where), ops)

    @classmethod
    def from_json(cls, source: str | os.PathLike[str], ops: Ops | None = None) -> RunReport:
        """A run report from a file path, or from JSON text (a string starting with ``{``); ``ops`` as ``validate``
        takes it."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            data = parse(source, "run report")
            check_tree(data, "run report")
            return cls._read(data, "run report", ops)
        path = Path(source)
        if not path.is_file():
            raise ReportError(path, None, "run report not found (write one with `spikeport run ... --json`)")
        try:
            if path.stat().st_size > MAX_BYTES:
                raise ReportError(path, None, f"{path.stat().st_size} bytes: not a run report (at most {MAX_BYTES})")
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as err:
            raise ReportError(path, None, f"not a readable JSON file ({str(err)[:200]})") from None
        data = parse(text, str(path))
        check_tree(data, str(path))
        report = cls._read(data, str(path), ops)  # the object parsed here is read as it is, not copied
        if report.hardware is not None:
            _check_bundle_result(report, path)
        return report

    @classmethod
    def _read(cls, data: Any, where: str, ops: Ops | None) -> RunReport:
        report = cls(**read_fields(data, where))
        report.validate(where, ops)
        return report

    def validate(self, where: str = "run report", ops: Ops | None = None) -> None:
        """The one validator of a run report, read from a file or made in memory: every field a reader relies on
        held to its rules (``checks``), or a ReportError naming ``where`` and the field. ``ops`` (op -> the counters
        its kernel record counts: the op registry, which sits above run reports) also holds each layer to its op."""
        check_fields(vars(self), where)
        check_layers(self.layers, where, self.samples, self.T)
        if ops is not None:
            check_ops(self.layers, where, ops)
        if self.lava is not None:
            check_lava(self.lava, where)
        if self.netx is not None:
            check_netx(self.netx, where)
        if self.hardware is not None:
            check_hardware(self.hardware, where)
        if self.compare is not None:
            check_compare(self.compare, where)
        if self.energy_measured:
            check_energy(self.energy_measured, where)
            steps = (self.lava.reset_interval if self.lava is not None else None) or self.T
            check_measured(self.energy_measured, steps, self.samples, where)
        if self.hardware is not None:
            check_hardware_run(self.hardware, self.executor, self.samples, self.T, self.energy_measured, where)


def as_dict(run: RunReport | dict[str, Any]) -> dict[str, Any]:
    """The JSON object of a run report given either way (readers that work on dicts accept both)."""
    return run.to_dict() if isinstance(run, RunReport) else run


def _check_bundle_result(report: RunReport, path: Path) -> None:
    """A bundle's result.json read in its bundle folder, against the bundle (``bundle_result``)."""
    hw = report.hardware
    assert hw is not None
    claimed = bundle_result.Claimed(
        report.artifact_digest, report.samples, report.T, hw.drive, report.predictions, report.accuracy,
        hw.outputs_identical, hw.first_mismatch,
    )  # fmt: skip
    bundle_result.check(claimed, path)
