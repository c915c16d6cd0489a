"""The counting rules: one module that every count in spikeport comes from (docs/counting.md).

The reference simulator's per-step counter (through the kernel records in ``spikeport.ir.kernels``),
``spikeport info`` (``train/info.py``), the ablation's op table (``analysis/opcount.py``), the GPU estimate
(``baselines/gpu.py``), the energy and memory reports all call these functions, so an op is counted the
same way everywhere. Three families:

* event counts of one time step from the integer values that flowed (``*_events``): what a neuromorphic
  core does, spike by spike;
* dense operation counts from shapes alone (``*_macs``): what a GPU does for the same layer;
* state and parameter sizes of the attention cores (``*_entries``, ``*_params``).

numpy only: the runtime side imports it without torch. Functions take plain ints, arrays, or a duck-typed
model config (``attention_core``, ``core_macs``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from spikeport.chip_limits import CHIP_GRID_SIDE, MAX_FAN_IN
from spikeport.model_shape import ModelShape


def conv_out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Output positions along one axis of a (torch-semantics) convolution."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


# ----------------------------------------------------------------------------------- dense op counts
# Per sample and time step, from shapes alone: what a dense processor (a GPU) computes for the layer,
# every input treated as non-zero. ``spikeport info``, the ablation's op table and the GPU estimate use
# these; the event counts below are what an event-driven core does with the values that actually flow.


def dense_macs(tokens: int, in_features: int, out_features: int) -> int:
    """A token-wise linear layer, or any (tokens x in) @ (in x out) product: one MAC per weight and token."""
    return tokens * in_features * out_features


def conv_macs(c_in: int, c_out: int, kernel: int | Sequence[int], h_out: int, w_out: int = 1, groups: int = 1) -> int:
    """A convolution: taps x (c_in / groups) MACs per output element, c_out x h_out x w_out elements.
    ``kernel``: k (a square k x k kernel) or the kernel's sizes (any number of axes); a 1-D convolution
    passes its output length as ``h_out``. The spiking-transformer papers call this count FLOPs."""
    taps = kernel * kernel if isinstance(kernel, int) else math.prod(kernel)
    return taps * (c_in // groups) * c_out * h_out * w_out


def ssa_macs(tokens: int, channels: int, heads: int) -> int:
    """Q (K^T V) per head: K^T V costs N d_h^2 and Q (K^T V) N d_h^2 MACs per head."""
    dh = channels // heads
    return 2 * tokens * dh * dh * heads


def causal_macs(tokens: int, channels: int, heads: int) -> int:
    """The causal core in its running-sum form (what the runtime executes): per token and head,
    S_n += k_n^T v_n (d_h^2) and q_n S_n (d_h^2); the same total as ssa_macs."""
    return ssa_macs(tokens, channels, heads)


def softmax_attention_macs(tokens: int, channels: int) -> int:
    """The ANN's softmax(Q K^T / sqrt(d_h)) V: Q K^T costs N^2 d and A V N^2 d MACs (softmax not counted)."""
    return 2 * tokens * tokens * channels


def dendritic_macs_per_element(dendrites: int) -> int:
    """The dendritic recursion per token and channel, k dendrites (DESIGN.md section 2, lrf_dyn):
    A X with A tridiagonal (3k - 2), the soma readout C^T X (k), the q gate q * g (1): 4k - 1.
    Gamma * Token is an accumulate driven by the coincidence spike, counted as k synops, not MACs."""
    return 4 * dendrites - 1


def dendritic_macs(tokens: int, channels: int, dendrites: int) -> int:
    return tokens * channels * dendritic_macs_per_element(dendrites)


def inference_macs(per_step: int, once: int, timesteps: int) -> int:
    """MACs of one inference: the per-time-step layers run T times, the head once (after the mean over
    time steps; an ANN passes T = 1)."""
    return timesteps * per_step + once


