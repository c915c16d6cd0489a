"""`spikeport bench gpu MODEL_DIR_OR_PRESET`: GPU baselines (measured on CUDA, estimated elsewhere) and the CPU
measured here (spikeport.api.bench_gpu)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from spikeport import api
from spikeport.atomic import write_json
from spikeport.cli._common import (
    STDOUT,
    command,
    echo,
    json_flag,
    json_to_stdout,
    nonnegative_int,
    positive_float,
    positive_int,
    print_json,
    progress_printer,
    quiet_flag,
    refuse_flags,
    table,
)
from spikeport.errors import ConfigError

BATCHES = "1,16,64,256"  # the sweep of --modes when --batches is not given


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = command(
        subparsers,
        "bench",
        help="baselines: `bench gpu` times the float SNN, its ONNX export and a ViT on a GPU",
        description="Benchmarks against conventional hardware. One target for now: gpu.",
        examples=["spikeport bench gpu spikformer-4-384 --modes --json gpu.json"],
    )
    sub = p.add_subparsers(dest="bench_target", required=True, metavar="TARGET")
    g = command(
        sub,
        "gpu",
        help="the float network (torch, ONNX Runtime) and an ANN ViT of the same size on a GPU",
        description="On a CUDA machine: measured latency (CUDA events after warm-up), throughput, "
        "torch.cuda.max_memory_allocated and NVML energy (pynvml, several seconds, idle power subtracted). "
        "Without CUDA: the same figures estimated from GPU hw profiles (roofline with stated utilisation, "
        "energy between idle power and TDP x time), labelled 'estimated'. The CPU is always measured beside "
        "them (torch and ONNX Runtime, --cpu-threads). The ONNX file is exported once, with a dynamic batch axis, "
        "for every batch. --modes sweeps --batches and keeps latency mode (batch 1) and throughput mode (the best "
        "batch); a line per batch on stderr, and --json FILE is rewritten after every batch ('complete': false "
        "until the last), so a sweep cut short keeps what it measured. CPU batches that would take more than "
        "--cpu-budget seconds a call, or too much memory, are skipped with a note.",
        examples=[
            "spikeport bench gpu spikformer-4-384 --modes --json gpu.json",
            "spikeport bench gpu digits-tiny --attention lrf_dyn --gpu v100 --gpu h100",
            "spikeport bench gpu runs/digits-lrf_dyn --batch 1 --seconds 10   # a trained run folder",
        ],
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
    g.add_argument(
        "--cpu-budget",
        type=positive_float,
        default=30.0,
        help="seconds one CPU call may take in a sweep; larger batches are skipped (default 30)",
    )
    json_flag(g, "the results (schema spikeport.gpu_bench)")
    quiet_flag(g)
    g.set_defaults(func=run)


def _num(v: float | None, scale: float = 1.0, fmt: str = "{:.4g}") -> str:
    return "-" if v is None else fmt.format(v * scale)


def run(args: argparse.Namespace) -> int:
    if args.modes:
        refuse_flags({"--batch": args.batch}, "with --modes (it sweeps the batches of --batches)")
    else:
        refuse_flags({"--batches": args.batches}, "without --modes (one run at --batch)")
    if not args.cpu:
        refuse_flags({"--cpu-threads": args.cpu_threads}, "with --no-cpu (there is no CPU anchor)")
    cpu_threads = 1 if args.cpu_threads is None else args.cpu_threads
    say = progress_printer(args)
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
        cpu_call_budget_s=args.cpu_budget,
        progress=say,
    )
    if args.modes:
        try:
            batches = tuple(int(b) for b in (args.batches or BATCHES).split(","))
        except ValueError:
            batches = ()
        if not batches or min(batches) < 1:
            raise ConfigError(f"--batches {args.batches!r}: expected comma-separated positive integers, e.g. {BATCHES}")
        to_file = args.json not in (None, STDOUT)
        result = api.bench_gpu(
            args.target, batches=batches, modes=True, on_result=_writer(args.json) if to_file else None, **common
        )
    else:
        result = api.bench_gpu(args.target, batches=(args.batch or 1,), **common)
    if json_to_stdout(args):
        print_json(result)
        return 0
    if args.json:
        _writer(args.json)(result)
        echo(f"wrote {args.json}")
    if not args.quiet:
        print_result(result)
    return 0


def _writer(path: str) -> Callable[[dict[str, Any]], None]:
    """Write each partial result atomically over the last (a sweep cut short keeps what it measured)."""

    def write(result: dict[str, Any]) -> None:
        write_json(path, result)

    return write


def print_result(result: dict[str, Any]) -> None:
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
        optional=(9, 6, 4, 7),
    )
    for label, what in result["networks"].items():
        echo(f"  {label}: {what}")
    echo("  ms: latency of one call; 1/s: samples per second; mJ: energy per sample; *: estimated from the profile")
    for line in dict.fromkeys(
        f"  {r['name']} / {r['executor']} / {r['device']}: {r['label']}" for r in result["results"]
    ):
        echo(line)
    for row in result["ratios"]:
        parts = [
            f"{k.replace('_snn_over_vit', '')} SNN/ViT {v:.3g}" for k, v in row.items() if k.endswith("_vit") and v
        ]
        echo(f"  {row['device']} {row['executor']} ({row['kind']}): " + ", ".join(parts))
    for note in result["notes"]:
        echo(f"  note: {note}", file=sys.stdout)
