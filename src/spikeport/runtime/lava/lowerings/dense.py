"""dense: the token-wise layer. lava.proc.conv.Conv 1 x 1 over the token grid (W stored once) on spikes and relay
sums; else (sigma-delta input, a lagged graded input) Sparse / DelaySparse, block-diagonal over the tokens
(kron(I_N, W)), weights 2 * mantissa with exponent - 1 (Lava's 8-bit mixed-sign mode drops one LSB). netx's
axonal delays (a ``delay`` parameter) ride on the DelaySparse, per synapse."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spikeport.chip_limits import MAX_FAN_IN
from spikeport.errors import ConversionError
from spikeport.ir.graph import Node
from spikeport.ir.kernels.dense import parts
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    arrival,
    spike_conv,
    synapse,
)


def _build(net: LavaNetwork, node: Node) -> None:
    """The token-wise layer as a 1 x 1 Conv over the token grid (its kernel W stored once per core, as every
    Conv's) where the sum needs no floor (weight_exp >= 0: Conv applies no exponent, lava#803); otherwise one
    (Delay)Sparse with block-diagonal weights kron(I_N, W), weights 2 * mantissa with exponent - 1. Graded when
    it reads a relay."""
    from scipy import sparse

    a, src = node.attrs, node.inputs[0]
    w = node.params["weight_mant"].astype(np.int64)  # [C_out, C_in]
    lag = arrival(net, node) - net.depth[node.name]
    graded = src in net.stream_out
    # a graded input cannot be delayed through a spike relay; sigma-delta inputs (netx imports) keep the
    # Sparse they were verified with
    conv_ok = (not graded or (src in net.relays and not lag)) and "delay" not in node.params
    if a["weight_exp"] >= 0 and conv_ok:
        grid = token_grid(net.graph.nodes[src].shape)
        spike_conv(net, node, grid, (w << a["weight_exp"])[:, None, None, :], parts=parts(node))
        return
    if parts(node) > 1:
        raise ConversionError(
            f"node '{node.name}' (dense): {a['in_features']:,} inputs per output, past the {MAX_FAN_IN:,} a core "
            "receives, on a Sparse: no partial-sum split for this form"
        )
    tokens = int(np.prod(node.shape[:-1]))
    block = sparse.kron(sparse.identity(tokens, dtype=np.int64, format="csr"), sparse.csr_matrix(2 * w), format="csr")
    block.eliminate_zeros()
    delays = None
    if "delay" in node.params:  # netx's axonal delays, on top of the alignment delay, per synapse
        ident = sparse.identity(tokens, dtype=np.int64, format="csr")
        per_synapse = sparse.kron(ident, sparse.csr_matrix(node.params["delay"].astype(np.int64) + 1), format="csr")
        delays = np.asarray(per_synapse[block.nonzero()]).ravel() - 1  # +1 -1: a delay of 0 is not a sparse zero
    net.synapse_out[node.name] = synapse(
        net, src, node.name, block, arrive=arrival(net, node), weight_exp=a["weight_exp"] - 1, extra_delays=delays
    ).a_out


def token_grid(shape: Sequence[int]) -> tuple[int, int, int]:
    """A token map as Lava's (X, Y, Z) Conv input: (H, W, C) as is, a token sequence (N, C) as (N, 1, C)."""
    if len(shape) == 3:
        return (int(shape[0]), int(shape[1]), int(shape[2]))
    return (int(np.prod(shape[:-1])), 1, int(shape[-1]))


LOWERINGS.add(
    "dense",
    LavaLowering(
        _build,
        lambda node, relays: 1 + (parts(node) > 1),  # a split layer's partial sums pass a relay
        summary="1x1 Conv over the tokens (weight_exp >= 0; past MAX_FAN_IN inputs, partial sums through a relay), "
        "else Sparse kron(I_N, W)",
    ),
)
