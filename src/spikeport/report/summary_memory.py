"""The memory part of `spikeport report`: SSA vs LRF-Dyn, on the chip, on the GPU, counted and analytic.

* on the chip, per variant (``chip``): cores, chips, synapses, stored weights and synaptic memory at the
  chip's weight precision, neuron state on the chip, state on the host, as check-hw counts them for the
  artifact (``spikeport.api.report`` runs it; nothing here re-derives them); beside them the GPU's memory for
  the same float network (weights + activations of one call) in latency and throughput mode;
* from the runs: each run report's ``state_bytes`` (Loihi precision) and ``weight_bytes``;
* analytic (metrics/memory.py) for the model config of the first run, with the attention set to ``ssa``
  and ``lrf_dyn`` (and any other variant among the runs), at Loihi precision and in torch fp32, with the
  rows of ``torch_memory.summarize`` (ratios to SSA); optionally the torch float model's measured peak;
* the paper's claim (``claim``): SSA's O(d^2) K^T V against LRF-Dyn's O(kd) X in bytes, and what the
  token-serial lowering that would hold X costs on the chip beside the lowering spikeport builds.
"""

from __future__ import annotations

from dataclasses import replace

from spikeport import counting as C
from spikeport.baselines.torch_memory import measure as measure_torch, memory_breakdown, summarize
from spikeport.errors import ConfigError, ProfileError
from spikeport.metrics.memory import PRECISIONS
from spikeport.report.format import Ratio, fmt_bytes, fmt_ratio
from spikeport.report.model import MemorySection, RunSummary, StateClaim, VariantMemory
from spikeport.runtime.loihi2 import lowerings as L

CHOSEN_LOWERING, SERIAL_LOWERING = "conv-per-head", "token-serial"


def _core(attention: str | None) -> str | None:
    """The attention core of a run's variant name (None for a ViT or an unknown name)."""
    from spikeport.train.models import attention_spec

    try:
        return attention_spec(attention).core if attention else None
    except ConfigError:
        return None


def _run_rows(runs: list[RunSummary]) -> list[dict]:
    rows = []
    for r in runs:
        m = {k: v for k, v in r.state_memory.to_dict().items() if k != "per_layer"}
        rows.append({"source": r.source, "executor": r.executor, "attention": r.attention, **m})
    return rows


RATIO_KEYS = ("attention_state_bytes", "neuron_state_bytes", "state_bytes", "weight_bytes")


def _run_ratio(rows: list[dict]) -> dict | None:
    """lrf_dyn / ssa from the first run with the SSA core and the first lrf_dyn run, when both were given; a ratio
    over 0 B is None, with its reason in ``ratio_reasons``."""
    ssa = next((r for r in rows if _core(r["attention"]) == "ssa"), None)
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


def analytic(cfg, attentions: list[str], measure: bool, say) -> dict:
    """Per attention: the analytic breakdowns (fp32, Loihi) of ``cfg`` and optionally the measured peak;
    the result has the layout of torch_memory.compare so that its summary rows apply."""
    results = []
    for att in attentions:
        c = replace(cfg, attention=att)
        name = f"run model ({att})"
        measured = None
        impl = "ideal"
        if measure:
            from spikeport.train.models import build_model

            impl = "spikingjelly-cpu" if c.neuron_backend == "spikingjelly" else "ideal"
            say(f"measuring the torch float model ({att}): CPU, batch 1, T {c.T}, fp32, no_grad, recurrent form")
            measured = measure_torch(build_model(c), 1, "cpu", "fp32", "recurrent").to_dict()
        results.append(
            {
                "attention": att,
                "analytic": memory_breakdown(c, "fp32", 1, "recurrent", "ideal", name).to_dict(),
                "analytic_impl": memory_breakdown(c, "fp32", 1, "recurrent", impl, name).to_dict(),
                "analytic_loihi": memory_breakdown(c, "loihi", 1, "recurrent", "ideal", name).to_dict(),
                "lif_impl": impl,
                "measured": measured,
            }
        )
    return {
        "label": "analytic (metrics/memory.py: held state per module at fp32 and at Loihi precision, "
        "activations of a layer-by-layer torch run traced from the model)"
        + ("; measured: torch float model on the CPU (baselines/torch_memory.py)" if measure else ""),
        "model": cfg.to_dict(),
        "batch": 1,
        "results": results,
        "summary": summarize(results),
    }


