"""Where a training step goes: spikeport's Spikformer and SpikingJelly's ``model.spikformer`` under the torch profiler.

One step = forward, cross-entropy, backward, AdamW, reset (bench_train.py's step). The GPU time of every kernel
is summed into categories (convolutions, GEMMs, BatchNorm, neurons, layout copies, optimizer, ...) so that two
networks' steps can be read side by side; ``--variants`` also times spikeport with each fast-path switch on or off.

    python benchmarks/profile_train.py --json profile.json          # CUDA: spikformer-4-384, batch 128, AMP
    python benchmarks/profile_train.py --preset digits-tiny --batch 32   # CPU: a smoke run
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

# first match wins: kernel name pattern -> category
CATEGORIES = [
    ("optimizer", r"multi_tensor|adam|foreach|_amp_|unscale|non_finite"),
    ("batchnorm", r"batch_norm|batchnorm|bn_fw|bn_bw|bn_|welford"),
    ("neuron", r"lif|multistep|multi_step|neuron|spike|sigmoid|surrogate"),
    ("conv", r"conv|fprop|dgrad|wgrad|implicit_convolve|nchwToNhwc|nhwcToNchw|cudnn"),
    ("gemm", r"gemm|cutlass|cublas|xmma|Kernel2|matmul|sm90_"),
    ("pool", r"pool"),
    ("copy/layout", r"copy|transpose|permute|CatArray|cat_|index|gather|scatter|contiguous"),
    ("reduction", r"reduce|sum|mean"),
    ("elementwise", r"elementwise|vectorized|triton_|fill|add|mul"),
]


def category(kernel: str) -> str:
    name = kernel.lower()
    for cat, pattern in CATEGORIES:
        if re.search(pattern, name):
            return cat
    return "other"


def profile_step(step, steps: int) -> dict:
    """GPU (or CPU) time per step by category and the top kernels, over ``steps`` profiled steps."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        if cuda:
            torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / steps
    by_cat: dict[str, float] = defaultdict(float)
    kernels: dict[str, float] = defaultdict(float)
    launches = 0
    from torch.autograd import DeviceType

    for evt in prof.key_averages():
        # the GPU's own kernels (an aten op's entry repeats its kernels' time), or the CPU's aten ops
        on_gpu = getattr(evt, "device_type", None) == DeviceType.CUDA
        t = evt.self_device_time_total if cuda else evt.self_cpu_time_total
        if t <= 0 or (cuda and not on_gpu) or (not cuda and not evt.key.startswith("aten::")):
            continue
        by_cat[category(evt.key)] += t / 1e3 / steps  # us -> ms per step
        kernels[evt.key] += t / 1e3 / steps
        launches += evt.count if cuda else 0
    busy = sum(by_cat.values())
    top = sorted(kernels.items(), key=lambda kv: -kv[1])[:25]
    return {
        "wall_ms_per_step": wall * 1e3,
        "busy_ms_per_step": busy,
        "kernels_per_step": launches / steps,
        "by_category_ms": dict(sorted(by_cat.items(), key=lambda kv: -kv[1])),
        "top_kernels_ms": top,
    }


def time_step(step, rounds: int, per_round: int) -> float:
    """Median seconds per step after two warm-up steps."""
    for _ in range(2):
        step()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(per_round):
            step()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / per_round)
    return statistics.median(times)


def variants(cfg) -> dict:
    """name -> a zero-argument builder of the model (spikeport's switches, SpikingJelly's model)."""
    from dataclasses import replace

    from bench_train import sj_builtin

    from spikeport.train.models import build_model, set_fused_qkv

    def ours(backend: str, fused: bool):
        def build():
            model = build_model(replace(cfg, neuron_backend=backend))
            set_fused_qkv(model, fused)
            return model

        return build

    def channels_last(build):
        return lambda: build().to(memory_format=torch.channels_last)

    def compiled(build):
        return lambda: torch.compile(build())

    return {
        "SJ model.spikformer": lambda: sj_builtin(cfg),
        "spikeport SJ neurons, separate q/k/v": ours("spikingjelly", False),
        "spikeport SJ neurons, fused q/k/v": ours("spikingjelly", True),
        "spikeport torch neurons, fused q/k/v": ours("torch", True),
        "spikeport torch neurons, separate q/k/v": ours("torch", False),
        "spikeport SJ neurons, fused, channels-last": channels_last(ours("spikingjelly", True)),
        "spikeport torch neurons, fused, channels-last": channels_last(ours("torch", True)),
        "spikeport SJ neurons, fused, compiled": compiled(ours("spikingjelly", True)),
        "spikeport torch neurons, fused, compiled": compiled(ours("torch", True)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="spikformer-4-384")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=5)
    ap.add_argument("--profile-steps", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="variant names (substrings) to run")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    from bench_train import make_step

    from spikeport.train.presets import preset_config

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    if cuda:
        torch.backends.cudnn.benchmark = True
    cfg = preset_config(args.preset)
    torch.manual_seed(0)
    x = torch.randn(args.batch, cfg.in_channels, cfg.img_size, cfg.img_size, device=dev)
    y = torch.randint(0, cfg.num_classes, (args.batch,), device=dev)
    results = {}
    for name, build in variants(cfg).items():
        if args.only and not any(o in name for o in args.only):
            continue
        torch.manual_seed(0)
        if "compiled" in name and not cuda:
            continue
        step = make_step(build().to(dev).train(), x, y, amp=cuda)
        t0 = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        first = time.perf_counter() - t0
        sec = time_step(step, args.rounds, args.per_round)
        prof = profile_step(step, args.profile_steps)
        results[name] = {"images_per_s": args.batch / sec, "s_per_step": sec, "first_step_s": first, **prof}
        cats = ", ".join(f"{k} {v:.1f}" for k, v in prof["by_category_ms"].items())
        print(
            f"{name:42s} {args.batch / sec:8.1f} img/s  step {sec * 1e3:6.1f} ms  busy {prof['busy_ms_per_step']:6.1f} "
            f"ms  {prof['kernels_per_step']:5.0f} kernels  first {first:.1f} s  [{cats}]",
            flush=True,
        )
        del step
        if cuda:
            torch.cuda.empty_cache()
        if args.json:  # after every variant: a run cut short keeps what it measured
            device = torch.cuda.get_device_name() if cuda else "cpu"
            out = {"preset": args.preset, "batch": args.batch, "device": device, "torch": torch.__version__, **results}
            Path(args.json).write_text(json.dumps(out, indent=1))
    for name, r in results.items():
        print(f"\n{name}: top kernels (ms per step)")
        for kernel, ms in r["top_kernels_ms"][:15]:
            print(f"  {ms:7.2f}  {category(kernel):12s} {kernel[:110]}")


if __name__ == "__main__":
    main()
