"""The rules a run report is held to, on its records (``RunReport.validate`` applies them all, in this order): the
run's own fields (version, executor, samples, the optional figures), its layer rows (per-time-step counts, as many
steps as the run has, no more spikes than neurons, and where the op registry is given, only what each op counts),
its blocks (a comparison, a Lava run, a netx run, a hardware run), a measured energy within what a Loihi 2 run can
measure, and a ``hardware`` block against the run report around it. Each refusal is one ``ReportError`` naming
the file and the field.

A record read from a file has its JSON types checked here too: ``reading`` builds the records from whatever the
file holds, and these rules refuse a string where a count belongs as they refuse a negative count."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeGuard

from spikeport import measured
from spikeport.chip_limits import HALA_POINT_CORES, MAX_IO_LATENCY
from spikeport.errors import ReportError
from spikeport.run_report.records import (
    LAYER_COUNTER_NAMES,
    READABLE_VERSIONS,
    REQUIRED_COUNTER_NAMES,
    Comparison,
    HardwareRun,
    LavaRun,
    LayerReport,
    NetxRun,
)
from spikeport.value_kinds import ACTIVATION

# ir.limits' MAX_T and MAX_SAMPLES: run_report sits below the IR (tests/test_reliability checks they agree)
MAX_T, MAX_SAMPLES = 10_000, 10**8
MAX_INT = 2**63  # |integer| anywhere in a run report: counts of any run fit in 64 bits


def number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def integer(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def count(v: Any) -> bool:
    return integer(v) and v >= 0


def counts(values: Any) -> bool:
    """A list of counts: numbers >= 0 within 64 bits (no NaN, no infinity). A list of plain integers, what every
    executor writes, is checked at once (an 18,000-layer report holds 576,000 of them)."""
    if not isinstance(values, list):
        return False
    if set(map(type, values)) <= {int}:
        return not values or (min(values) >= 0 and max(values) < MAX_INT)
    return all(number(x) and 0 <= x < MAX_INT for x in values)


_REPR = reprlib.Repr()  # never the whole of a value: a few elements, two levels, 60 characters each
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxstring, _REPR.maxother = 2, 4, 6, 60, 60


def short(v: Any) -> str:
    text = _REPR.repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- the run's own fields ----------------------------------------------------------------------------------

# optional fields of a run report: (check, what is expected)
OPTIONAL: dict[str, tuple[Callable[[Any], bool], str]] = {
    "model": (lambda v: isinstance(v, dict), "an object (the model config)"),
    "T": (lambda v: integer(v) and 1 <= v <= MAX_T, f"an integer in 1..{MAX_T} (time steps per sample)"),
    "predictions": (lambda v: isinstance(v, list) and all(count(p) for p in v), "a list of class indices"),
    "accuracy": (lambda v: number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "wall_time_s": (lambda v: number(v) and 0 <= v < math.inf, "seconds (a number >= 0)"),
    "ranks": (lambda v: integer(v) and v >= 2, "an integer >= 2 (the torchrun processes that shared the samples)"),
    "latency_timesteps": (lambda v: count(v), "an integer >= 0"),
    "totals": (lambda v: isinstance(v, dict) and counts(list(v.values())), "counts (>= 0)"),
    "state_peak": (lambda v: isinstance(v, dict) and counts(list(v.values())), "numbers >= 0"),
    "peak_state_bytes": (lambda v: count(v), "an integer >= 0"),
    "artifact": (lambda v: isinstance(v, str), "a file path"),
    "artifact_digest": (
        lambda v: isinstance(v, str) and len(v) == 64 and set(v) <= set("0123456789abcdef"),
        "a SHA-256 hex digest (64 hex digits)",
    ),
    "energy_measured": (lambda v: isinstance(v, dict), "an object"),
}


def check_fields(run: Mapping[str, Any], where: str) -> None:
    """The run's own fields (``run``: a RunReport's, by name): its schema version, executor, samples and the optional
    figures, and one prediction per sample."""
    version = run["schema_version"]
    if version not in READABLE_VERSIONS:
        raise ReportError(where, "schema_version", f"expected one of {list(READABLE_VERSIONS)}, got {short(version)}")
    if not isinstance(run["executor"], str):
        raise ReportError(where, "executor", f"expected the executor's name, got {short(run['executor'])}")
    samples = run["samples"]
    if not integer(samples) or not 1 <= samples <= MAX_SAMPLES:
        raise ReportError(where, "samples", f"expected an integer in 1..{MAX_SAMPLES}, got {short(samples)}")
    for key, (ok, expected) in OPTIONAL.items():
        if run[key] is not None and not ok(run[key]):
            raise ReportError(where, key, f"expected {expected}, got {short(run[key])}")
    predictions = run["predictions"]
    if predictions and len(predictions) != samples:
        raise ReportError(where, "predictions", f"{len(predictions)} predictions for {samples} samples")


# ---- the layer rows ----------------------------------------------------------------------------------------


def check_layers(layers: Sequence[LayerReport], where: str, samples: int, T: int | None) -> None:
    """The layer rows: per-time-step lists of counts >= 0, as long as T (or all of one length without T), sizes
    that are counts, and no more spikes in a step than the layer has neurons in all samples (a neuron spikes at
    most once a step)."""
    if not isinstance(layers, list) or not layers:
        raise ReportError(where, "layers", "expected a non-empty list of layers")
    steps = T
    for i, row in enumerate(layers):
        if not (isinstance(row, LayerReport) and isinstance(row.name, str) and isinstance(row.op, str)):
            raise ReportError(where, f"layers[{i}]", "expected an object with 'name' and 'op'")
        for key in LAYER_COUNTER_NAMES:
            if key in row.counts or key in REQUIRED_COUNTER_NAMES:
                steps = _check_steps(row, i, key, where, steps, T)
        _check_sizes(row, i, where)
        most = samples * row.neurons
        # a neuron group (it reads synaptic activations) sends at most one spike per neuron and sample a step
        if row.input_kind == ACTIVATION and most and max(row.counts["spikes"]) > most:
            raise ReportError(
                where,
                f"layers[{i}].spikes",
                f"layer '{row.name}': {max(row.counts['spikes'])} spikes in one step, more than its {row.neurons} "
                f"neurons x {samples} samples",
            )


def _check_steps(row: LayerReport, i: int, key: str, where: str, steps: int | None, T: int | None) -> int:
    """Counter ``key`` of row ``i``: a list of counts of ``steps`` entries (T, or the first row's length); its
    length."""
    v = row.counts.get(key)
    if not counts(v):
        raise ReportError(
            where,
            f"layers[{i}].{key}",
            f"layer '{row.name}': expected a per-time-step list of counts (numbers >= 0), got {short(v)}",
        )
    assert isinstance(v, list)
    if steps is not None and len(v) != steps or not 1 <= len(v) <= MAX_T:
        raise ReportError(
            where,
            f"layers[{i}].{key}",
            f"layer '{row.name}': {len(v)} time steps, expected {steps or f'1..{MAX_T}'}"
            + (" (the report's T)" if T is not None else " (as the first layer)"),
        )
    return len(v)


def _check_sizes(row: LayerReport, i: int, where: str) -> None:
    """A row's sizes: bytes and neurons are counts, its fan-out a number >= 0, its input kind a name."""
    for key in ("state_bytes", "weight_bytes", "neurons"):
        if not count(getattr(row, key)):
            raise ReportError(
                where,
                f"layers[{i}].{key}",
                f"layer '{row.name}': expected an integer >= 0, got {short(getattr(row, key))}",
            )
    if not (number(row.fan_out) and 0 <= row.fan_out < math.inf):
        raise ReportError(
            where, f"layers[{i}].fan_out", f"layer '{row.name}': expected a number >= 0, got {short(row.fan_out)}"
        )
    if not isinstance(row.input_kind, str):
        raise ReportError(where, f"layers[{i}].input_kind", f"layer '{row.name}': expected a value kind's name")


def check_ops(layers: Sequence[LayerReport], where: str, ops: Mapping[str, Collection[str]]) -> None:
    """Every layer names an op of the registry (``ops``: op -> the counters its record counts, given by the caller:
    run_report sits below the IR), and counts only what that op counts: a layer of an op that does not exist
    ("softmax") was accepted and moved the state-memory figures; a row with counts its op cannot make (spikes on a
    dense layer) is no run of spikeport's."""
    for i, layer in enumerate(layers):
        if layer.op not in ops:
            known = ", ".join(sorted(ops))
            raise ReportError(where, f"layers[{i}].op", f"layer '{layer.name}': {layer.op!r} is no op ({known})")
        allowed = ops[layer.op]
        extra = [key for key, values in layer.counts.items() if key not in allowed and any(values)]
        if extra:
            raise ReportError(
                where,
                f"layers[{i}].{extra[0]}",
                f"layer '{layer.name}': {'an' if layer.op[0] in 'aeiou' else 'a'} {layer.op} layer counts "
                f"{', '.join(sorted(allowed)) or 'nothing'}, not {extra[0]}",
            )


# ---- the blocks --------------------------------------------------------------------------------------------


def check_compare(compare: Comparison, where: str) -> None:
    """A comparison with the reference: its verdict, per-layer rows, the agreement of predictions."""
    if not isinstance(compare.identical, bool):
        raise ReportError(where, "compare", f"expected an object with a boolean 'identical', got {short(compare)}")
    if not isinstance(compare.layers, list) or not all(
        isinstance(r.layer, str)
        and isinstance(r.per_step_equal, bool)
        and count(r.spikes)
        and count(r.reference_spikes)
        for r in compare.layers
    ):
        raise ReportError(
            where, "compare.layers", "expected a list of {layer, spikes, reference_spikes, per_step_equal}"
        )
    agreement = compare.prediction_agreement
    if not (number(agreement) and 0 <= agreement <= 1):
        raise ReportError(where, "compare.prediction_agreement", f"expected a number in [0, 1], got {short(agreement)}")
    if not isinstance(compare.first_divergence, (dict, type(None))):
        raise ReportError(where, "compare.first_divergence", "expected an object or null")


def check_lava(lava: LavaRun, where: str) -> None:
    """What a Lava run did: its steps and depths, processes, host-only nodes and held state."""
    for key in ("reset_interval", "max_depth"):
        value = getattr(lava, key)
        if not (count(value) and value <= 2 * MAX_T):
            raise ReportError(where, f"lava.{key}", f"expected time steps in 0..{2 * MAX_T}, got {short(value)}")
    for key in ("steps", "processes", "restarts"):
        if not count(getattr(lava, key)):
            raise ReportError(where, f"lava.{key}", f"expected an integer >= 0, got {short(getattr(lava, key))}")
    if not isinstance(lava.host_only, list) or not all(isinstance(n, str) for n in lava.host_only):
        raise ReportError(where, "lava.host_only", "expected a list of node names")
    if not isinstance(lava.state, list):
        raise ReportError(where, "lava.state", "expected a list (per process: its state Vars)")


def check_netx(netx: NetxRun, where: str) -> None:
    """How a netx file ran: its file, input drive, how predictions were read, the input's shape."""
    for key in ("file", "input_drive", "prediction"):
        if not isinstance(getattr(netx, key), str):
            raise ReportError(where, f"netx.{key}", f"expected a string, got {short(getattr(netx, key))}")
    shape = netx.input_shape
    if not isinstance(shape, list) or not all(integer(s) and s > 0 for s in shape):
        raise ReportError(where, "netx.input_shape", f"expected a list of positive sizes, got {short(shape)}")


def check_hardware(hw: HardwareRun, where: str) -> None:
    """The hardware plan's run, its own fields: how it ran, the plan, its verdicts, what the compiler printed."""
    for key in ("run_config", "embedded_io", "drive", "counts_from"):
        if not isinstance(getattr(hw, key), str):
            raise ReportError(where, f"hardware.{key}", f"expected a string, got {short(getattr(hw, key))}")
    if not isinstance(hw.plan, dict):
        raise ReportError(where, "hardware.plan", "expected an object (the hardware plan)")
    for key in ("outputs_identical", "states_identical"):
        value = getattr(hw, key)
        if value is not None and not isinstance(value, bool):
            raise ReportError(where, f"hardware.{key}", f"expected true, false or null, got {short(value)}")
    for key in ("io_latency", "samples"):
        value = getattr(hw, key)
        if not (count(value) and value <= MAX_SAMPLES):
            raise ReportError(where, f"hardware.{key}", f"expected an integer >= 0, got {short(value)}")
    _check_compile_table(hw.compile_table, where)
    if hw.chip_profile is not None and not isinstance(hw.chip_profile, dict):
        raise ReportError(where, "hardware.chip_profile", f"expected an object, got {short(hw.chip_profile)}")


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
    if not (isinstance(cores, int) and count(cores) and 1 <= cores <= HALA_POINT_CORES):
        raise ReportError(
            where, "hardware.compile_table.cores", f"expected 1..{HALA_POINT_CORES:,}, got {short(cores)}"
        )
    text = table.get("text")
    if not (isinstance(text, list) and all(isinstance(line, str) for line in text)):
        raise ReportError(where, "hardware.compile_table.text", "expected the compiler's lines (a list of strings)")


# ---- a measurement, and the hardware run against its run report -------------------------------------------


def check_energy(data: dict[str, Any], where: str) -> None:
    """An executor's energy measurement: joules, watts and seconds as numbers >= 0, the static part no more than the
    total."""
    units = {"total_J": "joules", "dynamic_J": "joules", "static_J": "joules", "total_power_W": "watts",
             "static_power_W": "watts", "time_per_step_s": "seconds"}  # fmt: skip
    for key, unit in units.items():
        if key in data and not (number(data[key]) and data[key] >= 0):
            raise ReportError(where, f"energy_measured.{key}", f"expected {unit} >= 0, got {short(data[key])}")
    if not isinstance(data.get("per_inference", True), bool):
        raise ReportError(where, "energy_measured.per_inference", "expected true or false")
    for part, whole in (("static_J", "total_J"), ("dynamic_J", "total_J"), ("static_power_W", "total_power_W")):
        if part in data and whole in data and data[part] > data[whole] * (1 + 1e-9):
            raise ReportError(
                where, f"energy_measured.{part}", f"{data[part]:.4g} is more than {whole} {data[whole]:.4g}"
            )


def check_measured(m: dict[str, Any], steps: Any, samples: int, where: str) -> None:
    """A measurement's figures within what a Loihi 2 run can measure (``spikeport.measured``: positive, chips a
    whole number, no chip drawing more than a Hala Point system): 1e300 J and a 0 s time step were accepted.
    ``steps``: the time steps an inference holds the chip (a streamed run's reset interval, else T)."""
    if m.get("available") is False:  # the run says it measured nothing: no figures to hold
        return
    found = measured.problem(m, steps if integer(steps) and steps >= 1 else None, samples)
    if found is not None:
        raise ReportError(where, f"energy_measured.{found[0]}", found[1])


# the hardware plan's two ways to run (runtime/loihi2/plan_run.py): executor -> (run_config's class, embedded IO)
HARDWARE_RUNS = {
    "loihi2": ("Loihi2HwCfg", "lava.proc.embedded_io"),
    "loihi2-sim": ("Loihi2SimCfg", "simulated embedded IO"),
}


def check_hardware_run(
    hw: HardwareRun, executor: str, samples: int, T: int | None, energy: dict[str, Any] | None, where: str
) -> None:
    """A ``hardware`` block that agrees with itself and with the run report around it (its ``executor``,
    ``samples``, ``T`` and measured ``energy``): a result file brought back from a bundle run is read as it is, and a
    forged or damaged one is refused naming the field."""
    if executor not in HARDWARE_RUNS:
        raise ReportError(where, "hardware", f"executor {short(executor)} does not run the hardware plan")
    config, io = HARDWARE_RUNS[executor]
    if not hw.run_config.startswith(config) or hw.embedded_io != io:
        raise ReportError(
            where, "hardware.run_config", f"{hw.run_config!r} with {hw.embedded_io!r} is not how {executor} runs"
        )
    if hw.drive not in ("bias", "adapter"):
        raise ReportError(where, "hardware.drive", f"expected 'bias' or 'adapter', got {short(hw.drive)}")
    if hw.samples not in (0, samples):
        raise ReportError(where, "hardware.samples", f"{hw.samples}, the run report's samples are {samples}")
    latency = hw.io_latency
    if latency > (MAX_IO_LATENCY if executor == "loihi2" else 0):
        raise ReportError(where, "hardware.io_latency", f"{latency} steps: the {io} adds 0..{MAX_IO_LATENCY}"
                          if executor == "loihi2" else f"{latency} steps: the simulated adapters add none")  # fmt: skip
    bits = hw.bias_bits
    if bits is not None and not (integer(bits) and 1 <= bits <= 64 and hw.drive == "bias"):
        raise ReportError(where, "hardware.bias_bits", f"{short(bits)}: expected null, or 1..64 with the bias drive")
    _check_mismatch(hw, samples, T, where)
    if (energy or {}).get("available") and executor != "loihi2":
        raise ReportError(where, "energy_measured", f"a measurement in a run of {executor}: a simulation measures none")


def _check_mismatch(hw: HardwareRun, samples: int, T: int | None, where: str) -> None:
    """A first mismatch exactly where a verdict says the run differed, within the run's samples and steps."""
    agreed = hw.outputs_identical in (True, None) and hw.states_identical in (True, None)
    mismatch = hw.first_mismatch
    if agreed != (mismatch is None) or not isinstance(mismatch, (dict, type(None))):
        raise ReportError(
            where,
            "hardware.first_mismatch",
            f"{short(mismatch)} beside outputs_identical {hw.outputs_identical} and states_identical "
            f"{hw.states_identical}",
        )
    for key, most in (("sample", samples), ("time_step", T)):
        value = (mismatch or {}).get(key)
        if value is not None and not (count(value) and (most is None or value < most)):
            bound = "an integer >= 0" if most is None else f"0..{most - 1}"
            raise ReportError(where, f"hardware.first_mismatch.{key}", f"{short(value)}: expected {bound}")