def _check(rows: list[dict], an: dict | None) -> list[dict]:
    """Does each run's counted attention state equal the analytic one at Loihi precision, for the lowering that
    ran (chip-native up to 64 tokens: nothing held between steps)?"""
    if an is None:
        return []
    by_att = {r["attention"]: r["analytic_loihi"]["totals"]["attention_core"] for r in an["results"]}
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


def variant_memory(runs: list[RunSummary], an: dict | None) -> list[VariantMemory]:
    """One row per attention variant (the first run of each; one with a chip footprint when there is one)."""
    weights = {r["attention"]: r["analytic"]["totals"]["weights"] for r in (an or {}).get("results", [])}
    out = []
    for variant in dict.fromkeys(r.variant for r in runs):
        same = [r for r in runs if r.variant == variant]
        run = next((r for r in same if r.chip is not None), same[0])
        snn = {b.get("mode"): b for b in run.gpu if b.get("network") == "snn"}
        first = next(iter(snn.values()), None)
        out.append(
            VariantMemory(
                variant=variant,
                source=run.source,
                chip=run.chip,
                chip_note=run.chip_note,
                gpu_weights_bytes=weights.get(run.attention),
                gpu_peak_bytes={m: (snn[m].get("peak_memory_bytes") if m in snn else None) for m in MODES},
                gpu_batch={m: (snn[m].get("batch") if m in snn else None) for m in MODES},
                gpu_device=None if first is None else first["device"],
                gpu_kind=None if first is None else first["kind"],
            )
        )
    return out


MODES = ("latency", "throughput")


def state_claim(cfg, profiles: list) -> StateClaim | None:
    """The paper's attention-state claim for ``cfg``'s size, priced (None without a chip profile that lists the
    limits the lowering model needs)."""
    chip = next((p for p in profiles if p.kind == "neuromorphic"), None)
    if chip is None or cfg is None:
        return None
    dyn = replace(cfg, attention="lrf_dyn")
    try:
        costs = L.compare(L.layer_shape("attention", dyn), chip)
    except (ProfileError, KeyError):
        return None
    loihi = PRECISIONS["loihi"]
    ssa_entries = C.kv_state_entries(cfg.embed_dim, cfg.num_heads)
    dyn_entries = C.dendritic_state_entries(cfg.embed_dim, dyn.attention_spec.dendrites)
    ssa_bytes, dyn_bytes = ssa_entries * loihi.kv_bits // 8, dyn_entries * loihi.state_bits // 8
    keep = ("neurons", "neuron_state_bytes", "stored_weights", "weight_bytes", "cores", "latency_steps")
    lowerings = {name: {k: getattr(costs[name], k) for k in keep} for name in (SERIAL_LOWERING, CHOSEN_LOWERING)}
    serial = costs[SERIAL_LOWERING]
    dendrites = next(g for g in serial.groups if g.name.startswith("dendrite"))
    lowerings[SERIAL_LOWERING]["dendrite_neurons"] = dendrites.neurons
    lowerings[SERIAL_LOWERING]["dendrite_state_bytes"] = dendrites.neurons * dendrites.state_bits // 8
    chosen = costs[CHOSEN_LOWERING]
    ratio = Ratio.of(dyn_bytes, ssa_bytes, "SSA's K^T V")
    n, k = cfg.num_tokens, dyn.attention_spec.dendrites
    statement = (
        f"The paper's claim, SSA holds O(d^2) attention state and LRF-Dyn O(kd), is true of one token stream: per "
        f"attention layer SSA keeps K^T V, H x d_h^2 = {ssa_entries:,} entries ({fmt_bytes(ssa_bytes)} at "
        f"{loihi.kv_bits} bits), LRF-Dyn keeps X, k x d = {dyn_entries:,} entries ({fmt_bytes(dyn_bytes)} at "
        f"{loihi.state_bits} bits): {ratio}. On {chip.name} the lowering that holds X (token-serial, "
        f"runtime/loihi2/lowerings.py) lays it out once per token: {dendrites.neurons:,} dendrite neurons (k = {k} x "
        f"{n} tokens x {cfg.embed_dim} channels), {fmt_bytes(dendrites.neurons * dendrites.state_bits // 8)} of "
        f"state, ~{serial.cores} cores and {serial.latency_steps} steps of latency per layer. The lowering "
        f"spikeport builds ({CHOSEN_LOWERING}) holds no attention state between steps: the recursion becomes a "
        f"token kernel in synaptic memory ({chosen.stored_weights:,} weights, ~{chosen.cores} cores per layer)"
        + (
            f", and SSA's chip-native form ({n} tokens <= {C.CHIP_TOKENS}) holds none either. On the chip the variants "
            "differ in cores, synaptic memory and neuron state, not in attention state."
            if n <= C.CHIP_TOKENS
            else f"; SSA past {C.CHIP_TOKENS} tokens keeps K^T V in a host process (AttentionCore)."
        )
    )
    return StateClaim(
        layers=cfg.depth,
        ssa_entries=ssa_entries,
        ssa_bytes=ssa_bytes,
        dyn_entries=dyn_entries,
        dyn_bytes=dyn_bytes,
        ratio=ratio,
        lowerings=lowerings,
        chosen=CHOSEN_LOWERING,
        serial=SERIAL_LOWERING,
        profile=chip.name,
        statement=statement,
    )


