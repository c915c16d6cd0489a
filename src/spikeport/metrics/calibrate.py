"""Fit a neuromorphic profile's energy constants to measured runs (``spikeport calibrate``).

A measured Loihi 2 run report (a bundle's ``result.json`` on the chip, or a published measurement attached to the
counts of the same network: ``scripts/pilotnet_energy.py``) carries Intel's split: static and dynamic energy per
inference and the time per step. The estimate has the same split (``metrics.energy``: dynamic = op counts x the
profile's per-op energies; static = static power x chips x steps x time per step). Calibration fits

- one scale ``s`` on every per-op energy, by least squares through the origin over the runs
  (``s = sum(m_i e_i) / sum(e_i^2)``, m the measured dynamic, e the estimated dynamic): the relative costs stay the
  profile's (Loihi 1's, Davies et al. 2018), their level becomes the measurement's;
- the static power per chip: the mean of the runs' measured static power / chips;
- the time-step anchor: the mean measured time per step (a network-specific figure, as the profile says).

and writes a profile YAML with its provenance (``calibration``: the runs, their figures before and after, the
date and the spikeport version); the fitted entries say ``confidence: calibrated``. With one run the fit
reproduces that run by construction: it is a calibration, and only a second measurement tests it.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from spikeport import measured
from spikeport._version import __version__
from spikeport.atomic import write_text
from spikeport.brief import brief_repr
from spikeport.errors import ConfigError
from spikeport.hw_profiles import HwProfile, Quantity, parse_profile
from spikeport.metrics.energy import estimate, steps_per_sample
from spikeport.run_report import RunReport


@dataclass(frozen=True)
class Point:
    """One measured run against the profile's estimate of its counts (joules per inference)."""

    source: str
    label: str
    measured_total: float
    measured_dynamic: float
    measured_static: float
    estimated_dynamic: float
    estimated_static: float | None
    chips: int
    steps: int  # time steps an inference holds the chips
    time_per_step_s: float

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items()}


@dataclass(frozen=True)
class Calibration:
    profile: HwProfile
    scale: float  # on every per-op energy
    points: list[Point]

    __repr__ = brief_repr  # print(calibration): the scale and how many points, not the whole profile


def points(runs: Sequence[tuple[str, RunReport]], base: HwProfile) -> list[Point]:
    """Each run's measured split beside the base profile's estimate of its counts; a run without Intel's split
    (static_J, dynamic_J, time_per_step_s in ``energy_measured``) is refused naming it."""
    out = []
    for source, run in runs:
        m = run.energy_measured or {}
        needed = ("total_J", "static_J", "dynamic_J", "time_per_step_s")
        missing = [k for k in needed if not isinstance(m.get(k), (int, float))]
        if missing:
            raise ConfigError(
                f"{source}: energy_measured lacks {', '.join(missing)}: calibration needs a measured split (static and "
                "dynamic energy per inference, time per step), as Loihi 2's profiler gives it"
            )
        check_measured_run(source, run)
        samples = 1 if m.get("per_inference", True) else run.samples
        chips = int(m.get("chips", 1))
        steps = steps_per_sample(run)
        if steps is None:
            raise ConfigError(f"{source}: no time steps per sample (T) to spread the static energy over")
        est = estimate(run, base, chips=chips)
        out.append(
            Point(
                source,
                str(m.get("label", "measured")),
                float(m["total_J"]) / samples,
                float(m["dynamic_J"]) / samples,
                float(m["static_J"]) / samples,
                est.energy_J,
                None if est.static is None else est.static.energy_J,
                chips,
                steps,
                float(m["time_per_step_s"]),
            )
        )
    return out


def calibrate(runs: Sequence[tuple[str, RunReport]], base: HwProfile, name: str | None = None) -> Calibration:
    """The fitted profile (see the module docstring) named ``name`` (default ``<base>-calibrated``)."""
    if not runs:
        raise ConfigError("calibration needs at least one measured run report")
    if base.kind != "neuromorphic":
        raise ConfigError(f"profile '{base.name}' is {base.kind}: calibration fits a neuromorphic profile")
    pts = points(runs, base)
    denominator = sum(p.estimated_dynamic**2 for p in pts)
    if denominator == 0:
        raise ConfigError("the runs' op counts price to 0 J on this profile: nothing to scale")
    scale = sum(p.measured_dynamic * p.estimated_dynamic for p in pts) / denominator
    check_fit(pts, base, scale)
    fitted = ", ".join(p.source for p in pts)
    sections = {section: dict(entries) for section, entries in base.sections.items()}
    for key, q in sections.get("energy", {}).items():
        if q.dimension == "energy":
            sections["energy"][key] = _fitted(q, q.value * scale, f"{q.source}; x {scale:.4g} calibrated on {fitted}")
    static = [p.measured_static / (p.time_per_step_s * p.steps * p.chips) for p in pts]
    if static and "static" in sections.get("power", {}):
        q = sections["power"]["static"]
        sections["power"]["static"] = _fitted(q, _in_unit(q, sum(static) / len(static)), f"measured on {fitted}")
    if "timestep" in sections.get("timing", {}):
        q = sections["timing"]["timestep"]
        step = sum(p.time_per_step_s for p in pts) / len(pts)
        sections["timing"]["timestep"] = _fitted(q, _in_unit(q, step), f"measured on {fitted} (network-specific)")
    provenance = {
        "fitted": datetime.date.today().isoformat(),
        "spikeport": __version__,
        "base": base.name,
        "method": "per-op energies x one least-squares scale (dynamic); static power and time step: means",
        "scale": scale,
        "runs": [p.to_dict() for p in pts],
    }
    profile = replace(
        base,
        name=name or f"{base.name}-calibrated",
        description=f"{base.description} Calibrated on {len(pts)} measured run(s): {fitted}.",
        sections=sections,
        calibration=provenance,
    )
    return Calibration(profile, scale, pts)


