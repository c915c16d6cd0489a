"""Loihi 2 cores per preset and attention variant, from check-hw on the built Lava network (an estimate).

    python scripts/cores_table.py                                   # digits-tiny, spikformer-4-384, -8-512
    python scripts/cores_table.py digits-tiny --variants lrf_dyn ssa --json cores.json

Each model is randomly initialised and converted with a few random calibration images: the cores, synapses
and stored weights depend on the shapes and on which weights quantize to zero, not on training (a trained
model stores a few more or fewer non-zero weights). The figures are check-hw's (spikeport.runtime.loihi2,
the loihi2 profile's per-core rules); docs/lowering.md section 10 quotes them.
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
        "cores_alone": totals["cores_alone"],
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
        "| preset | attention | cores (packed) | alone | floor (model's share) | ratio | chips | host computing | "
        "neurons | synapses | weights stored | limits broken |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for preset in args.presets:
        for attention in args.variants:
            r = measure(preset, attention)
            rows.append(r)
            print(
                f"| {preset} | {attention} | {r['cores']:,} | {r['cores_alone']:,} | {r['floor']:,} "
                f"({r['floor_model']:,.0f}) | {r['ratio']:.2f} | {r['chips']} | {r['host_computing']} | "
                f"{r['neurons']:,} | {r['synapses']:,} | {r['weights_stored']:,} | "
                f"{', '.join(r['limits_broken']) or 'none'} |",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