def memory_section(
    runs: list[RunSummary], cfgs: list, profiles: list, measure: bool = False, say=None
) -> MemorySection:
    say = say or (lambda msg: None)
    rows = _run_rows(runs)
    cfg = next((c for c in cfgs if c is not None and c.arch == "spikformer"), None)
    notes = []
    an = None
    if cfg is None:
        notes.append("no Spikformer model config in the run reports: no analytic breakdown")
    else:
        attentions = ["ssa", "lrf_dyn"] + sorted({r["attention"] for r in rows} - {"ssa", "lrf_dyn", None})
        an = analytic(cfg, attentions, measure, say)
        if len({(c.embed_dim, c.depth, c.img_size) for c in cfgs if c is not None}) > 1:
            notes.append("the runs are of different model sizes: the analytic breakdown is of the first run's model")
    return MemorySection(
        from_runs=rows,
        runs_ratio=_run_ratio(rows),
        analytic=an,
        check=_check(rows, an),
        notes=notes,
        chip=variant_memory(runs, an),
        claim=state_claim(cfg, profiles),
    )


def headline(runs: list[RunSummary], memory: MemorySection) -> list[str]:
    """The first screen's sentences: what differs between the variants on the chip, in cores, synaptic memory
    and neuron state (check-hw), and where the paper's state claim stands."""
    with_chip = [v for v in memory.chip if v.chip is not None]
    if not with_chip:
        notes = sorted({v.chip_note for v in memory.chip if v.chip_note})
        return [f"No chip footprint: {'; '.join(notes) or 'check-hw was not run on the artifacts'}."]
    profile = with_chip[0].chip.profile  # type: ignore[union-attr]

    def footprint(v: VariantMemory) -> str:
        c = v.chip
        assert c is not None
        where = f"~{c.cores:,} cores" + (f" on {c.chips} chip{'s' if c.chips != 1 else ''}" if c.chips else "")
        host = f", {fmt_bytes(c.state_bytes_on_host)} on the host" if c.state_bytes_on_host else ""
        return (
            f"{v.variant} needs {where}, {fmt_bytes(c.synapse_bytes)} of synaptic memory ({c.stored_weights:,} "
            f"weights stored) and {fmt_bytes(c.state_bytes_on_chip)} of neuron state{host}"
        )

    out = [f"On {profile} (check-hw): " + "; ".join(footprint(v) for v in with_chip) + "."]
    by = {v.variant: v.chip for v in with_chip}
    ssa = next((c for name, c in by.items() if _core(name) == "ssa"), None)
    dyn = by.get("lrf_dyn")
    if ssa is not None and dyn is not None:
        parts = [
            f"{fmt_ratio(Ratio.of(getattr(dyn, k), getattr(ssa, k)).value)} the {what}"
            for k, what in (("cores", "cores"), ("synapse_bytes", "synaptic memory"), ("state_bytes_on_chip", "state"))
            if getattr(ssa, k)
        ]
        held = {r.variant: r.state_memory.attention_state_bytes for r in runs}
        state = (
            "Neither holds attention state between time steps on the chip"
            if not any(held.values())
            else "Attention state held between steps: "
            + ", ".join(f"{name} {fmt_bytes(b)}" for name, b in held.items() if name in by)
        )
        out.append(
            f"lrf_dyn takes {', '.join(parts)} of ssa. {state}; the paper's O(kd) vs O(d^2) is about a token-serial "
            "runtime (Memory, below)."
        )
    return out
