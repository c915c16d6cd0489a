"""The counting rules: one module that every count in spikeport comes from (docs/counting.md).

The reference simulator's per-step counter (through the kernel records in ``spikeport.ir.kernels``),
``spikeport info``, the op counts of the ablation, the GPU estimates, the energy and memory reports all
call these functions, so an op is counted the same way everywhere. Two families:

* event counts of one time step from the integer values that flowed (``*_events``): what a neuromorphic
  core does, spike by spike;
* dense operation counts from shapes alone (``*_macs``): what a GPU does for the same layer.

numpy only: the runtime side imports it without torch.
"""
from __future__ import annotations

import functools

import numpy as np

# per-node, per-time-step counters of a run report (schema spikeport.run)
COUNTERS = ("spikes", "synops", "synops_valued", "macs", "neuron_updates", "dendritic_updates",
            "act_overflows")


def conv_out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output positions along one axis of a (torch-semantics) convolution."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


# ----------------------------------------------------------------------------------- dense op counts
def dense_macs(tokens: int, in_features: int, out_features: int) -> int:
    """A token-wise linear layer: one MAC per weight and token."""
    return tokens * in_features * out_features


def conv_macs(out_positions: int, out_channels: int, in_channels: int, groups: int, kernel_taps: int) -> int:
    """A 2-D convolution: (C_in / groups) x taps MACs per output element."""
    return out_positions * out_channels * (in_channels // groups) * kernel_taps


def ssa_macs(tokens: int, channels: int, heads: int) -> int:
    """Q (K^T V) per head: K^T V costs N d_h^2 and Q (K^T V) N d_h^2 MACs per head."""
    dh = channels // heads
    return 2 * tokens * dh * dh * heads


def dendritic_macs_per_element(dendrites: int) -> int:
    """The dendritic recursion per token and channel, k dendrites (DESIGN.md section 2, lrf_dyn):
    A X with A tridiagonal (3k - 2), the soma readout C^T X (k), the q gate q * g (1): 4k - 1.
    Gamma * Token is an accumulate driven by the coincidence spike, counted as k synops, not MACs."""
    return 4 * dendrites - 1


def dendritic_macs(tokens: int, channels: int, dendrites: int) -> int:
    return tokens * channels * dendritic_macs_per_element(dendrites)


# --------------------------------------------------------------------------- event counts (per step)
def dense_events(x: np.ndarray, out_features: int) -> tuple[int, int]:
    """(events, value-weighted) accumulates of a token-wise dense on spikes or integers."""
    return int(np.count_nonzero(x)) * out_features, int(x.sum()) * out_features


def conv_events(x: np.ndarray, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                out_channels: int, groups: int) -> tuple[int, int]:
    """(events, value-weighted) accumulates of a conv on spikes or integers [B, H, W, C], exact at borders:
    every input position drives reach[h, w] (output position, tap) pairs x C_out / groups channels."""
    reach = conv_reach(x.shape[1:3], tuple(kernel), tuple(stride), tuple(padding), tuple(dilation))
    per_out = out_channels // groups
    events = (np.count_nonzero(x, axis=(0, 3)) * reach).sum()
    return int(events) * per_out, int((x.sum(axis=(0, 3)) * reach).sum()) * per_out


@functools.lru_cache(maxsize=256)
def conv_reach(in_hw: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> np.ndarray:
    """[H, W]: how many (output position, tap) pairs read each input position (zero padding excluded)."""
    axes = []
    for size, k, s, p, d in zip(in_hw, kernel, stride, padding, dilation):
        taps = (np.arange(conv_out_size(size, k, s, p, d))[:, None] * s - p + np.arange(k)[None, :] * d).ravel()
        axes.append(np.bincount(taps[(taps >= 0) & (taps < size)], minlength=size))
    return np.outer(*axes).astype(np.int64)


def ssa_events(q: np.ndarray, k: np.ndarray, v: np.ndarray, heads: int) -> int:
    """Accumulates of Q (K^T V) on binary spikes [B, N, C]: per token and head, (non-zero k) x (non-zero v)
    products into K^T V, then d_h per non-zero q to read it."""
    b, n, c = q.shape
    dh = c // heads
    kv = (k.reshape(b, n, heads, dh).sum(-1) * v.reshape(b, n, heads, dh).sum(-1)).sum()
    return int(kv + q.sum() * dh)


def dendritic_events(k: np.ndarray, v: np.ndarray, dendrites: int) -> int:
    """Gamma * Token into k dendrites, once per coincidence k_n * v_n = 1."""
    return int((k * v).sum()) * dendrites
