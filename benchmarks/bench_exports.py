"""ONNX and NIR exports of digits-tiny: file sizes, ONNX Runtime vs torch CPU latency side by side, parity.

    python benchmarks/bench_exports.py [--checkpoint runs/x/checkpoint.pt ...] [--threads 1] [--json out.json]

Without --checkpoint the models are digits-tiny per attention variant with weights set so every layer
fires (tests/test_export_onnx.py::active_model; untrained, accuracy meaningless) and the ViT baseline.
Latency is wall time, median of --repeats calls, after warm-up, with --threads intra-op threads for both
torch and ONNX Runtime (1 by default: stable on a shared machine). Parity uses the digits test split.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def torch_latency(model, images, repeats: int, warmup: int = 3) -> float:
    from spikeport.train.neurons import reset_net

    times = []
    with torch.no_grad():
        for i in range(warmup + repeats):
            start = time.perf_counter()
            model(images)
            reset_net(model)
            if i >= warmup:
                times.append(time.perf_counter() - start)
    return float(np.median(times))


def models(args):
    from test_export_onnx import active_model, vit_model

    if args.checkpoint:
        from spikeport.train.checkpoint import load_model

        for path in args.checkpoint:
            model, _ = load_model(path)
            yield f"{Path(path).parent.name} ({model.cfg.arch}/{model.cfg.attention}, trained)", model
        return
    for attention in ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn"):
        yield f"digits-tiny {attention} (active, untrained)", active_model(attention)
    yield "digits-tiny vit (untrained)", vit_model()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", action="append")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64, help="the batched measurement (besides batch 1)")
    ap.add_argument("--nir-samples", type=int, default=32)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    import onnxruntime as ort

    from spikeport.exports.nir import export_nir
    from spikeport.exports.onnx import check_onnx, export_copy, export_onnx, ort_latency
    from spikeport.train.data import load_digits_split

    images, _ = load_digits_split("test")
    rows = []
    print(
        f"torch {torch.__version__}, onnxruntime {ort.__version__}, {args.threads} thread(s), "
        f"median of {args.repeats}; wall time on this (possibly shared) machine",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in models(args):
            onnx_path = Path(tmp) / "m.onnx"
            exported = export_onnx(model, onnx_path)
            twin = export_copy(model)
            row = {"model": name, "onnx_bytes": exported.file_bytes, "opset": exported.opset}
            for b in (1, args.batch):
                x = images[:b]
                ort_s = ort_latency(onnx_path, x, repeats=args.repeats, threads=args.threads)["median_s"]
                torch_s = torch_latency(twin, x, args.repeats)
                row[f"b{b}"] = {
                    "ort_ms_per_sample": 1e3 * ort_s / b,
                    "torch_ms_per_sample": 1e3 * torch_s / b,
                    "torch_over_ort": torch_s / ort_s,
                }
            row["ort_parity"] = check_onnx(model, onnx_path, images, threads=args.threads)
            if model.cfg.arch == "spikformer":
                nir_path = Path(tmp) / "m.nir"
                parity = export_nir(model, nir_path, check_images=images[: args.nir_samples]).report["parity"]
                row["nir_bytes"] = nir_path.stat().st_size
                row["nir_parity"] = {
                    k: {
                        "spike_mismatches": parity[k]["spike_mismatches"],
                        "lif_outputs_compared": parity[k]["lif_outputs_compared"],
                    }
                    for k in ("bn_folded", "float_model")
                }
            rows.append(row)
            p, b1, bn = row["ort_parity"], row["b1"], row[f"b{args.batch}"]
            nir_txt = (
                ""
                if "nir_parity" not in row
                else (
                    f" | NIR {row['nir_bytes'] / 1024:.0f} KiB, norse vs BN-folded torch: "
                    f"{row['nir_parity']['bn_folded']['spike_mismatches']} / vs trained float: "
                    f"{row['nir_parity']['float_model']['spike_mismatches']} flipped of "
                    f"{row['nir_parity']['float_model']['lif_outputs_compared']:,} LIF outputs"
                )
            )
            print(
                f"{name}: ONNX {row['onnx_bytes'] / 1024:.0f} KiB | per sample b1: "
                f"ORT {b1['ort_ms_per_sample']:.3f} ms, "
                f"torch {b1['torch_ms_per_sample']:.3f} ms (x{b1['torch_over_ort']:.2f}) | b{args.batch}: ORT "
                f"{bn['ort_ms_per_sample']:.3f} ms, torch {bn['torch_ms_per_sample']:.3f} ms "
                f"(x{bn['torch_over_ort']:.2f}) | ORT vs torch on {p['samples']} digits: "
                f"{p['samples_within_tolerance']:.1%} within {p['atol']:g} + {p['rtol']:g}|x|, "
                f"argmax {p['argmax_agreement']:.1%}{nir_txt}",
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps({"threads": args.threads, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
