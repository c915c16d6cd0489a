"""Training-step speed: spikeport's Spikformer vs the same network written with SpikingJelly's own layers.

The reference (``SJSpikformer`` below) is what a SpikingJelly user writes in a straightforward way:
multi-step ``layer.Conv2d / BatchNorm2d / MaxPool2d / Conv1d / BatchNorm1d`` and ``neuron.LIFNode``
(tau 2, detach_reset, sigmoid surrogate alpha 4; attention neuron threshold 0.5), tokens kept
channel-first ``[T, B, C, N]`` as in ``spikingjelly.activation_based.model.spikformer``. Same sizes and
the same parameter count as ours (checked). SpikingJelly's own optimized ``model.spikformer.Spikformer``
(fused q/k/v projection, no biases: a slightly different network) is timed as another column. ``spikeport
(default)`` is the training step ``spikeport train`` runs (``train.loop.training_net``: torch.compile on CUDA;
the first step compiles, outside the timing), the eager networks beside it. On a CPU, ``torch neurons, compiled
LIF`` is the demo's training step (train.lif_kernels) and ``eager LIF`` the same network on MultiStepLIF's loop.

One step = forward, cross-entropy, backward, AdamW step, reset. The models are timed in interleaved
rounds (ours, reference, ours, ...) so that a change of machine load hits both; the median step is shown.

    python benchmarks/bench_train.py                  # CPU: digits-tiny and a reduced spikformer-4-384
    python benchmarks/bench_train.py --threads 2 --rounds 5 --json out.json
    python benchmarks/bench_train.py --sections cuda       # the GPU comparison only
On a CUDA machine it also reports images/s for spikformer-4-384 at batch 128 with AMP (SpikingJelly picks
its CUDA kernels by device), and spikeport (default) / SJ model.spikformer (goal >= 1.1).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn


def sj_lif(v_threshold: float = 1.0):
    from spikingjelly.activation_based import neuron, surrogate

    return neuron.LIFNode(
        tau=2.0,
        v_threshold=v_threshold,
        v_reset=0.0,
        detach_reset=True,
        surrogate_function=surrogate.Sigmoid(alpha=4.0),
        step_mode="m",
    )


class SJConvBNLIF(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, pool: bool):
        from spikingjelly.activation_based import layer

        mods = [
            layer.Conv2d(c_in, c_out, 3, 1, 1, bias=False, step_mode="m"),
            layer.BatchNorm2d(c_out, step_mode="m"),
            sj_lif(),
        ]
        if pool:
            mods.append(layer.MaxPool2d(3, 2, 1, step_mode="m"))
        super().__init__(*mods)


class SJPointwise(nn.Sequential):
    """1x1 Conv1d (bias, as the official CIFAR nn.Linear) + BatchNorm1d + LIF on [T, B, C, N]."""

    def __init__(self, c_in: int, c_out: int, v_threshold: float = 1.0):
        from spikingjelly.activation_based import layer

        super().__init__(
            layer.Conv1d(c_in, c_out, 1, step_mode="m"), layer.BatchNorm1d(c_out, step_mode="m"), sj_lif(v_threshold)
        )


class SJBlock(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = SJPointwise(dim, dim), SJPointwise(dim, dim), SJPointwise(dim, dim)
        self.attn_lif = sj_lif(0.5)
        self.proj = SJPointwise(dim, dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(SJPointwise(dim, hidden), SJPointwise(hidden, dim))

    def forward(self, x):  # [T, B, C, N]
        t, b, c, n = x.shape

        def split(y):  # [T, B, C, N] -> [T, B, H, N, dh]
            return y.reshape(t, b, self.heads, c // self.heads, n).transpose(-1, -2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        a = (q @ (k.transpose(-2, -1) @ v)) * 0.125
        a = self.attn_lif(a.transpose(-1, -2).reshape(t, b, c, n))
        x = x + self.proj(a)
        return x + self.mlp(x)


class SJSpikformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.T, d = cfg.T, cfg.embed_dim
        chans = [cfg.in_channels, d // 8, d // 4, d // 2, d]
        self.stages = nn.Sequential(*(SJConvBNLIF(chans[i], chans[i + 1], i in cfg.pool_stages) for i in range(4)))
        self.rpe = SJConvBNLIF(d, d, False)
        self.blocks = nn.Sequential(*(SJBlock(d, cfg.num_heads, cfg.mlp_ratio) for _ in range(cfg.depth)))
        self.head = nn.Linear(d, cfg.num_classes)

    def forward(self, img):
        x = self.stages(img.unsqueeze(0).repeat(self.T, 1, 1, 1, 1))
        x = (x + self.rpe(x)).flatten(3)  # [T, B, C, N]
        return self.head(self.blocks(x).mean(3).mean(0))


def sj_builtin(cfg):
    from spikingjelly.activation_based.model.spikformer import Spikformer

    class Averaged(nn.Module):  # its head is per time step: average over T
        def __init__(self):
            super().__init__()
            self.net = Spikformer(
                T=cfg.T,
                in_channels=cfg.in_channels,
                img_size_h=cfg.img_size,
                img_size_w=cfg.img_size,
                patch_size=4,
                num_classes=cfg.num_classes,
                embed_dims=cfg.embed_dim,
                num_heads=cfg.num_heads,
                mlp_ratio=cfg.mlp_ratio,
                depths=cfg.depth,
            )

        def forward(self, x):
            return self.net(x).mean(0)

    return Averaged()


def reset(model: nn.Module) -> None:
    from spikingjelly.activation_based import functional

    from spikeport.train.neurons import reset_net

    reset_net(model)
    functional.reset_net(model)


def make_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, amp: bool):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=amp)

    def step():
        with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
            loss = F.cross_entropy(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        reset(model)

    return step


def eager_lif(step):
    """``step`` with the compiled LIF kernels turned off (train.lif_kernels.ENV): MultiStepLIF's eager loop."""
    from spikeport.train import lif_kernels

    def run():
        os.environ[lif_kernels.ENV] = "0"
        try:
            step()
        finally:
            del os.environ[lif_kernels.ENV]

    return run


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_steps(named_steps: dict, rounds: int, per_round: int, device) -> dict[str, float]:
    """Median seconds per step of each entry, measured in interleaved rounds after one warm-up step."""
    for step in named_steps.values():
        step()
    sync(device)
    times = {name: [] for name in named_steps}
    for _ in range(rounds):
        for name, step in named_steps.items():
            t0 = time.perf_counter()
            for _ in range(per_round):
                step()
            sync(device)
            times[name].append((time.perf_counter() - t0) / per_round)
    return {name: statistics.median(v) for name, v in times.items()}


