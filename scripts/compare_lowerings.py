"""Lowerings of LRF-Dyn's dendritic token mixing on Loihi 2, side by side, per preset (an estimate).

    python scripts/compare_lowerings.py                        # digits-tiny, spikformer-4-384, spikformer-8-512
    python scripts/compare_lowerings.py spikformer-8-512 --rate 0.2 --json

conv-per-head is what runtime/lava/lowerings/ builds (one kernel per head on the Conv's channel axis,
groups = H); conv-kernel is its first form (groups = C, one kernel copy per channel), the column the ratios are
against; toeplitz-sparse and token-serial are the alternatives docs/lowering.md argues against. The counts
are analytic (spikeport.metrics.lowering_costs); energies price them with the profile's per-op costs (loihi2:
Loihi 1 figures carried over, no Loihi 2 per-op energy is published).
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Callable

from spikeport.hw_profiles import load_profile
from spikeport.metrics.lowering_costs import LOWERING_NAMES, LayerShape, LoweringCost, compare, layer_shape, report

PRESETS = ("digits-tiny", "spikformer-4-384", "spikformer-8-512")
WIDTH = 117  # the table's


def preset_shape(name: str) -> LayerShape:
    from spikeport.train.presets import preset_config  # torch: imported only here

    return layer_shape(name, preset_config(name, attention="lrf_dyn"))


def _cell(value: float, base: float, fmt: str, first: bool) -> str:
    text = format(value, fmt)
    if first:  # the conv-kernel column: no ratio
        return f"{text:>14}"
    ratio = value / base if base else float("inf")
    return f"{text:>14} {f'({ratio:.3g}x)':>9}"


def table(shape: LayerShape, result: dict[str, LoweringCost], rate: float, profile: str) -> str:
    base = result["conv-kernel"]
    lines = [
        f"{shape.name}: N={shape.tokens} tokens, C={shape.channels}, H={shape.heads}, k={shape.dendrites}, "
        f"taps={shape.taps}; {shape.depth} attention layers, T={shape.T}",
        f"q/k/v spikes at {rate:.0%}, coincidences (k AND v) at {rate * rate:.2%}; profile {profile} (estimate)",
        "",
        f"{'per attention layer':<28}" + f"{LOWERING_NAMES[0]:>14}" + "".join(f"{n:>25}" for n in LOWERING_NAMES[1:]),
    ]
    Row = tuple[str, Callable[[LoweringCost], float], str]
    rows: list[Row] = [
        ("neurons", lambda c: c.neurons, ",d"),
        ("neuron state (kB)", lambda c: c.neuron_state_bytes / 1e3, ",.1f"),
        ("stored weights", lambda c: c.stored_weights, ",d"),
        ("  of which token mixing", lambda c: c.mixing_weights, ",d"),
        ("weight memory (kB)", lambda c: c.weight_bytes / 1e3, ",.1f"),
        ("cores (incl. attention LIF)", lambda c: c.cores, ",d"),
        ("latency (steps)", lambda c: c.latency_steps, ",d"),
        ("longest delay (steps)", lambda c: c.max_delay, ",d"),
        ("binary synops / step", lambda c: c.synops, ",.0f"),
        ("graded synops / step", lambda c: c.graded_synops, ",.0f"),
        ("neuron updates / step", lambda c: c.neuron_updates, ",.0f"),
        ("energy / step (nJ)", lambda c: c.energy_J * 1e9, ",.1f"),
    ]
    per_sample: list[Row] = [
        ("cores", lambda c: c.per_sample(shape)["cores"], ",d"),
        ("energy / sample (uJ)", lambda c: c.per_sample(shape)["energy_J"] * 1e6, ",.2f"),
    ]
    for title, block in (("", rows), (f"all {shape.depth} layers, {shape.T} steps", per_sample)):
        if title:
            lines.append(title)
        for label, get, fmt in block:
            b = get(base)
            lines.append(
                f"{label:<28}" + "".join(_cell(get(result[n]), b, fmt, n == LOWERING_NAMES[0]) for n in LOWERING_NAMES)
            )
    lines.append("cores per neuron group (the limit that sets them):")
    for name in LOWERING_NAMES:
        groups = ", ".join(f"{g.name} {g.cores} ({g.cores_by.replace('_per_core', '')})" for g in result[name].groups)
        lines.append(_wrap(f"{name}: {groups}"))
    lines.append("notes:")
    for name in LOWERING_NAMES:
        cost = result[name]
        if not cost.delays_fit:
            lines.append(_wrap(f"{name}: ! delays of {cost.max_delay} steps exceed the profile's delay bits"))
        lines += [_wrap(f"{name}: {note}") for note in cost.notes]
    return "\n".join(lines)


def _wrap(text: str) -> str:
    return textwrap.fill(text, WIDTH, initial_indent="  ", subsequent_indent="      ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=list(PRESETS), help=f"model presets (default: {' '.join(PRESETS)})")
    ap.add_argument("--rate", type=float, default=0.1, help="firing rate of q, k and v (default 0.1)")
    ap.add_argument("--profile", default="loihi2", help="hardware profile (default loihi2)")
    ap.add_argument("--json", action="store_true", help="machine-readable output (schema spikeport.lowerings)")
    args = ap.parse_args()
    prof = load_profile(args.profile)
    shapes = [preset_shape(name) for name in args.presets]
    if args.json:
        print(json.dumps(report(shapes, prof, args.rate), indent=2))
        return
    head = (
        f"Estimate: analytic counts priced with profile '{prof.name}' (synop {prof.cite('energy', 'synop')}; "
        f"synop_graded {prof.si('energy', 'synop_graded') * 1e12:g} pJ, neuron_update "
        f"{prof.si('energy', 'neuron_update') * 1e12:g} pJ, same source). Ratios are against conv-kernel."
    )
    print(textwrap.fill(head, WIDTH) + "\n")
    print("\n\n".join(table(s, compare(s, prof, args.rate), args.rate, prof.name) for s in shapes))


if __name__ == "__main__":
    main()
