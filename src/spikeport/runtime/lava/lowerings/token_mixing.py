"""The chip-native q-gated token mixing that attention (SSA, causal) and dendritic are lowered to
(docs/lowering.md): coincidence pairs k AND v in a memoryless LIF, a token-mixing Conv, a ProdNeuron gated by q,
then a rescale Sparse into the attention LIF. ``PairLayout`` says which channels each pair reads and feeds;
``MixGrid`` where each (token, pair) neuron lies on the Conv.

The tokens lie on the Conv's (X, Y) as their 2-D grid (``counting.token_grid``), so that a kernel of 2 rows - 1 by
2 columns - 1 lags reaches every token (a 14 x 14 ImageNet grid: 27 x 27) where the first, 1-D layout reached 64.
Every mixing is a raster-lag kernel: token n reads token m with weight K[n - m], and n - m = dy columns + dx, so
``w[dy, dx] = K[dy columns + dx]`` is one exact 2-D kernel (SSA: all ones; causal: lags >= 0; dendritic: K_m for
0 <= m < taps). The pairs share the grid: each token is a px x py block of pair slots and the Conv is dilated by
(px, py), so a slot only ever reads the same slot of the other tokens; the remaining pairs go on Z, one kernel per
Conv group (at most CONV_FIELD_MAX). Rows that do not fit one Conv are split into segments, each its own
coincidence LIF, Conv and ProdNeuron, read together by the rescale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from spikeport import chip_limits, counting as C
from spikeport.errors import ConversionError
from spikeport.fixedpoint import STATE_MAX
from spikeport.ir.graph import Node
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LavaNetwork,
    arrival,
    inputs_depth,
    lava_model,
    memoryless_lif,
    sparse_synapse,
    synapse,
)


@dataclass(frozen=True)
class PairLayout:
    """The coincidence pairs of a q-gated token mixing, per token: pair p = row * groups + group reads
    k[k[p]] AND v[v[p]], is gated by q[q[p]] and adds into output channel out[p]. Pairs of one ``group``
    share a token kernel (a Conv group: Lava's Conv takes at most CONV_FIELD_MAX groups)."""

    rows: int
    groups: int
    k: np.ndarray  # [rows * groups] channel indices
    v: np.ndarray
    q: np.ndarray
    out: np.ndarray

    @property
    def size(self) -> int:
        return self.rows * self.groups

    def segment(self, first: int, last: int) -> PairLayout:
        """The pairs of rows [first, last)."""
        sl = slice(first * self.groups, last * self.groups)
        return PairLayout(last - first, self.groups, self.k[sl], self.v[sl], self.q[sl], self.out[sl])


@dataclass(frozen=True)
class Mixed:
    """One segment of a built token mixing: its product neurons' graded ``port``, its pairs, where each (token,
    pair) neuron lies (``index`` [tokens, pairs]) and the factor of its Conv weights (1 for a single-signed kernel,
    else 2: the 8-bit mixed-sign convention of every spikeport synapse, undone by the rescale)."""

    name: str  # the segment's processes are named <name>.coincidence, .token_mix, .product
    port: Any
    layout: PairLayout
    index: np.ndarray
    factor: int
    bound: int  # the largest |token-mixing sum| (and so |product|: q is 0 or 1)


@dataclass(frozen=True)
class MixGrid:
    """Where the (token, pair) neurons of one segment lie on its token-mixing Conv, Lava's (X, Y, Z) =
    (rows px, columns py, groups zr): token (ty, tx) is the px x py block at (ty px, tx py); pair row r is the slot
    (a, b, c) = r in radix (px, py, zr) of every token's block, on channel group * zr + c. The Conv is dilated by
    (px, py) and padded by ((rows - 1) px, (columns - 1) py): each slot reads only its own slot of the tokens."""

    grid: tuple[int, int]  # the token grid (rows, columns)
    px: int
    py: int
    zr: int
    groups: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.grid[0] * self.px, self.grid[1] * self.py, self.groups * self.zr)

    @property
    def tokens(self) -> int:
        return self.grid[0] * self.grid[1]

    def index(self, layout: PairLayout) -> np.ndarray:
        """[tokens, layout.size]: the flat neuron index (Lava's C order over ``shape``) of each (token, pair)."""
        ty, tx = np.divmod(np.arange(self.tokens), self.grid[1])
        row, group = np.divmod(np.arange(layout.size), layout.groups)
        a, rest = np.divmod(row, self.py * self.zr)
        b, c = np.divmod(rest, self.zr)
        x = ty[:, None] * self.px + a[None, :]
        y = tx[:, None] * self.py + b[None, :]
        z = (group * self.zr + c)[None, :]
        _, ys, zs = self.shape
        out: np.ndarray = (x * ys + y) * zs + z
        return out