# ---- what a fit may be made of and may give (measured inputs: spikeport.measured's bounds) --------------------

# A per-op energy a fit may give: 0.1 fJ (300x below 45 nm CMOS's cheapest op, an 8-bit add at 0.03 pJ) to 100 nJ
# (150x a DRAM access, 640 pJ; Horowitz 2014). Outside it the fit explains a measurement by arithmetic no chip does.
OP_ENERGY_J = (1e-16, 1e-7)


def check_measured_run(source: str, run: RunReport) -> None:
    """A run a fit may use: its measured figures within what a Loihi 2 run can measure (``spikeport.measured``:
    chips a whole number, energies and the time step positive, no chip above a Hala Point system), and a dynamic
    energy to fit the per-op energies to (all-zero or zero dynamic energy fitted 0.0 pJ to every op; 9e299 J fitted
    7.9e+304 pJ; ``chips: 0`` was a ZeroDivisionError). A ConfigError naming the run and the field."""
    m = run.energy_measured or {}
    found = measured.problem(m, steps_per_sample(run), run.samples)
    if found is not None:
        raise ConfigError(f"{source}: field 'energy_measured.{found[0]}': {found[1]}")
    if m["dynamic_J"] <= 0:
        raise ConfigError(
            f"{source}: field 'energy_measured.dynamic_J': {m['dynamic_J']} J: a calibration scales the per-op "
            "energies to the measured dynamic energy, and there is none (a measurement below the noise floor)"
        )


def check_fit(pts: Sequence[Point], base: HwProfile, scale: float) -> None:
    """Every per-op energy the fit gives within OP_ENERGY_J, else a ConfigError naming the point that drives it out
    (the run whose measured / estimated dynamic energy is the extreme one), and no point whose counts price to 0 J
    (no per-op energy can explain its measurement)."""
    for p in pts:
        if p.estimated_dynamic <= 0:
            raise ConfigError(
                f"{p.source}: its op counts price to 0 J on profile '{base.name}': no per-op energy explains its "
                f"measured dynamic {p.measured_dynamic:.4g} J"
            )
    low, high = OP_ENERGY_J
    for key, q in base.sections.get("energy", {}).items():
        fitted = q.si * scale
        if q.dimension != "energy" or q.si <= 0 or low <= fitted <= high:
            continue
        ratio = min if fitted < low else max
        culprit = ratio(pts, key=lambda p: p.measured_dynamic / p.estimated_dynamic)
        raise ConfigError(
            f"{culprit.source}: the fit gives energy.{key} = {fitted * 1e12:.4g} pJ an op, outside "
            f"{low * 1e12:g}..{high * 1e12:g} pJ: this run's measured dynamic energy, "
            f"{culprit.measured_dynamic:.4g} J, is {culprit.measured_dynamic / culprit.estimated_dynamic:.4g}x the "
            f"estimate of its counts ({culprit.estimated_dynamic:.4g} J)"
        )


def _fitted(q: Quantity, value: float, source: str) -> Quantity:
    return replace(q, value=float(f"{value:.6g}"), source=source[:1900], confidence="calibrated")


def _in_unit(q: Quantity, si: float) -> float:
    return si / (q.si / q.value) if q.value else si


def write_profile(cal: Calibration, path: str | os.PathLike[str]) -> HwProfile:
    """The calibrated profile as YAML at ``path`` (atomically), read back through the profile loader's checks."""
    text = yaml.safe_dump(cal.profile.to_dict(), sort_keys=False, allow_unicode=True, width=120)
    profile = parse_profile(yaml.safe_load(text), str(path))
    write_text(
        path, "# written by `spikeport calibrate`: see the 'calibration' section for what it was fit on\n" + text
    )
    return profile