def compare(
    label: str, cfg, batch: int, device, rounds: int, per_round: int, amp: bool = False, builtin: bool = False
) -> dict:
    """images/s of one training step of each model, in interleaved rounds. ``spikeport (default)`` is what
    ``spikeport train`` runs: the default model through ``train.loop.training_net`` (torch.compile on CUDA)."""
    from dataclasses import replace

    from spikeport.train.loop import training_net
    from spikeport.train.models import build_model, count_params

    torch.manual_seed(0)
    default = build_model(cfg)
    models = {"spikeport (default)": training_net(default.to(device), device)}
    if device.type == "cuda":  # the default is compiled there: the eager networks too
        models["spikeport eager (SJ neurons)"] = build_model(replace(cfg, neuron_backend="spikingjelly"))
    else:
        models["spikeport (torch neurons, compiled LIF)"] = build_model(replace(cfg, neuron_backend="torch"))
    models["spikeport (torch neurons, eager LIF)"] = build_model(replace(cfg, neuron_backend="torch"))
    models["SpikingJelly layers"] = SJSpikformer(cfg)
    if builtin:
        models["SJ model.spikformer"] = sj_builtin(cfg)
    ours, ref = count_params(default), sum(p.numel() for p in models["SpikingJelly layers"].parameters())
    assert ours == ref, f"parameter counts differ: spikeport {ours} vs SpikingJelly layers {ref}"
    x = torch.randn(batch, cfg.in_channels, cfg.img_size, cfg.img_size, device=device)
    y = torch.randint(0, cfg.num_classes, (batch,), device=device)
    steps = {name: make_step(m.to(device).train(), x, y, amp) for name, m in models.items()}
    steps["spikeport (torch neurons, eager LIF)"] = eager_lif(steps["spikeport (torch neurons, eager LIF)"])
    sec = time_steps(steps, rounds, per_round, device)
    base = sec["SpikingJelly layers"]
    print(
        f"\n{label}: batch {batch}, T={cfg.T}, D={cfg.embed_dim}, depth {cfg.depth}, {ours:,} params, "
        f"device {device}{f' ({torch.cuda.get_device_name(device)})' if device.type == 'cuda' else ''}"
        f"{', AMP' if amp else ''}"
    )
    print(f"  {'model':<42}{'s/step':>10}{'images/s':>11}{'time vs SJ layers':>20}")
    for name, s in sec.items():
        print(f"  {name:<42}{s:>10.4f}{batch / s:>11.1f}{s / base:>19.2f}x")
    result = {
        "label": label,
        "batch": batch,
        "device": str(device) if device.type != "cuda" else torch.cuda.get_device_name(device),
        "amp": amp,
        "params": ours,
        "seconds_per_step": sec,
        "images_per_s": {n: batch / s for n, s in sec.items()},
        "ratio_vs_sj_layers": {n: s / base for n, s in sec.items()},
    }
    if builtin:
        speedup = sec["SJ model.spikformer"] / sec["spikeport (default)"]
        result["default_over_sj_model_images_per_s"] = speedup
        print(f"  spikeport (default) / SJ model.spikformer, images/s: {speedup:.2f}x")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2: the CI machines)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sections", nargs="+", choices=("cpu", "cuda"), default=["cpu", "cuda"])
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import logging

    logging.getLogger("torch._library.triton").setLevel(logging.ERROR)
    from spikeport.train.presets import preset_config

    cpu = torch.device("cpu")
    print(f"torch {torch.__version__}, {args.threads} CPU threads; median of {args.rounds} interleaved rounds")
    results = []
    if "cpu" in args.sections:
        results.append(compare("digits-tiny (ssa)", preset_config("digits-tiny"), 32, cpu, args.rounds, 3))
        results.append(
            compare(
                "spikformer-4-384 reduced to 2 blocks",
                preset_config("spikformer-4-384", depth=2),
                8,
                cpu,
                args.rounds,
                1,
                builtin=True,
            )
        )
    if "cuda" in args.sections and torch.cuda.is_available():
        gpu = torch.device("cuda")
        torch.backends.cudnn.benchmark = True
        results.append(
            compare(
                "spikformer-4-384", preset_config("spikformer-4-384"), 128, gpu, args.rounds, 10, amp=True, builtin=True
            )
        )
    elif "cuda" in args.sections:
        print("\nno CUDA device: the GPU comparison (spikformer-4-384, batch 128, AMP) was skipped")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"threads": args.threads, "torch": torch.__version__, "results": results}, fh, indent=1)


if __name__ == "__main__":
    main()
