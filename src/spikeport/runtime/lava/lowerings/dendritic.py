"""dendritic: chip-native (docs/lowering.md): permutation Sparse -> coincidence LIF -> token-mixing Conv on the token
grid (one kernel per head, K_m at raster lag m) -> ProdNeuron (q gate) -> rescale Sparse per out_exp; three steps
deep."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, steps
from spikeport.runtime.lava.lowerings.token_mixing import PairLayout, rescale, token_mixing


def _build(net: LavaNetwork, node: Node) -> None:
    """The chip-native dendritic attention (docs/lowering.md): ``token_mixing`` with one pair per channel
    (u = k AND v), rows the channels of a head and one group per head, so that each head's kernel K is one Conv
    group, then one rescale Sparse per distinct out_exp (graded: 2 out_mant[h], exponent out_exp[h] - 2 on the
    products 2 g q) into the attention LIF; three steps deep."""
    a = node.attrs
    channels, heads = node.shape[-1], a["heads"]
    dh = channels // heads
    j, h = (x.ravel() for x in np.meshgrid(np.arange(dh), np.arange(heads), indexing="ij"))
    channel = h * dh + j
    layout = PairLayout(rows=dh, groups=heads, k=channel, v=channel, q=channel, out=channel)
    mixed = token_mixing(net, node, layout, node.params["kernel_mant"].astype(np.int64))
    out_mant, out_exp = np.asarray(a["out_mant"]), np.asarray(a["out_exp"])
    ports = []
    for e in sorted(set(out_exp.tolist())):
        for m in mixed:  # the products are factor g q (factor 2 for a mixed-sign kernel, else 1)
            head = m.layout.out // dh
            weight = np.where(out_exp[head] == e, 2 * out_mant[head], 0)
            ports.append(rescale(net, node, m, weight, int(e) - 1 - (m.factor == 2)))
    net.synapse_out[node.name] = ports


LOWERINGS.add(
    "dendritic",
    LavaLowering(
        _build,
        steps(3),
        summary="chip-native: coincidence LIF -> token-mixing Conv (K_m = C^T A^m Gamma) -> ProdNeuron (q gate) "
        "-> rescale Sparse per out_exp",
    ),
)