# ------------------------------------------------------------------------------- attention cores
@dataclass(frozen=True)
class Core:
    """The token mixing of one attention family, beyond its Q/K/V/proj projections and LRF convs.
    Shape functions take (tokens, channels, heads, dendrites) and count one sample and time step."""

    name: str
    op: str  # its row in the static tables (spikeport info)
    macs: Callable[[int, int, int, int], int]  # dense view: every product, spikes or not
    dynamics_macs: Callable[[int, int, int, int], int]  # event view: MACs on non-spike state, every step
    # event view: (q, k, v spikes [B, N, C], heads, dendrites) -> the accumulates the spikes drive
    synops: Callable[[np.ndarray, np.ndarray, np.ndarray, int, int], int] | None


def _none(n: int, d: int, h: int, k: int) -> int:
    return 0


CORES = {
    c.name: c
    for c in (
        Core(
            "softmax",
            "softmax_attention",
            lambda n, d, h, k: softmax_attention_macs(n, d),
            lambda n, d, h, k: softmax_attention_macs(n, d),
            None,
        ),  # an ANN: no spikes, all MACs
        Core(
            "ssa",
            "ssa_kTv_q",
            lambda n, d, h, k: ssa_macs(n, d, h),
            _none,
            lambda q, k, v, h, kd: ssa_events(q, k, v, h),
        ),
        Core(
            "causal",
            "causal_running_sum",
            lambda n, d, h, k: causal_macs(n, d, h),
            _none,
            lambda q, k, v, h, kd: ssa_events(q, k, v, h),
        ),
        Core(
            "dendritic",
            "dendritic_recursion",
            lambda n, d, h, k: dendritic_macs(n, d, k),
            lambda n, d, h, k: dendritic_macs(n, d, k),
            lambda q, k, v, h, kd: dendritic_events(k, v, kd),
        ),
    )
}


def attention_core(cfg: ModelShape) -> Core:
    """The core of a model config (duck-typed: ``arch``, ``attention_spec``): the ViT's softmax attention
    or the Spikformer's token mixing (its spec's core; the LRF term is a pair of depthwise convs, counted
    as convs)."""
    return CORES["softmax" if cfg.arch == "vit" else cfg.attention_spec.core]


def core_macs(cfg: ModelShape, tokens: int) -> int:
    """Dense MACs of one attention's token mixing per sample and time step (``cfg``: ``embed_dim``,
    ``num_heads``, ``num_dendrites``, and what ``attention_core`` reads)."""
    return attention_core(cfg).macs(tokens, cfg.embed_dim, cfg.num_heads, cfg.num_dendrites)


# --------------------------------------------------------------------------- event counts (per step)
# Written once against a ``CountOps`` backend, as the kernels' steps are written against ``fixedpoint.Ops``: numpy
# here (``NUMPY``, the default: the reference, the Lava replay, info and the ablation), torch tensors on the device
# in runtime/sim/torch_reference.py (``TorchCounts``: the reference-torch target, counts read back once per run).
Axis = int | tuple[int, ...] | None


class CountOps(Protocol):
    """The counting primitives. Over a whole array they return a scalar of the backend (numpy: a Python int;
    torch: a float64 0-dim tensor holding an exact integer), over ``axis`` an array of the backend; ``size`` and
    what the shapes decide are Python ints on every backend. Every count is an exact integer."""

    def size(self, x: Any) -> int: ...
    def nonzero(self, x: Any, axis: Axis = None) -> Any: ...  # entries != 0
    def total(self, x: Any, axis: Axis = None) -> Any: ...  # the exact sum of integer values
    def abs_total(self, x: Any, axis: Axis = None) -> Any: ...  # sum |x|
    def beyond(self, x: Any, limit: float) -> Any: ...  # entries with |x| >= limit
    def constant(self, x: np.ndarray) -> Any: ...  # a numpy constant (a reach table) in the backend's type
    # the graded messages of the chip-native SSA / causal product neurons on spikes q, k, v [B, N, H, d_h]: a
    # formula a backend computes its own way (numpy: bit words; torch: GEMMs), held equal by the tests
    def coincidence_messages(self, q: Any, k: Any, v: Any, causal: bool) -> Any: ...


