"""dendritic: chip-native (docs/lowering.md): permutation Sparse -> coincidence LIF -> token-mixing Conv
(groups = H) -> ProdNeuron (q gate) -> rescale Sparse per out_exp; three steps deep."""

from __future__ import annotations

import numpy as np

from spikeport.ir.graph import Node
from spikeport.runtime.lava.lowerings.builder import LOWERINGS, LavaLowering, LavaNetwork, steps
from spikeport.runtime.lava.lowerings.token_mixing import PairLayout, rescale, token_mixing


def _build(net: LavaNetwork, node: Node) -> None:
    """The chip-native dendritic attention (docs/lowering.md): ``token_mixing`` with one pair per channel
    (u = k AND v), laid out (token, channel in head, head) so that each head's kernel K is one Conv group,
    then one rescale Sparse per distinct out_exp (graded: 2 out_mant[h], exponent out_exp[h] - 2) into the
    attention LIF; three steps deep."""
    a = node.attrs
    channels, heads = node.shape[-1], a["heads"]
    dh = channels // heads
    j, h = (x.ravel() for x in np.meshgrid(np.arange(dh), np.arange(heads), indexing="ij"))
    channel = h * dh + j
    layout = PairLayout(rows=dh, groups=heads, k=channel, v=channel, q=channel, out=channel)
    product = token_mixing(net, node, layout, node.params["kernel_mant"].astype(np.int64))
    out_mant, out_exp = np.asarray(a["out_mant"]), np.asarray(a["out_exp"])
    net.synapse_out[node.name] = [
        rescale(net, node, product, layout, np.where(out_exp[h] == e, 2 * out_mant[h], 0), int(e) - 2)
        for e in sorted(set(out_exp.tolist()))
    ]


LOWERINGS.add(
    "dendritic",
    LavaLowering(
        _build,
        steps(3),
        summary="chip-native: coincidence LIF -> token-mixing Conv (K_m = C^T A^m Gamma) -> ProdNeuron (q gate) "
        "-> rescale Sparse per out_exp",
    ),
)