def slots(grid: tuple[int, int], rows: int, groups: int) -> tuple[int, int, int]:
    """(px, py, zr) for a segment layout: px py slots per token (px | rows, py | rows / px), as many as the
    Conv's padding and dilation fields allow (the most pairs per token block, the fewest Z channels), and zr =
    the rest on Z (<= CONV_FIELD_MAX // groups, else the rows are split into segments by ``segments``)."""
    cap_x = chip_limits.CONV_FIELD_MAX // max(grid[0] - 1, 1)
    cap_y = chip_limits.CONV_FIELD_MAX // max(grid[1] - 1, 1)
    best = (1, 1)
    for px in range(1, min(cap_x, rows) + 1):
        if rows % px:
            continue
        for py in range(1, min(cap_y, rows // px) + 1):
            if (rows // px) % py == 0 and (px * py, -abs(px - py)) > (best[0] * best[1], -abs(best[0] - best[1])):
                best = (px, py)
    px, py = best
    return px, py, rows // (px * py)


def segments(grid: tuple[int, int], layout: PairLayout, block: int = 1) -> list[tuple[PairLayout, MixGrid]]:
    """The layout's rows cut into segments that each fit one Conv (groups zr <= CONV_FIELD_MAX), each a whole
    number of ``block`` rows (the rows that add into one output channel), so that every output is summed by one
    segment's rescale: one floor, as the reference."""
    field = chip_limits.CONV_FIELD_MAX
    if layout.groups > field:
        raise ConversionError(
            f"a token mixing with {layout.groups} kernels (heads): Lava's Conv holds at most {field} groups"
        )
    px, py, zr = slots(grid, layout.rows, layout.groups)
    step = block // math.gcd(block, px * py)  # zr of a segment: a multiple of this
    per = (field // layout.groups) // step * step
    if per == 0:
        raise ConversionError(
            f"a token mixing whose outputs each sum {block} pair rows does not fit one Conv of {field} groups"
        )
    out = []
    for first in range(0, zr, per):
        n = min(per, zr - first)
        out.append((layout.segment(first * px * py, (first + n) * px * py), MixGrid(grid, px, py, n, layout.groups)))
    return out


def lag_kernel(kernel: np.ndarray, tokens: int, full: bool) -> np.ndarray:
    """[groups, 2 tokens - 1]: the weight of raster lag n - m = L at index L + tokens - 1 (``kernel`` [groups, taps]
    the causal lags 0 .. taps - 1; ``full``: lag -L weighs as L, SSA's every token)."""
    taps = min(kernel.shape[1], tokens)
    lags = np.zeros((kernel.shape[0], 2 * tokens - 1), np.int64)
    lags[:, tokens - 1 : tokens - 1 + taps] = kernel[:, :taps]
    if full:
        lags[:, tokens - taps : tokens - 1] = kernel[:, taps - 1 : 0 : -1]
    return lags


def grid_kernel(lags: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """[groups, 2 rows - 1, 2 columns - 1]: w[dy + rows - 1, dx + columns - 1] = lags[dy columns + dx]: the raster-lag
    kernel on the token grid (each source token has one (dy, dx), so the 2-D Conv computes the same sum)."""
    rows, cols = grid
    tokens = rows * cols
    dy = np.arange(-(rows - 1), rows)[:, None]
    dx = np.arange(-(cols - 1), cols)[None, :]
    out: np.ndarray = lags[:, dy * cols + dx + tokens - 1]
    return out


def check_accumulator(node: Node, what: str, bound: int) -> None:
    """The 24-bit rule: a sum whose worst case exceeds the chip's signed 24-bit accumulator is refused."""
    if bound > STATE_MAX - 1:
        raise ConversionError(
            f"node '{node.name}' ({node.op}): {what} reaches {bound:,} in the worst case, past the signed 24-bit "
            f"accumulator ({STATE_MAX - 1:,})"
        )


def token_mixing(
    net: LavaNetwork,
    node: Node,
    layout: PairLayout,
    kernel: Any,
    full: bool = False,
    part: str = "",
    block: int = 1,
) -> list[Mixed]:
    """The chip-native core of a q-gated token mixing (dendritic, SSA, causal; docs/lowering.md): per segment,
    coincidence LIF (k AND v per pair) -> token-mixing Conv on the token grid (``kernel`` [groups, taps] the causal
    raster lags; ``full``: the anti-causal lags mirror it) -> ProdNeuron gated by q. The products are two steps
    after the latest input (the rescale synapse is the third). ``part`` names one of several such chains;
    ``block``: the consecutive rows that add into one output (a segment never splits them)."""
    from lava.proc.conv.process import Conv
    from lava.proc.prodneuron.process import ProdNeuron
    from scipy import sparse

    q, k, v = node.inputs
    channels = node.shape[-1]
    grid = C.token_grid(node.shape[:-1])
    if grid is None:
        raise ConversionError(
            f"node '{node.name}' ({node.op}): its {int(np.prod(node.shape[:-1])):,} tokens fit no token grid of sides "
            f"<= {chip_limits.CHIP_GRID_SIDE} (the chip-native token mixing's Conv kernel)"
        )
    tokens = grid[0] * grid[1]
    kernel = np.asarray(kernel, np.int64)
    factor = 1 if kernel.min() >= 0 or kernel.max() <= 0 else 2
    lags = lag_kernel(kernel, tokens, full)
    weights = factor * grid_kernel(lags, grid)  # [groups, 2 rows - 1, 2 cols - 1]
    # the largest sum one token can receive: token n reads the lags n - m of the N tokens m, L in [n - N + 1, n]
    window = np.cumsum(np.abs(lags), axis=1)  # [groups, 2 N - 1]: sum of |lag| up to index i
    reach = window[:, tokens - 1 :] - np.pad(window, ((0, 0), (1, 0)))[:, :tokens]
    bound = factor * int(reach.max())
    check_accumulator(node, "the token-mixing sum", bound)
    start = inputs_depth(net, node)
    try:
        segs = segments(grid, layout, block)
    except ConversionError as e:
        raise ConversionError(f"node '{node.name}' ({node.op}): {e}") from None
    out = []
    for i, (seg, mix) in enumerate(segs):
        name = f"{node.name}{part}{f'.seg{i}' if len(segs) > 1 else ''}"
        index = mix.index(seg)

        def select(channel: np.ndarray, index: np.ndarray = index) -> Any:
            """0/1 [pair neurons, tokens * channels]: channel[p] of each token onto its (token, pair) neuron."""
            cols = (np.arange(tokens)[:, None] * channels + channel[None, :]).ravel()
            ones = np.ones(cols.size, np.int64)
            return sparse.csr_matrix((ones, (index.ravel(), cols)), shape=(index.size, tokens * channels))

        coincidence = memoryless_lif(index.size, 1, f"{name}.coincidence")  # a_in 2 (k and v) > vth 1
        net.processes.append(coincidence)
        for src, channel in ((k, seg.k), (v, seg.v)):
            proc = synapse(net, src, coincidence.name, select(channel), arrive=start + 1, weight_exp=0)
            proc.a_out.connect(coincidence.a_in)
        # Lava's Conv convolves (flips its kernel): with padding (rows - 1) px and dilation px, the weight at
        # index dy + rows - 1 puts row lag dy on token row ty - dy, and the same along Y (docs/lowering.md)
        mix_conv = Conv(
            weight=np.repeat(weights, mix.zr, axis=0)[:, :, :, None].astype(np.int32),
            weight_exp=0,
            input_shape=mix.shape,
            padding=((grid[0] - 1) * mix.px, (grid[1] - 1) * mix.py),
            stride=(1, 1),
            dilation=(mix.px, mix.py),
            groups=mix.shape[2],
            num_weight_bits=8,
            num_message_bits=0,
            name=f"{name}.token_mix",
        )
        coincidence.s_out.reshape(mix.shape).connect(mix_conv.s_in)
        product = ProdNeuron(shape=(index.size,), vth=0, exp=0)
        product.name = f"{name}.product"  # ProdNeuron takes no name; check-hw and errors use it
        mix_conv.a_out.reshape((index.size,)).connect(product.a_in1)
        synapse(net, q, product.name, select(seg.q), arrive=start + 2, weight_exp=0).a_out.connect(product.a_in2)
        net.processes += [mix_conv, product]
        out.append(Mixed(name, product.s_out, seg, index, factor, bound))
    return out


def rescale(
    net: LavaNetwork,
    node: Node,
    mixed: Mixed,
    weight: np.ndarray,
    exp: int,
    channels: int | None = None,
    delay: int | None = None,
) -> Any:
    """A graded Sparse summing the gated products of one segment into their output channels (``weight`` [its
    pairs], exponent ``exp``; every output it feeds is summed here alone: one floor, as the reference), arriving
    at the attention LIF's depth (or after ``delay`` steps, into ``channels`` outputs per token when a chain's
    relay reads it)."""
    from scipy import sparse

    tokens = mixed.index.shape[0]
    channels = node.shape[-1] if channels is None else channels
    rows = (np.arange(tokens)[:, None] * channels + mixed.layout.out[None, :]).ravel()
    vals = np.broadcast_to(np.asarray(weight, np.int64)[None, :], mixed.index.shape).ravel()
    keep = vals != 0
    weights = sparse.csr_matrix(
        (vals[keep], (rows[keep], mixed.index.ravel()[keep])), shape=(tokens * channels, mixed.index.size)
    )
    check_accumulator(node, "the rescale's sum", int(np.asarray(abs(weights).sum(axis=1)).max()) * mixed.bound)
    start = inputs_depth(net, node)
    delay = arrival(net, node) - (start + 3) if delay is None else delay
    name = f"{mixed.name}.rescale_exp{exp}"
    return sparse_synapse(net, mixed.port, name, weights, delay=delay, graded=True, weight_exp=exp).a_out


# the q-gated product (a_in1: the token mixing, a_in2: q)
PROCESSES.declare(
    ProcessFacts("ProdNeuron", Role.NEURON, lava_model("prodneuron", "PyProdNeuronModelFixed"), {"v": 24}, "a_in1")
)