def total(x: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """The exact sum of an integer-valued array of any dtype: the reference's float32 spikes are summed in
    float64 (a float32 sum rounds past 2**24)."""
    summed: np.ndarray = x.sum(axis=axis, dtype=np.float64 if x.dtype.kind == "f" else None)  # numpy types it Any
    return summed


def count_beyond(x: np.ndarray, limit: float) -> int:
    """How many entries have |x| >= limit (one max/min pass when none do, the common case)."""
    if x.size == 0 or (x.max() < limit and x.min() > -limit):
        return 0
    return int(np.count_nonzero(np.abs(x) >= limit))


def abs_total(x: np.ndarray, axis: int | tuple[int, ...] | None = None) -> Any:
    """sum |x|, exactly (one pass when x >= 0: spikes); an int over the whole array."""
    s = total(x if x.size == 0 or x.min() >= 0 else np.abs(x), axis)
    return int(s) if axis is None else s


class NumpyCounts:
    """``CountOps`` on numpy arrays of any dtype holding integers."""

    @staticmethod
    def size(x: Any) -> int:
        return int(np.size(x))

    @staticmethod
    def nonzero(x: Any, axis: Axis = None) -> Any:
        return int(np.count_nonzero(x)) if axis is None else np.count_nonzero(x, axis=axis)

    @staticmethod
    def total(x: Any, axis: Axis = None) -> Any:
        s = total(np.asarray(x), axis)
        return int(s) if axis is None else s

    @staticmethod
    def abs_total(x: Any, axis: Axis = None) -> Any:
        return abs_total(np.asarray(x), axis)

    @staticmethod
    def beyond(x: Any, limit: float) -> int:
        return count_beyond(np.asarray(x), limit)

    @staticmethod
    def constant(x: np.ndarray) -> np.ndarray:
        return x

    @staticmethod
    def coincidence_messages(q: Any, k: Any, v: Any, causal: bool) -> int:
        """S_n[c, c'] > 0 once a coincidence k_j[c] v_j[c'] = 1 has come (causal: from its first token j on; ssa: S
        holds every token, so from token 0 if it comes at all): q_n[c] sends for each such n, so the messages are
        the sums of q from each pair's start to the end."""
        # float32 holds these counts exactly (each <= N * d_h, far below 2**24); int64 runs 10x slower
        qh = np.asarray(q, np.float32)
        if not causal:  # S holds every token: a pair sends for all of q once K^T V has it, one GEMM per head
            held = np.matmul(
                np.asarray(k, np.float32).transpose(0, 2, 3, 1), np.asarray(v, np.float32).transpose(0, 2, 1, 3)
            )
            reached = np.count_nonzero(held > 0, axis=-1)  # [B, H, d_h]: the pairs (c, c') q_n[c] sends for
            return int(np.sum(qh.sum(axis=1, dtype=np.float64) * reached))
        start = first_coincidence(np.asarray(k), np.asarray(v))  # [B, H, d_h, d_h], N where none
        q_from = np.concatenate([np.cumsum(qh[:, ::-1], axis=1)[:, ::-1], np.zeros_like(qh[:, :1])], axis=1)
        return int(total(np.take_along_axis(q_from.transpose(0, 2, 3, 1), start, axis=-1)))


NUMPY = NumpyCounts()


def dense_events(x: Any, out_features: int, binary: bool = False, ops: CountOps = NUMPY) -> tuple[Any, Any]:
    """(events, value-weighted) accumulates of a token-wise dense on spikes or integers (|value| for signed
    graded messages); ``binary``: x holds 0/1 spikes (the two counts agree)."""
    events = ops.nonzero(x) * out_features
    return events, events if binary else ops.abs_total(x) * out_features


def conv_events(
    x: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    out_channels: int,
    groups: int,
    binary: bool = False,
    ops: CountOps = NUMPY,
) -> tuple[Any, Any]:
    """(events, value-weighted) accumulates of a conv on spikes or integers [B, H, W, C], exact at borders:
    every input position drives reach[h, w] (output position, tap) pairs x C_out / groups channels;
    ``binary``: x holds 0/1 spikes (the two counts agree)."""
    reach = ops.constant(conv_reach(tuple(x.shape[1:3]), tuple(kernel), tuple(stride), tuple(padding), tuple(dilation)))
    per_out = out_channels // groups
    events = ops.total(ops.nonzero(x, axis=(0, 3)) * reach) * per_out
    if binary:
        return events, events
    return events, ops.total(ops.abs_total(x, axis=(0, 3)) * reach) * per_out


@functools.lru_cache(maxsize=256)
def conv_reach(
    in_hw: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
) -> np.ndarray:
    """[H, W]: how many (output position, tap) pairs read each input position (zero padding excluded)."""
    axes = []
    for size, k, s, p, d in zip(in_hw, kernel, stride, padding, dilation, strict=True):
        taps = (np.arange(conv_out_size(size, k, s, p, d))[:, None] * s - p + np.arange(k)[None, :] * d).ravel()
        axes.append(np.bincount(taps[(taps >= 0) & (taps < size)], minlength=size))
    return np.outer(*axes).astype(np.int64)


def _head_sums(x: Any, heads: int, ops: CountOps) -> Any:
    """[B, N, C] -> per sample, token and head, the sum over the head's channels [B, N, H]."""
    b, n, c = x.shape
    return ops.total(x.reshape(b, n, heads, c // heads), -1)


def ssa_events(q: Any, k: Any, v: Any, heads: int, ops: CountOps = NUMPY) -> Any:
    """Accumulates of Q (K^T V) on binary spikes [B, N, C]: per token and head, (non-zero k) x (non-zero v)
    products into K^T V, then d_h per non-zero q to read it. The causal core's running sum
    (S_n += k_n^T v_n, read by q_n) drives the same accumulates."""
    dh = q.shape[-1] // heads
    return ops.total(_head_sums(k, heads, ops) * _head_sums(v, heads, ops)) + ops.total(q) * dh


def dendritic_events(k: np.ndarray, v: np.ndarray, dendrites: int) -> int:
    """Gamma * Token into k dendrites, once per coincidence k_n * v_n = 1."""
    return int(total(k * v)) * dendrites


@functools.lru_cache(maxsize=64)
def token_reach(tokens: int, taps: int | None) -> np.ndarray:
    """[N]: the tokens n >= j a coincidence at token j reaches through a causal kernel of ``taps`` lags (all the
    remaining ones for None)."""
    remaining = tokens - np.arange(tokens)
    return remaining if taps is None else np.minimum(taps, remaining)


def token_mix_events(q: Any, k: Any, v: Any, taps: int, ops: CountOps = NUMPY) -> Any:
    """Binary synops of the chip-native dendritic attention (docs/lowering.md) on spikes [B, N, C]: the
    identity synapses of q, k and v (one per spike) and, per coincidence k_j v_j = 1, the token-mixing
    synapses to the min(taps, N - j) tokens n >= j it reaches."""
    per_token = ops.total(k * v, axis=(0, 2))  # coincidences at token j
    reach = ops.constant(token_reach(k.shape[1], taps))
    return ops.total(q) + ops.total(k) + ops.total(v) + ops.total(per_token * reach)


def token_grid(spatial: Sequence[int]) -> tuple[int, int] | None:
    """The (rows, columns) grid the chip-native token mixing lays ``spatial``'s tokens on, in raster order: the
    token grid itself where both sides fit CHIP_GRID_SIDE, else the raster sequence folded into the squarest grid
    of sides <= CHIP_GRID_SIDE (a raster lag n - m is dy * columns + dx on any such grid); None where none holds
    the tokens (more than 4,096, or a count with no such factors)."""
    dims = [int(d) for d in spatial] or [1]
    if len(dims) == 2 and max(dims) <= CHIP_GRID_SIDE:
        return dims[0], dims[1]
    n = math.prod(dims)
    rows = [r for r in range(1, CHIP_GRID_SIDE + 1) if n % r == 0 and n // r <= CHIP_GRID_SIDE and r * r <= n]
    return (rows[-1], n // rows[-1]) if rows else None


def fan_in_parts(taps: int, channels: int) -> int:
    """Into how many partial sums a synapse whose output neuron reads ``channels`` input channels over ``taps``
    kernel positions (fan-in taps x channels) is split: the fewest s dividing ``channels`` with taps x channels / s
    <= MAX_FAN_IN; 1 where it fits, ``channels`` where no divisor does (one channel a part)."""
    if taps * channels <= MAX_FAN_IN:
        return 1
    fits = (s for s in range(2, channels + 1) if channels % s == 0 and taps * channels // s <= MAX_FAN_IN)
    return next(fits, channels)


def pair_mix_counts(q: Any, k: Any, v: Any, heads: int, causal: bool, ops: CountOps = NUMPY) -> tuple[Any, Any]:
    """(binary synops, graded messages) of the chip-native SSA / causal attention (docs/lowering.md) on spikes
    [B, N, C]: each q, k and v spike drives d_h pair synapses; each coincidence k_j[c] v_j[c'] = 1 drives the
    all-ones token synapses to the N (ssa) or N - j (causal) tokens it reaches; a product neuron sends where
    q_n[c] S_n[c, c'] != 0, one rescale synapse each (``CountOps.coincidence_messages``)."""
    b, n, c = q.shape
    dh = c // heads
    per_token = ops.total(_head_sums(k, heads, ops) * _head_sums(v, heads, ops), axis=(0, 2))  # coincidences at j
    reach = ops.constant(token_reach(n, None) if causal else _all_tokens(n))
    synops = (ops.total(q) + ops.total(k) + ops.total(v)) * dh + ops.total(per_token * reach)
    qh, kh, vh = (x.reshape(b, n, heads, dh) for x in (q, k, v))
    return synops, ops.coincidence_messages(qh, kh, vh, causal)


@functools.lru_cache(maxsize=64)
def _all_tokens(tokens: int) -> np.ndarray:
    """[N]: N at every token (an SSA coincidence reaches every token)."""
    return np.full(tokens, tokens)


def first_coincidence(k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The first token j with k_j[c] v_j[c'] = 1, per sample, head and pair (c, c'), N where there is none:
    k, v [B, N, H, d_h] spikes -> [B, H, d_h, d_h] int64. Each (c) holds its spike train as the bits of a
    64-bit word, 64 tokens at a time: the pair's coincidences are one AND, the first one its lowest set bit."""
    b, n, heads, dh = k.shape
    first = np.full((b, heads, dh, dh), n, np.int64)
    for t0 in range(0, n, 64):
        bit = np.uint64(1) << np.arange(min(64, n - t0), dtype=np.uint64)
        kb, vb = ((x[:, t0 : t0 + 64].transpose(0, 2, 3, 1) > 0) @ bit for x in (k, v))  # [B, H, d_h] words
        both = kb[..., :, None] & vb[..., None, :]
        lowest = both & (~both + np.uint64(1))  # two's complement: only the lowest set bit
        at = t0 + np.frexp(lowest.astype(np.float64))[1] - 1  # 2**j -> j (powers of two convert exactly)
        new = (both != 0) & (first == n)
        first[new] = at[new]
    return first


def pair_mix_neurons(tokens: int, channels: int, heads: int) -> int:
    """Neuron updates per step of the chip-native SSA / causal attention: a coincidence LIF and a product
    neuron per token and (c, c') pair of a head."""
    return 2 * tokens * heads * (channels // heads) ** 2


def token_mix_neurons(tokens: int, channels: int) -> int:
    """Neuron updates per step of the chip-native dendritic attention: a coincidence LIF and a product neuron
    per token and channel."""
    return 2 * tokens * channels


# ------------------------------------------------------------------------------ state and parameters
def kv_state_entries(channels: int, heads: int) -> int:
    """Entries of K^T V (ssa) or of the running sum S (causal): a d_h x d_h matrix per head."""
    dh = channels // heads
    return heads * dh * dh


def dendritic_state_entries(channels: int, dendrites: int) -> int:
    """Entries of the dendritic potentials X: k per channel (k x d)."""
    return dendrites * channels


def dendritic_params(heads: int, dendrites: int) -> int:
    """Parameters of the dendritic core per attention: per head, k decays (the diagonal of A), k - 1
    couplings (its off-diagonals), Gamma and C (k each): 4k - 1."""
    return heads * (3 * dendrites + max(dendrites - 1, 0))
