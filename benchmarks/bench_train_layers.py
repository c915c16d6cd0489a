"""Two layers of a CPU training step, forward + backward, the fast path against what it replaced, side by side.

- BatchNorm1d + LIF as one compiled node (``train/bn_lif.py``) vs ``F.batch_norm`` then ``lif_kernels.FusedLIF``,
  at digits-tiny's block shapes [T=4, 32 images x 64 tokens, C] for C = 64 (proj, fc2), 192 (q/k/v), 256 (fc1).
- LRF-Dyn's dendritic core (``Dendrites.forward_parallel``): one GEMM per head vs the broadcast matmul that
  ONNX export records, u [T=4, 32, heads 4, 64 tokens, 16].
- The LRF as [C, N, N] matrices (``LocalReceptiveField``): contiguous operands vs the permuted ones it had (torch's
  CPU bmm then copies each channel's matrix on its own), v [T=4, 32, 64 tokens, 64].
- A stem stage (``models.SPS``), conv 3x3 + BatchNorm2d + LIF at the RPE's [T=4 x 32, 64, 8, 8]: the node on
  channels-last memory vs the modules on channels-first.
- Linear + BatchNorm1d + LIF (``bn_lif.linear_bn_lif``, fc1's 64 -> 256): the GEMM without the bias BatchNorm
  cancels vs ``F.linear`` with it.

Interleaved rounds, the median in ms; both sides must agree (spikes but for a rare float32 flip at the threshold,
outputs to rounding) or it stops.

    python benchmarks/bench_train_layers.py [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from spikeport.train import bn_lif
from spikeport.train.attention import Dendrites, LocalReceptiveField
from spikeport.train.bn_lif import BatchNormLIF
from spikeport.train.lif_kernels import FusedLIF
from spikeport.train.neurons import TorchLIF


def median_ms(fns: dict[str, Callable[[], object]], rounds: int, calls: int = 10) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # builds the kernels, warms the allocator
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - start) / calls * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def batch_norm_lif(channels: int, rounds: int) -> dict[str, float]:
    gen = torch.Generator().manual_seed(0)
    y = torch.randn(4, 2048, channels, generator=gen) * 2 + 0.5
    gain, shift = torch.rand(channels, generator=gen) + 0.5, torch.rand(channels, generator=gen) * 0.3
    grad = torch.randn(y.shape, generator=gen)

    def node() -> torch.Tensor:
        x, w, b = y.clone().requires_grad_(), gain.clone().requires_grad_(), shift.clone().requires_grad_()
        spikes = BatchNormLIF.apply(x, w, b, 1e-5, 2.0, 1.0, 4.0)[0]
        spikes.backward(grad)
        return spikes.detach()

    def modules() -> torch.Tensor:
        x, w, b = y.clone().requires_grad_(), gain.clone().requires_grad_(), shift.clone().requires_grad_()
        stats = torch.zeros(channels), torch.ones(channels)
        normed = F.batch_norm(x.reshape(-1, channels), *stats, w, b, True, 0.1, 1e-5).reshape(y.shape)
        spikes = FusedLIF.apply(normed, torch.zeros_like(y[0]), 2.0, 1.0, 4.0)[0]
        spikes.backward(grad)
        return spikes.detach()

    flips = int((node() != modules()).sum())  # float32 statistics summed in another order: a rare spike at threshold
    assert flips <= y.numel() * 1e-5, f"{flips} of {y.numel()} spikes differ from the modules'"
    return {**median_ms({"one node": node, "BatchNorm, then LIF": modules}, rounds), "flips": flips}


def dendrites(rounds: int) -> dict[str, float]:
    core = Dendrites(num_heads=4, num_dendrites=8)
    u0 = torch.rand(4, 32, 4, 64, 16)
    n = u0.shape[-2]
    lag = torch.arange(n)[:, None] - torch.arange(n)[None, :]

    def per_head() -> torch.Tensor:
        u = u0.clone().requires_grad_()
        g = core.forward_parallel(u)
        g.backward(torch.ones_like(g))
        return g.detach()

    def broadcast() -> torch.Tensor:
        u = u0.clone().requires_grad_()
        toeplitz = core.kernel(n)[:, lag.clamp(min=0)] * (lag >= 0)
        g = toeplitz @ u
        g.backward(torch.ones_like(g))
        return g.detach()

    torch.testing.assert_close(per_head(), broadcast())
    return median_ms({"one GEMM per head": per_head, "broadcast matmul": broadcast}, rounds)


def lrf(rounds: int) -> dict[str, float]:
    layer = LocalReceptiveField(64, (8, 8))
    v0 = (torch.rand(4, 32, 64, 64) < 0.2).float()

    def contiguous() -> torch.Tensor:
        v = v0.clone().requires_grad_()
        out = layer(v)
        out.backward(torch.ones_like(out))
        return out.detach()

    def permuted() -> torch.Tensor:
        v = v0.clone().requires_grad_()
        out = torch.bmm(layer.matrices(), v.reshape(128, 64, 64).permute(2, 1, 0)).permute(2, 1, 0).reshape(v.shape)
        out.backward(torch.ones_like(out))
        return out.detach()

    torch.testing.assert_close(contiguous(), permuted())
    return median_ms({"contiguous": contiguous, "permuted": permuted}, rounds)


def stem_stage(rounds: int) -> dict[str, float]:
    torch.manual_seed(0)
    conv, norm = torch.nn.Conv2d(64, 64, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(64)
    x0 = (torch.rand(4, 32, 64, 8, 8) < 0.3).float()

    def node() -> torch.Tensor:
        x = x0.permute(0, 1, 3, 4, 2).contiguous().permute(0, 1, 4, 2, 3)  # channels-last memory, as SPS passes it
        x.requires_grad_()
        y = conv(x.flatten(0, 1)).reshape(4, 32, 64, 8, 8).permute(0, 1, 3, 4, 2)
        lif = TorchLIF()
        spikes = bn_lif.batch_norm_lif([norm], [lif], y).permute(0, 1, 4, 2, 3)
        spikes.backward(torch.ones_like(spikes))
        return spikes.detach()

    def modules() -> torch.Tensor:
        x = x0.clone().requires_grad_()
        y = norm(conv(x.flatten(0, 1))).reshape(x.shape)
        spikes = FusedLIF.apply(y, torch.zeros_like(y[0]), 2.0, 1.0, 4.0)[0]
        spikes.backward(torch.ones_like(spikes))
        return spikes.detach()

    flips = int((node() != modules()).sum())
    assert flips <= x0.numel() * 1e-5, f"{flips} of {x0.numel()} spikes differ from the modules'"
    return {**median_ms({"node, channels-last": node, "modules": modules}, rounds), "flips": flips}


def linear_bn_lif(rounds: int) -> dict[str, float]:
    torch.manual_seed(0)
    linear, norm = torch.nn.Linear(64, 256), torch.nn.BatchNorm1d(256)
    x0 = (torch.rand(4, 32, 64, 64) < 0.3).float()

    def run(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[], torch.Tensor]:
        def go() -> torch.Tensor:
            x = x0.clone().requires_grad_()
            spikes = fn(x)
            spikes.backward(torch.ones_like(spikes))
            return spikes.detach()

        return go

    without = run(lambda x: bn_lif.linear_bn_lif([norm], [TorchLIF()], x, linear.weight, linear.bias))
    with_bias = run(lambda x: bn_lif.batch_norm_lif([norm], [TorchLIF()], F.linear(x, linear.weight, linear.bias)))
    flips = int((without() != with_bias()).sum())
    assert flips <= x0[..., :1].numel() * 256 * 1e-5, f"{flips} spikes differ"
    return {**median_ms({"without the bias": without, "with it": with_bias}, rounds), "flips": flips}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: the demo's)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.rounds} interleaved rounds, ms")
    for channels in (64, 192, 256):
        print(line(f"BatchNorm1d + LIF, C = {channels:3d}", batch_norm_lif(channels, args.rounds)))
    print(line("dendritic core", dendrites(args.rounds)))
    print(line("LRF as matrices", lrf(args.rounds)))
    print(line("stem stage (conv + BatchNorm2d + LIF)", stem_stage(args.rounds)))
    print(line("Linear + BatchNorm1d + LIF", linear_bn_lif(args.rounds)))


def line(what: str, got: dict[str, float]) -> str:
    """'what: fast X, slow Y (ratio; flips)' from a side-by-side result (the fast side first)."""
    (fast_name, fast), (slow_name, slow) = [(k, v) for k, v in got.items() if k != "flips"]
    flips = f"; {got['flips']:.0f} spikes differ" if "flips" in got else ""
    return f"{what}: {fast_name} {fast:6.2f}, {slow_name} {slow:6.2f} ({fast / slow:.2f}x{flips})"


if __name__ == "__main__":
    main()
