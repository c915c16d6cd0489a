"""The rules a run report is held to beyond its JSON types: the budgets of a run (time steps, samples), the
optional fields' values, what Lava's compiler printed, a measured energy, and a ``hardware`` block against the run
report around it. Each refusal is one ``ReportError`` naming the file and the field."""

from __future__ import annotations

import reprlib
from collections.abc import Callable
from typing import Any, TypeGuard

from spikeport import measured
from spikeport.chip_limits import HALA_POINT_CORES, MAX_IO_LATENCY
from spikeport.errors import ReportError

# ir.limits' MAX_T and MAX_SAMPLES: run_report sits below the IR (tests/test_reliability checks they agree)
MAX_T, MAX_SAMPLES = 10_000, 10**8


def number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def integer(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def count(v: Any) -> bool:
    return integer(v) and v >= 0


_REPR = reprlib.Repr()  # never the whole of a value: a few elements, two levels, 60 characters each
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxstring, _REPR.maxother = 2, 4, 6, 60, 60


def short(v: Any) -> str:
    text = _REPR.repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


# optional fields of a run report: (check, what is expected)
OPTIONAL: dict[str, tuple[Callable[[Any], bool], str]] = {
    "model": (lambda v: isinstance(v, dict), "an object (the model config)"),
    "T": (lambda v: integer(v) and 1 <= v <= MAX_T, f"an integer in 1..{MAX_T} (time steps per sample)"),
    "predictions": (lambda v: isinstance(v, list) and all(count(p) for p in v), "a list of class indices"),
    "accuracy": (lambda v: number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "wall_time_s": (lambda v: number(v) and v >= 0, "seconds (a number >= 0)"),
    "ranks": (lambda v: integer(v) and v >= 2, "an integer >= 2 (the torchrun processes that shared the samples)"),
    "latency_timesteps": (lambda v: count(v), "an integer >= 0"),
    "totals": (lambda v: isinstance(v, dict) and all(number(x) and x >= 0 for x in v.values()), "counts (>= 0)"),
    "state_peak": (lambda v: isinstance(v, dict) and all(number(x) and x >= 0 for x in v.values()), "numbers >= 0"),
    "peak_state_bytes": (lambda v: count(v), "an integer >= 0"),
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


def check_compile_table(table: Any, where: str) -> None:
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


def check_measured(data: dict[str, Any], where: str) -> None:
    """A measurement's figures within what a Loihi 2 run can measure (``spikeport.measured``: positive, chips a
    whole number, no chip drawing more than a Hala Point system): 1e300 J and a 0 s time step were accepted."""
    m = data["energy_measured"]
    if m.get("available") is False:  # the run says it measured nothing: no figures to hold
        return
    lava = data.get("lava")
    steps = (lava.get("reset_interval") if isinstance(lava, dict) else None) or data.get("T")
    found = measured.problem(m, steps if integer(steps) and steps >= 1 else None, data["samples"])
    if found is not None:
        raise ReportError(where, f"energy_measured.{found[0]}", found[1])


# the hardware plan's two ways to run (runtime/loihi2/plan_run.py): executor -> (run_config's class, embedded IO)
HARDWARE_RUNS = {
    "loihi2": ("Loihi2HwCfg", "lava.proc.embedded_io"),
    "loihi2-sim": ("Loihi2SimCfg", "simulated embedded IO"),
}


def check_hardware_run(data: dict[str, Any], where: str) -> None:
    """A ``hardware`` block that agrees with itself and with the run report around it (a result file brought back
    from a bundle run is read as it is: a forged or damaged one is refused naming the field)."""
    hw, samples, T = data["hardware"], data["samples"], data.get("T")
    executor = data["executor"]
    if executor not in HARDWARE_RUNS:
        raise ReportError(where, "hardware", f"executor {short(executor)} does not run the hardware plan")
    config, io = HARDWARE_RUNS[executor]
    if not hw["run_config"].startswith(config) or hw["embedded_io"] != io:
        raise ReportError(
            where, "hardware.run_config", f"{hw['run_config']!r} with {hw['embedded_io']!r} is not how {executor} runs"
        )
    if hw.get("drive") not in ("bias", "adapter"):
        raise ReportError(where, "hardware.drive", f"expected 'bias' or 'adapter', got {short(hw.get('drive'))}")
    if hw.get("samples", samples) not in (0, samples):
        raise ReportError(where, "hardware.samples", f"{hw['samples']}, the run report's samples are {samples}")
    latency = hw.get("io_latency", 0)
    if latency > (MAX_IO_LATENCY if executor == "loihi2" else 0):
        raise ReportError(where, "hardware.io_latency", f"{latency} steps: the {io} adds 0..{MAX_IO_LATENCY}"
                          if executor == "loihi2" else f"{latency} steps: the simulated adapters add none")  # fmt: skip
    bits = hw.get("bias_bits")
    if bits is not None and not (integer(bits) and 1 <= bits <= 64 and hw["drive"] == "bias"):
        raise ReportError(where, "hardware.bias_bits", f"{short(bits)}: expected null, or 1..64 with the bias drive")
    agreed = hw.get("outputs_identical") in (True, None) and hw.get("states_identical") in (True, None)
    mismatch = hw.get("first_mismatch")
    if agreed != (mismatch is None) or not isinstance(mismatch, (dict, type(None))):
        raise ReportError(
            where,
            "hardware.first_mismatch",
            f"{short(mismatch)} beside outputs_identical {hw.get('outputs_identical')} and states_identical "
            f"{hw.get('states_identical')}",
        )
    for key, most in (("sample", samples), ("time_step", T)):
        value = (mismatch or {}).get(key)
        if value is not None and not (count(value) and (most is None or value < most)):
            bound = "an integer >= 0" if most is None else f"0..{most - 1}"
            raise ReportError(where, f"hardware.first_mismatch.{key}", f"{short(value)}: expected {bound}")
    measured = data.get("energy_measured") or {}
    if measured.get("available") and executor != "loihi2":
        raise ReportError(where, "energy_measured", f"a measurement in a run of {executor}: a simulation measures none")
