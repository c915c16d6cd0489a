"""The memory inputs of `spikeport report`, across runs: the analytic breakdown of the first run's model per
attention variant (``metrics.memory`` through ``baselines.torch_memory``, activations traced from the model), the
torch float model's measured peak when asked for, and the paper's attention-state claim priced on the chip.

* analytic (metrics/memory.py) for the model config of the first run, with the attention set to ``ssa``
  and ``lrf_dyn`` (and any other variant among the runs), at Loihi precision and in torch fp32, with the
  rows of ``torch_memory.summarize`` (ratios to SSA); optionally the torch float model's measured peak;
* the paper's claim (``claim``): SSA's O(d^2) K^T V against LRF-Dyn's O(kd) X in bytes, and what the
  token-serial lowering that would hold X costs on the chip beside the lowering spikeport builds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from spikeport import chip_limits, counting as C
from spikeport.baselines.torch_memory import measure as measure_torch, memory_breakdown, summarize
from spikeport.errors import CacheEntryError, ProfileError
from spikeport.gather import torchless
from spikeport.gather.cache import ReportCache, profile_digest
from spikeport.gather.kept import typed
from spikeport.hw_profiles import HwProfile
from spikeport.metrics import lowering_costs as L
from spikeport.metrics.memory import PRECISIONS
from spikeport.report.format import Ratio, fmt_bytes
from spikeport.report.inputs import AnalyticMemory, AttentionMemory, MemoryInputs, StateClaim

if TYPE_CHECKING:
    from spikeport.gather.models import CheckedConfig
    from spikeport.train.model_config import ModelConfig

CHOSEN_LOWERING, SERIAL_LOWERING = "conv-per-head", "token-serial"


def memory_inputs(
    cfgs: Sequence[CheckedConfig | None],
    attentions: Sequence[str | None],
    profiles: list[HwProfile],
    measure: bool,
    say: Callable[[str], None],
    kept: ReportCache | None = None,
) -> MemoryInputs:
    """The memory of the first Spikformer among the runs' configs (``cfgs``), for ssa, lrf_dyn and the runs'
    other variants (``attentions``); the claim priced on the first neuromorphic profile. Both are kept in the
    report cache (``kept``) by the config and the profile; a measured peak (``measure``) is measured every time.
    Without torch the analytic breakdown is the cache's or none (``torchless``'s notes); the claim needs no torch."""
    kept = kept or ReportCache(None)
    cfg = next((c for c in cfgs if c is not None and c.arch == "spikformer"), None)
    notes = []
    an = None
    if measure and cfg is not None and torchless.torch_missing():
        notes.append(torchless.NO_MEASURED_MEMORY)
        measure = False
    if cfg is None:
        notes.append("no Spikformer model config in the run reports: no analytic breakdown")
    else:
        others = sorted({a for a in attentions if a is not None} - {"ssa", "lrf_dyn"})
        variants = ["ssa", "lrf_dyn", *others]
        key = {"model": cfg.to_dict(), "attentions": variants}
        entry = None if measure else kept.get("memory", key, lambda value: typed(AnalyticMemory, value))
        if entry is not None:
            an = entry
        elif torchless.torch_missing():
            notes.append(torchless.NO_MEMORY)
        else:
            an = analytic(cfg.build(), variants, measure, say)
            if not measure:
                kept.put("memory", key, an.to_dict())
        if len({c.size() for c in cfgs if c is not None}) > 1:
            notes.append("the runs are of different model sizes: the analytic breakdown is of the first run's model")
    return MemoryInputs(analytic=an, claim=_kept_claim(cfg, profiles, kept), notes=notes)


def _kept_claim(cfg: CheckedConfig | None, profiles: list[HwProfile], kept: ReportCache) -> StateClaim | None:
    """``state_claim``, kept in the report cache by the config and the chip profile."""
    chip = next((p for p in profiles if p.kind == "neuromorphic"), None)
    if cfg is None or chip is None:
        return None
    key = {"model": cfg.to_dict(), "profile": profile_digest(chip)}
    entry = kept.get("claim", key, _kept_claim_value)
    if entry is not None:
        return entry[0]
    claim = state_claim(cfg.build(), profiles)
    kept.put("claim", key, {"claim": None if claim is None else claim.to_dict()})
    return claim


def _kept_claim_value(value: Any) -> tuple[StateClaim | None]:
    """A claim entry's value (``{"claim": StateClaim.to_dict() or None}``) as the claim, in a 1-tuple: a claim of
    None is a value, not a miss."""
    if not isinstance(value, dict) or set(value) != {"claim"}:
        raise CacheEntryError("value: expected an object of one field, claim")
    if value["claim"] is None:
        return (None,)
    d = value["claim"]
    if not isinstance(d, dict) or "ratio_reason" not in d:
        raise CacheEntryError("value.claim: expected a StateClaim object with its ratio_reason")
    d = dict(d, ratio={"value": d.get("ratio"), "reason": d["ratio_reason"]})
    del d["ratio_reason"]
    return (typed(StateClaim, d, "value.claim"),)


def analytic(cfg: ModelConfig, attentions: list[str], measure: bool, say: Callable[[str], None]) -> AnalyticMemory:
    """Per attention: the analytic breakdowns (fp32, Loihi) of ``cfg`` and optionally the measured peak, with the
    summary rows of ``torch_memory.summarize``."""
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
            AttentionMemory(
                attention=att,
                analytic=memory_breakdown(c, "fp32", 1, "recurrent", "ideal", name).to_dict(),
                analytic_impl=memory_breakdown(c, "fp32", 1, "recurrent", impl, name).to_dict(),
                analytic_loihi=memory_breakdown(c, "loihi", 1, "recurrent", "ideal", name).to_dict(),
                lif_impl=impl,
                measured=measured,
            )
        )
    rows = streaming_rows(summarize([r.to_dict() for r in results]), results, cfg)  # torch_memory's layout
    return AnalyticMemory(
        label="analytic (metrics/memory.py: held state per module at fp32 and at Loihi precision, "
        "activations of a layer-by-layer torch run traced from the model)"
        + ("; measured: torch float model on the CPU (baselines/torch_memory.py)" if measure else ""),
        model=cfg.to_dict(),
        batch=1,
        results=results,
        summary=rows,
    )


def streaming_core_bytes(cfg: ModelConfig) -> int:
    """The streaming attention state's core at Loihi precision, all blocks: K^T V (or the causal running sum) at
    16 bits, or LRF-Dyn's X at 24 bits, per block (the paper's claim, ``state_claim``, is one block of it)."""
    loihi = PRECISIONS["loihi"]
    if cfg.attention_spec.core == "dendritic":
        per_block = C.dendritic_state_entries(cfg.embed_dim, cfg.attention_spec.dendrites) * loihi.state_bits // 8
    else:
        per_block = C.kv_state_entries(cfg.embed_dim, cfg.num_heads) * loihi.kv_bits // 8
    return cfg.depth * per_block


def streaming_rows(
    rows: list[dict[str, Any]], results: list[AttentionMemory], cfg: ModelConfig
) -> list[dict[str, Any]]:
    """``summarize``'s rows with the Loihi-precision figures defined as the report defines them (docs/glossary.md):
    the streaming attention state at Loihi precision is a token-streaming runtime's (K^T V 16-bit / X 24-bit, plus its
    1-bit token buffers), whatever the chip-native lowering holds (nothing: ``analytic_loihi``'s core is 0); and the
    LIF state at Loihi precision (u and v at 24 bits) beside torch's (v in fp32), the one the executors count."""
    atts = [r.attention for r in results]
    base = atts[0]

    def row(figure: str, note: str, values: Mapping[str, float]) -> dict[str, Any]:
        ratios = {a: (v / values[base] if values[base] else None) for a, v in values.items()}
        return {"figure": figure, "note": note, "bytes": values, f"ratio_to_{base}": ratios}

    core = {r.attention: streaming_core_bytes(replace(cfg, attention=r.attention)) for r in results}
    buffers = {r.attention: r.analytic_loihi["totals"]["attention_buffers"] for r in results}
    lif = {r.attention: r.analytic_loihi["totals"]["neuron_state"] for r in results}
    out = []
    for r in rows:
        if r["figure"] == "attn state @Loihi":
            out.append(row("attn core state @Loihi", "16-bit K^T V / S, 24-bit X, all blocks", core))
            out.append(
                row("attn state @Loihi", "the core + 1-bit token buffers", {a: core[a] + buffers[a] for a in atts})
            )
        else:
            out.append(r)
        if r["figure"] == "LIF state":
            out.append(row("LIF state @Loihi", "u and v at 24 bits: what the executors count", lif))
    return out


def state_claim(cfg: ModelConfig | None, profiles: list[HwProfile]) -> StateClaim | None:
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
        f"The paper's claim, SSA holds O(d^2) streaming attention state and LRF-Dyn O(kd), is true of one token "
        "stream: per "
        f"attention layer SSA keeps K^T V, H x d_h^2 = {ssa_entries:,} entries ({fmt_bytes(ssa_bytes)} at "
        f"{loihi.kv_bits} bits), LRF-Dyn keeps X, k x d = {dyn_entries:,} entries ({fmt_bytes(dyn_bytes)} at "
        f"{loihi.state_bits} bits): {ratio}. On {chip.name} the lowering that holds X (token-serial, "
        f"metrics/lowering_costs.py) lays it out once per token: {dendrites.neurons:,} dendrite neurons (k = {k} x "
        f"{n} tokens x {cfg.embed_dim} channels), {fmt_bytes(dendrites.neurons * dendrites.state_bits // 8)} of "
        f"chip state, ~{serial.cores} cores and {serial.latency_steps} steps of latency per layer. The lowering "
        f"spikeport builds ({CHOSEN_LOWERING}) holds no attention state between steps: the recursion becomes a "
        f"token kernel in synaptic memory ({chosen.stored_weights:,} weights, ~{chosen.cores} cores per layer)"
        + (
            f", and SSA's chip-native form ({n} tokens on a token grid) holds none either. On the chip the variants "
            "differ in cores, synaptic memory and chip state, not in attention state."
            if C.token_grid((n,)) is not None
            else f"; SSA past {chip_limits.CHIP_GRID_SIDE} x {chip_limits.CHIP_GRID_SIDE} tokens keeps K^T V in a host "
            "process (AttentionCore)."
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
