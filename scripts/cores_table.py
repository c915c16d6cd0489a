"""Loihi 2 cores per preset and attention variant, from check-hw on the built Lava network (an estimate).

    python scripts/cores_table.py                                   # digits-tiny, spikformer-4-384, -8-512
    python scripts/cores_table.py digits-tiny --variants lrf_dyn ssa --json cores.json

Each model is randomly initialised and converted with a few random calibration images: the cores, synapses
and stored weights depend on the shapes and on which weights quantize to zero, not on training (a trained
model stores a few more or fewer non-zero weights). The figures are check-hw's: the core model fitted to Lava's
Loihi 2 compiler on lava-dl's public compile tables (spikeport.runtime.loihi2.core_model; tests/test_core_model.py
holds it to PilotNet-LIF's 74 cores, PilotNet-SDNN's 61, MNIST's 5 and YOLO-KP's 574, Oxford's 5 at 4); the
range runs to where the neuron models and synapse formats no public table covers take twice the fitted share.
docs/benchmarks.md ("Loihi 2 cores per preset") and docs/lowering.md section 10 quote them.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

PRESETS = ("digits-tiny", "spikformer-4-384", "spikformer-8-512")
VARIANTS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")


def measure(preset: str, attention: str, calib_images: int = 2) -> dict[str, Any]:
    import torch

    from spikeport.convert.api import build_graph
    from spikeport.runtime.loihi2.check_hw import check_hw
    from spikeport.train.models import build_model
    from spikeport.train.presets import preset_config

    torch.manual_seed(0)
    cfg = preset_config(preset, attention=attention, neuron_backend="torch")
    model = build_model(cfg).eval()
    calib = torch.rand(calib_images, cfg.in_channels, cfg.img_size, cfg.img_size)
    start = time.perf_counter()
    result = check_hw(build_graph(model, calib)).to_dict()
    totals = result["totals"]
    return {
        "preset": preset,
        "attention": attention,
        "cores": totals["cores"],
        "cores_high": totals["cores_high"],
        "floor": totals["floor"]["cores"],
        "floor_model": totals["floor"]["model"],
        "ratio": totals["ratio_to_floor"],
        "chips": totals["chips"],
        "system": (result.get("system") or {}).get("name"),
        "host_computing": len(totals["host_computing"]),
        "neurons": totals["neurons_on_chip"],
        "synapses": totals["synapses_on_chip"],
        "weights_stored": totals["weights_stored_on_chip"],
        "limits_broken": sorted({f["rule"] for f in result["findings"] if f["severity"] == "violation"}),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", default=list(PRESETS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    rows = []
    print(
        "| preset | attention | cores (range) | lower bound (model's share) | ratio | chips | system | "
        "host computing | neurons | synapses | weights stored | limits broken |"
    )
    print("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|")
    for preset in args.presets:
        for attention in args.variants:
            r = measure(preset, attention)
            rows.append(r)
            print(
                f"| {preset} | {attention} | {r['cores']:,} ({r['cores']:,}-{r['cores_high']:,}) | {r['floor']:,} "
                f"({r['floor_model']:,.0f}) | {r['ratio']:.2f} | {r['chips']} | {r['system']} | "
                f"{r['host_computing']} | "
                f"{r['neurons']:,} | {r['synapses']:,} | {r['weights_stored']:,} | "
                f"{', '.join(r['limits_broken']) or 'none'} |",
                flush=True,
            )
    for preset in args.presets:
        by = {r["attention"]: r for r in rows if r["preset"] == preset}
        if "ssa" in by and "lrf_dyn" in by:
            ssa, dyn = by["ssa"], by["lrf_dyn"]
            print(
                f"{preset}: ssa / lrf_dyn = {ssa['cores'] / dyn['cores']:.2f}x the cores "
                f"({ssa['cores_high'] / dyn['cores_high']:.2f}x at the high ends), "
                f"{ssa['chips']} vs {dyn['chips']} chips"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
