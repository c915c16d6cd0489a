"""attention (SSA, causal): chip-native at every token count a preset uses (docs/lowering.md section 9): fan-out
Sparse -> coincidence LIF per (c, c') of a head -> all-ones Conv over the token grid (SSA: every token; causal: the
raster lags >= 0) -> ProdNeuron (q gate) -> rescale Sparse, in chains of heads; three steps deep (four when split
into chains, each summed by a GradedVec relay). spikeport's AttentionCore on the host only where the user asks for
it (the node's ``placement`` 'host': ``spikeport convert --host-attention``) or the tokens fit no grid."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from spikeport.ir.graph import Node
from spikeport.ir.kernels.attention import head_chains, on_chip as attention_on_chip
from spikeport.runtime.lava.facts import PROCESSES, ProcessFacts, Role
from spikeport.runtime.lava.lowerings.builder import (
    LOWERINGS,
    LavaLowering,
    LavaNetwork,
    arrival,
    inputs_depth,
    out_port,
    sparse_synapse,
)
from spikeport.runtime.lava.lowerings.token_mixing import Mixed, PairLayout, rescale, token_mixing


def _build(net: LavaNetwork, node: Node) -> None:
    """SSA / causal attention. Chip-native (``attention_on_chip``, docs/lowering.md section 9): one coincidence
    pair per (c, c') of a head, u = k[c] AND v[c'], summed over the tokens by a Conv of ones on the token grid (all
    lags for SSA, lags >= 0 for causal) into S[n, c, c'], gated by q[n, c] in a ProdNeuron, then one rescale
    Sparse sums over c (out_mant, exponent out_exp: the kernel is single-signed, so its weights need no factor 2);
    three steps deep. Otherwise (asked for, or no grid) spikeport's AttentionCore on the host."""
    a = node.attrs
    if not attention_on_chip(node):
        from spikeport.runtime.lava.procs.processes import AttentionCore

        proc = AttentionCore(
            shape=node.shape,
            heads=a["heads"],
            variant=a["variant"],
            out_mant=a["out_mant"],
            out_exp=a["out_exp"],
            name=node.name,
        )
        _core(net, node, proc)
        return
    dh, tokens = node.shape[-1] // a["heads"], int(np.prod(node.shape[:-1]))
    kernel = np.ones((1, tokens), np.int64)
    chains = head_chains(node)
    ports = []
    for first, last in chains:
        # pairs in (head, c', c) order: the d_h rows that add into output c' are consecutive (one block), so a
        # segment of the token mixing never splits an output's sum
        h, j, i = (x.ravel() for x in np.meshgrid(np.arange(first, last), np.arange(dh), np.arange(dh), indexing="ij"))
        layout = PairLayout(rows=h.size, groups=1, k=h * dh + i, v=h * dh + j, q=h * dh + i, out=h * dh + j)
        part = "" if len(chains) == 1 else f".heads{first}-{last - 1}"
        mixed = token_mixing(net, node, layout, kernel, full=a["variant"] == "ssa", part=part, block=dh)
        exp = a["out_exp"] - (mixed[0].factor == 2)  # the products are factor S q
        weights = [np.full(m.layout.size, a["out_mant"]) for m in mixed]
        if len(chains) == 1:
            ports += [rescale(net, node, m, w, exp) for m, w in zip(mixed, weights, strict=True)]
        else:
            ports.append(_chain_sum(net, node, mixed, weights, exp, part, first * dh))
    net.synapse_out[node.name] = ports


def _chain_sum(
    net: LavaNetwork, node: Node, mixed: list[Mixed], weights: list[np.ndarray], exp: int, part: str, c0: int
) -> Any:
    """One chain of a split attention: its rescales (one per segment) sum into a GradedVec relay over the chain's
    own channels (so the attention LIF reads N C_chain relay neurons, not the chain's N H d_h^2 products), then an
    identity graded Sparse places them among all C channels; one step deeper than an unsplit attention."""
    from lava.proc.graded.process import GradedVec
    from scipy import sparse

    tokens, channels = int(np.prod(node.shape[:-1])), node.shape[-1]
    width = max(int(m.layout.out.max()) for m in mixed) + 1 - c0  # the chain's channels: c0 .. c0 + width - 1
    relay = GradedVec(shape=(tokens * width,), vth=0, exp=0)
    relay.name = f"{node.name}{part}.sum"  # GradedVec takes no name; check-hw and errors use it
    for m, weight in zip(mixed, weights, strict=True):
        local = replace(m, layout=replace(m.layout, out=m.layout.out - c0))
        rescale(net, node, local, weight, exp, channels=width, delay=0).connect(relay.a_in)
    net.processes.append(relay)
    rows = (np.arange(tokens)[:, None] * channels + c0 + np.arange(width)[None, :]).ravel()
    place = sparse.csr_matrix(
        (np.ones(rows.size, np.int64), (rows, np.arange(rows.size))), shape=(tokens * channels, rows.size)
    )
    start = inputs_depth(net, node)
    proc = sparse_synapse(
        net,
        relay.s_out,
        f"{node.name}{part}.place",
        place,
        delay=arrival(net, node) - (start + 4),
        graded=True,
        weight_exp=0,
    )
    return proc.a_out


def _core(net: LavaNetwork, node: Node, proc: Any) -> None:
    """A host core reading q, k, v (in that order) and feeding its LIF's a_in."""
    for port, src in zip((proc.q_in, proc.k_in, proc.v_in), node.inputs, strict=True):
        out_port(net, src).connect(port)
    net.synapse_out[node.name] = proc.a_out
    net.processes.append(proc)
    net.host_only.append(node.name)


LOWERINGS.add(
    "attention",
    LavaLowering(
        _build,
        lambda node, relays: (4 if len(head_chains(node)) > 1 else 3) if attention_on_chip(node) else 1,
        summary="chip-native: coincidence LIF per (c, c') -> Conv of ones over the token grid -> ProdNeuron (q gate) "
        "-> rescale Sparse; a host AttentionCore where asked for",
    ),
)

PROCESSES.declare(
    # the host fallback: K^T V (or the causal running sum), d_h x d_h per head
    ProcessFacts(
        "AttentionCore",
        Role.HOST_COMPUTE,
        "spikeport runtime/lava/procs/processes.py (PyAttentionCoreModel: kv precision 16)",
        {"kv": 16},
        "q_in",
        host_only="spikeport process: integer Q(K^T V) per time step, fixed_pt model on the host CPU only; "
        "built where the user asks for it (convert --host-attention) or the tokens fit no chip token grid "
        "(more than 64 x 64)",
    ),
)
