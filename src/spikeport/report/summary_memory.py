"""The memory part of `spikeport report`: SSA vs LRF-Dyn, on the chip, on the GPU, counted and analytic.

* on the chip, per variant (``chip``): cores, chips, synapses, stored weights and synaptic memory at the
  chip's weight precision, chip state, host state (docs/glossary.md), as check-hw counts them for the
  artifact (the gathering stage runs it; nothing here re-derives them); beside them the GPU's memory for
  the same float network (weights + activations of one call) in latency and throughput mode;
* from the runs: each run report's ``state_bytes`` (Loihi precision) and ``weight_bytes``, and whether the
  counted attention state agrees with the analytic one;
* analytic and the paper's claim as the gathering stage worked them out (``report.inputs.MemoryInputs``:
  metrics/memory.py's breakdown per attention variant, the claim priced on the chip), passed on.
"""

from __future__ import annotations

from typing import Any

from spikeport.report.format import Ratio, fmt_bytes, fmt_ratio
from spikeport.report.inputs import MODES, AnalyticMemory, MemoryInputs
from spikeport.report.model import MemorySection, RunSummary, VariantMemory


def _run_rows(runs: list[RunSummary]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        m = {k: v for k, v in r.state_memory.to_dict().items() if k != "per_layer"}
        rows.append({"source": r.source, "executor": r.executor, "attention": r.attention, **m})
    return rows


RATIO_KEYS = ("attention_state_bytes", "neuron_state_bytes", "state_bytes", "weight_bytes")


def _run_ratio(rows: list[dict[str, Any]], cores: dict[str, str]) -> dict[str, Any] | None:
    """lrf_dyn / ssa from the first run with the SSA core and the first lrf_dyn run, when both were given; a ratio
    over 0 B is None, with its reason in ``ratio_reasons``. ``cores``: attention variant -> its core."""
    ssa = next((r for r in rows if cores.get(r["attention"]) == "ssa"), None)
    dyn = next((r for r in rows if r["attention"] == "lrf_dyn"), None)
    if ssa is None or dyn is None:
        return None
    ratios = {k: Ratio.of(dyn[k], ssa[k], f"{ssa['attention']} holds 0 B") for k in RATIO_KEYS}
    return {
        "label": f"lrf_dyn ({dyn['source']}, {dyn['executor']}) / {ssa['attention']} ({ssa['source']}, "
        f"{ssa['executor']}): counted state at Loihi precision",
        "ssa": {k: ssa[k] for k in RATIO_KEYS},
        "lrf_dyn": {k: dyn[k] for k in RATIO_KEYS},
        "ratio": {k: r.value for k, r in ratios.items()},
        "ratio_reasons": {k: r.reason for k, r in ratios.items() if r.value is None},
    }


def _check(rows: list[dict[str, Any]], an: AnalyticMemory | None) -> list[dict[str, Any]]:
    """Does each run's counted attention state equal the analytic one at Loihi precision, for the lowering that
    ran (chip-native on any token grid up to 64 x 64: nothing held between steps)?"""
    if an is None:
        return []
    by_att = {r.attention: r.analytic_loihi["totals"]["attention_core"] for r in an.results}
    return [
        {
            "source": r["source"],
            "attention": r["attention"],
            "counted": r["attention_state_bytes"],
            "analytic": by_att[r["attention"]],
            "agrees": r["attention_state_bytes"] == by_att[r["attention"]],
        }
        for r in rows
        if r["attention"] in by_att
    ]


def variant_memory(runs: list[RunSummary], an: AnalyticMemory | None) -> list[VariantMemory]:
    """One row per attention variant (the first run of each; one with a chip footprint when there is one)."""
    weights = {r.attention: r.analytic["totals"]["weights"] for r in (an.results if an else [])}
    out = []
    for variant in dict.fromkeys(r.variant for r in runs):
        same = [r for r in runs if r.variant == variant]
        run = next((r for r in same if r.chip is not None), same[0])
        snn = {b.mode: b for b in run.gpu if b.network == "snn"}
        first = next(iter(snn.values()), None)
        out.append(
            VariantMemory(
                variant=variant,
                source=run.source,
                chip=run.chip,
                chip_note=run.chip_note,
                gpu_weights_bytes=weights.get(run.attention) if run.attention else None,
                gpu_peak_bytes={m: (snn[m].peak_memory_bytes if m in snn else None) for m in MODES},
                gpu_batch={m: (snn[m].batch if m in snn else None) for m in MODES},
                gpu_device=None if first is None else first.device,
                gpu_kind=None if first is None else first.kind,
            )
        )
    return out


def memory_section(runs: list[RunSummary], inputs: MemoryInputs, cores: dict[str, str]) -> MemorySection:
    """SSA vs LRF-Dyn across the runs, from their counted state and the memory the gathering stage worked out."""
    rows = _run_rows(runs)
    return MemorySection(
        from_runs=rows,
        runs_ratio=_run_ratio(rows, cores),
        analytic=inputs.analytic,
        check=_check(rows, inputs.analytic),
        notes=list(inputs.notes),
        chip=variant_memory(runs, inputs.analytic),
        claim=inputs.claim,
    )


def headline(runs: list[RunSummary], memory: MemorySection, cores: dict[str, str]) -> list[str]:
    """The first screen's sentence on the chip: what differs between the variants in cores, synaptic memory and chip
    state (check-hw), and where the paper's state claim stands. ``cores``: variant -> its core."""
    with_chip = [v for v in memory.chip if v.chip is not None]
    if not with_chip:
        notes = sorted({v.chip_note for v in memory.chip if v.chip_note})
        return [f"No chip footprint: {'; '.join(notes) or 'check-hw was not run on the artifacts'}."]
    profile = with_chip[0].chip.profile  # type: ignore[union-attr]

    def footprint(v: VariantMemory) -> str:
        c = v.chip
        assert c is not None
        where = f"~{c.cores:,} cores" + (f" on {c.chips} chip{'s' if c.chips != 1 else ''}" if c.chips else "")
        host = f", {fmt_bytes(c.state_bytes_on_host)} of host state" if c.state_bytes_on_host else ""
        return (
            f"{v.variant} needs {where}, {fmt_bytes(c.synapse_bytes)} of synaptic memory and "
            f"{fmt_bytes(c.state_bytes_on_chip)} of chip state{host}"
        )

    line = f"On {profile} (check-hw): " + "; ".join(footprint(v) for v in with_chip)
    by = {v.variant: v.chip for v in with_chip}
    ssa = next((c for name, c in by.items() if cores.get(name) == "ssa"), None)
    dyn = by.get("lrf_dyn")
    if ssa is None or dyn is None:
        return [line + "."]
    parts = [
        f"{fmt_ratio(Ratio.of(getattr(dyn, k), getattr(ssa, k)).value)} the {what}"
        for k, what in (("cores", "cores"), ("synapse_bytes", "synaptic memory"), ("state_bytes_on_chip", "chip state"))
        if getattr(ssa, k)
    ]
    held = {r.variant: r.state_memory.attention_state_bytes for r in runs}
    state = (
        "Neither holds attention state between time steps on the chip"
        if not any(held.values())
        else "Attention state held between steps: "
        + ", ".join(f"{name} {fmt_bytes(b)}" for name, b in held.items() if name in by)
    )
    return [
        f"{line} (lrf_dyn: {', '.join(parts)} of ssa). {state}; the paper's O(kd) vs O(d^2) is about a token-serial "
        "runtime (Memory, below)."
    ]
