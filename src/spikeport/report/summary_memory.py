"""The memory part of `spikeport report`: SSA vs LRF-Dyn state, as the executors counted it and analytically.

* from the runs: each run report's ``state_bytes`` (Loihi precision: K^T V at 16 bits for SSA, the
  dendritic X at 24 bits for LRF-Dyn, LIF u and v at 24 bits) and ``weight_bytes``;
* analytic (metrics/memory.py) for the model config of the first run, with the attention set to ``ssa``
  and ``lrf_dyn`` (and any other variant among the runs), at Loihi precision and in torch fp32, with the
  rows of ``torch_memory.summarize`` (ratios to SSA);
* optionally measured: the torch float model's peak memory (baselines/torch_memory.py), batch 1, no_grad.
"""

from __future__ import annotations

from dataclasses import replace


def _core(attention: str | None) -> str | None:
    """The attention core of a run's variant name (None for a ViT or an unknown name)."""
    from spikeport.errors import ConfigError
    from spikeport.train.models import attention_spec

    try:
        return attention_spec(attention).core if attention else None
    except ConfigError:
        return None


def _run_rows(runs: list[dict]) -> list[dict]:
    rows = []
    for r in runs:
        m = {k: v for k, v in r["state_memory"].items() if k != "per_layer"}
        rows.append({"source": r["source"], "executor": r["executor"], "attention": r["attention"], **m})
    return rows


def _run_ratio(rows: list[dict]) -> dict | None:
    """lrf_dyn / ssa from the first run with the SSA core and the first lrf_dyn run, when both were given."""
    ssa = next((r for r in rows if _core(r["attention"]) == "ssa"), None)
    dyn = next((r for r in rows if r["attention"] == "lrf_dyn"), None)
    if ssa is None or dyn is None:
        return None
    keys = ("attention_state_bytes", "neuron_state_bytes", "state_bytes", "weight_bytes")
    return {
        "label": f"lrf_dyn ({dyn['source']}, {dyn['executor']}) / {ssa['attention']} ({ssa['source']}, "
        f"{ssa['executor']}): counted state at Loihi precision",
        "ssa": {k: ssa[k] for k in keys},
        "lrf_dyn": {k: dyn[k] for k in keys},
        "ratio": {k: (dyn[k] / ssa[k] if ssa[k] else None) for k in keys},
    }


def analytic(cfg, attentions: list[str], measure: bool, say) -> dict:
    """Per attention: the analytic breakdowns (fp32, Loihi) of ``cfg`` and optionally the measured peak;
    the result has the layout of torch_memory.compare so that its summary rows apply."""
    from spikeport.baselines.torch_memory import memory_breakdown, summarize

    results = []
    for att in attentions:
        c = replace(cfg, attention=att)
        name = f"run model ({att})"
        measured = None
        impl = "ideal"
        if measure:
            from spikeport.baselines.torch_memory import measure as measure_torch
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
    """Does each run's counted attention state equal the analytic Loihi-precision attention core?"""
    if an is None:
        return []
    by_att = {r["attention"]: r["analytic_loihi"]["totals"]["attention_core"] for r in an["results"]}
    out = []
    for r in rows:
        if r["attention"] in by_att:
            out.append(
                {
                    "source": r["source"],
                    "attention": r["attention"],
                    "counted": r["attention_state_bytes"],
                    "analytic": by_att[r["attention"]],
                    "agrees": r["attention_state_bytes"] == by_att[r["attention"]],
                }
            )
    return out


def memory_section(runs: list[dict], cfgs: list, measure: bool = False, say=None) -> dict:
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
    return {
        "from_runs": rows,
        "runs_ratio": _run_ratio(rows),
        "analytic": an,
        "check": _check(rows, an),
        "notes": notes,
    }
