"""`spikeport bench gpu MODEL_DIR_OR_PRESET`: GPU baselines (measured on CUDA, estimated elsewhere)."""

from __future__ import annotations

import argparse
import sys

from spikeport.cli._common import (
    nonnegative_int,
    one_line_errors,
    positive_float,
    positive_int,
    print_json,
    refuse_flags,
    table,
)

BATCHES = "1,16,64,256"  # the sweep of --modes when --batches is not given


def register(subparsers) -> None:
    p = one_line_errors(
        subparsers.add_parser(
            "bench",
            help="baselines: `bench gpu` times the float SNN, its ONNX export and a ViT on a GPU",
            description="Benchmarks against conventional hardware.",
        )
    )
    sub = p.add_subparsers(dest="bench_target", required=True, metavar="TARGET")
    g = one_line_errors(
        sub.add_parser(
            "gpu",
            help="the float network (torch, ONNX Runtime) and an ANN ViT of the same size on a GPU",
            description="On a CUDA machine: measured latency (CUDA events after warm-up), throughput, "
            "torch.cuda.max_memory_allocated and NVML energy (pynvml, several seconds, idle power "
            "subtracted). Without CUDA: the same figures estimated from GPU hw profiles (roofline with "
            "stated utilisation, TDP x time), labelled 'estimated'. A torch CPU latency is always "
            "measured as a sanity anchor.",
        )
    )
    g.add_argument("target", help="a preset (random weights) or a run folder / checkpoint.pt")
    g.add_argument("--attention", help="ssa | lrf_ssa | lrf_causal | lrf_dyn (presets; overrides a checkpoint's)")
    g.add_argument("--batch", type=positive_int, help="batch size (default 1: streaming inference; not with --modes)")
    g.add_argument(
        "--modes",
        action="store_true",
        help="latency and throughput mode: batch 1, and the best of a sweep (--batches) per network and device",
    )
    g.add_argument("--batches", help=f"the sweep of --modes (default {BATCHES})")
    g.add_argument("--T", type=positive_int, help="time steps (default: the model's)")
    g.add_argument("--dtype", default="fp32", choices=("fp32", "tf32", "fp16", "bf16"))
    g.add_argument(
        "--gpu",
        action="append",
        help="GPU profile(s) for the estimate without CUDA (repeatable; default h100; v100, a100, h100 or a .yaml)",
    )
    g.add_argument(
        "--form",
        default="parallel",
        choices=("parallel", "recurrent"),
        help="attention form on the GPU (default parallel, the GPU-friendly one)",
    )
    g.add_argument("--seconds", type=positive_float, default=5.0, help="length of the NVML energy run (default 5 s)")
    g.add_argument("--no-vit", dest="vit", action="store_false", help="skip the ANN ViT counterpart")
    g.add_argument("--no-onnx", dest="onnx", action="store_false", help="skip the ONNX Runtime baseline")
    g.add_argument("--no-cpu", dest="cpu", action="store_false", help="skip the CPU torch anchor")
    g.add_argument(
        "--cpu-threads",
        type=nonnegative_int,
        help="intra-op threads of the CPU anchors (default 1: stable on a loaded machine; 0 = all)",
    )
    g.add_argument("--json", action="store_true", help="machine-readable output (schema spikeport.gpu_bench)")
    g.set_defaults(func=run)


def _num(v, scale: float = 1.0, fmt: str = "{:.4g}") -> str:
    return "-" if v is None else fmt.format(v * scale)


def run(args: argparse.Namespace) -> int:
    from spikeport.baselines.gpu_bench import bench_gpu, bench_gpu_modes
    from spikeport.errors import ConfigError

    if args.modes:
        refuse_flags({"--batch": args.batch}, "with --modes (it sweeps the batches of --batches)")
    else:
        refuse_flags({"--batches": args.batches}, "without --modes (one run at --batch)")
    if not args.cpu:
        refuse_flags({"--cpu-threads": args.cpu_threads}, "with --no-cpu (there is no CPU anchor)")
    cpu_threads = 1 if args.cpu_threads is None else args.cpu_threads
    say = None if args.json else (lambda msg: print(msg, file=sys.stderr))
    common = dict(
        attention=args.attention,
        T=args.T,
        dtype=args.dtype,
        gpus=tuple(args.gpu or ["h100"]),
        inference_form=args.form,
        include_vit=args.vit,
        include_onnx=args.onnx,
        cpu_anchor=args.cpu,
        energy_seconds=args.seconds,
        cpu_threads=cpu_threads or None,
        progress=say,
    )
    if args.modes:
        try:
            batches = tuple(int(b) for b in (args.batches or BATCHES).split(","))
        except ValueError:
            batches = ()
        if not batches or min(batches) < 1:
            raise ConfigError(f"--batches {args.batches!r}: expected comma-separated positive integers, e.g. {BATCHES}")
        result = bench_gpu_modes(args.target, batches, **common)
    else:
        result = bench_gpu(args.target, batch=args.batch or 1, **common)
    if args.json:
        print_json(result)
        return 0
    rows = [
        [
            r["name"],
            r["executor"].replace("onnxruntime", "ort"),
            r["device"].replace(" (profile)", "*"),
            f"{r.get('mode', '-')} {r['batch']}" if "mode" in r else r["batch"],
            r["kind"][:4],
            _num(r["latency_s"], 1e3),
            _num(r["throughput_per_s"]),
            _num(r["peak_memory_bytes"], 1e-6, "{:,.1f}"),
            _num(r["energy_J"], 1e3),
            _num(r["flops"], 1e-9),
        ]
        for r in result["results"]
    ]
    table(
        f"{result['target']} ({result['attention']}, T={result['T']}), batch {result['batch']}, {result['dtype']}",
        ["net", "exec", "device", "batch", "kind", "ms", "1/s", "peak MB", "mJ", "GFLOP"],
        rows,
    )
    for label, what in result["networks"].items():
        print(f"  {label}: {what}")
    print("  ms: latency of one call; 1/s: samples per second; mJ: energy per sample; *: estimated from the profile")
    for r in result["results"]:
        print(f"  {r['name']} / {r['executor']} / {r['device']}: {r['label']}")
    for row in result["ratios"]:
        parts = [
            f"{k.replace('_snn_over_vit', '')} SNN/ViT {v:.3g}" for k, v in row.items() if k.endswith("_vit") and v
        ]
        print(f"  {row['device']} {row['executor']} ({row['kind']}): " + ", ".join(parts))
    for note in result["notes"]:
        print(f"  note: {note}")
    return 0
