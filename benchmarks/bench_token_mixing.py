"""One head of SSA's chip-native token mixing at ImageNet shape (14 x 14 = 196 tokens, d_h 64: one of
spikformer-8-512's 8 heads), in the layouts it could take: processes, neurons, stored weights, cores (check-hw's
core model) and the Lava CPU simulator's time per step (issue 34, requirement 1: why the built layout).

  grid-dilated   what runtime/lava/lowerings/token_mixing.py builds: the tokens on the Conv's (X, Y) grid (a 27 x 27
                 kernel), 8 x 8 pair slots a token interleaved by dilation, 64 on Z: one coincidence LIF, one Conv,
                 one ProdNeuron for the head
  grid-z         the same grid with the pairs on Z only: Lava's Conv holds <= 127 groups and the 64 pairs that add
                 into one output stay in one Conv (one floor, as the reference), so 64 segments of 64 pairs, each
                 its own coincidence LIF, Conv, ProdNeuron and rescale (the same lowering, slots forced to 1 x 1);
                 counted whole, timed on 8 of its 64 segments (~450 Lava processes would not fit beside the
                 machine's other work) and scaled by 8
  sparse         the token mixing as a Sparse: each (token, token, pair) synapse stored, N^2 = 38,416 per pair;
                 built and timed on 1/16 of the pairs (256 of 4,096), its cores and time scaled by 16
  token-blocks   the first, 1-D raster layout cut into blocks of 64 tokens (its 127-lag reach): not built. The
                 4 source blocks each need their own coincidence LIF (a Lava port cannot be sliced) and Conv, and
                 the 4 partial sums of a token meet in relay neurons before the q gate: N P more neurons, one more
                 step, and a relay group reading 4 N P inputs (counted below from check-hw's rule)

    python benchmarks/bench_token_mixing.py              # all built layouts (~5 min on 2 cores)
    python benchmarks/bench_token_mixing.py --layouts grid-dilated --steps 4 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

GRID, DH, RATE = (14, 14), 64, 0.1
LAYOUTS = ("grid-dilated", "grid-z", "sparse")
SPARSE_SHARE = 16  # the sparse layout is built on 1 / SPARSE_SHARE of the pairs
Z_TIMED = 8  # grid-z is timed on this many of its 64 segments


def stub(channels: int = DH):
    """A graph of one attention node (1 head) reading three spike layers, read by a LIF: what the attention
    lowering needs to build its processes (depths, the reader's arrival)."""
    from spikeport.ir.graph import Graph, Node

    shape = (*GRID, channels)
    nodes = {"input": Node("input", "input", [], shape=shape)}
    for name in "qkv":
        nodes[name] = Node(name, "lif", ["input"], shape=shape)
    attrs = {"heads": 1, "variant": "ssa", "scale": 0.125, "out_mant": 64, "out_exp": -6}
    nodes["attn"] = Node("attn", "attention", ["q", "k", "v"], attrs=attrs, shape=shape)
    nodes["out"] = Node("out", "lif", ["attn"], shape=shape)
    return Graph(nodes, T=4)


def build(layout: str, keep: int | None = None):
    """(graph, LavaNetwork, its sources) of one head in ``layout`` (``keep``: only the first segments)."""
    from lava.proc.io.source import RingBuffer

    from spikeport.runtime.lava.lowerings import LavaNetwork, attention, token_mixing
    from spikeport.runtime.lava.lowerings.builder import memoryless_lif

    graph = stub()
    n = int(np.prod(graph.nodes["q"].shape))
    rng = np.random.default_rng(0)
    sources = {name: RingBuffer(data=(rng.random((n, 64)) < RATE).astype(np.int32)) for name in "qkv"}
    for name, src in sources.items():
        src.name = name
    depth = {"input": 0, "q": 0, "k": 0, "v": 0, "attn": 3, "out": 3}
    net = LavaNetwork(graph, None, {k: s.s_out for k, s in sources.items()}, {}, depth, 4)
    net.processes += list(sources.values())
    slots, segments = token_mixing.slots, token_mixing.segments
    if layout == "grid-z":
        token_mixing.slots = lambda grid, rows, groups: (1, 1, rows)
    if keep is not None:
        token_mixing.segments = lambda grid, layout, block=1: segments(grid, layout, block)[:keep]
    try:
        attention._build(net, graph.nodes["attn"])
    finally:
        token_mixing.slots, token_mixing.segments = slots, segments
    out = memoryless_lif(n, 1 << 17, "out")
    ports = net.synapse_out["attn"]
    for port in ports if isinstance(ports, list) else [ports]:
        port.connect(out.a_in)
    net.processes.append(out)
    return graph, net, sources


def build_sparse():
    """SSA's token mixing as a Sparse (all-ones N x N per pair) on 1 / SPARSE_SHARE of one head's pairs."""
    from lava.proc.io.source import RingBuffer
    from lava.proc.prodneuron.process import ProdNeuron
    from lava.proc.sparse.process import DelaySparse, Sparse
    from scipy import sparse

    from spikeport.runtime.lava.lowerings.builder import memoryless_lif

    tokens, pairs = math.prod(GRID), DH * DH // SPARSE_SHARE
    n = tokens * pairs
    rng = np.random.default_rng(0)
    coincidences = RingBuffer(data=(rng.random((n, 64)) < RATE * RATE).astype(np.int32))
    q = RingBuffer(data=(rng.random((n, 64)) < RATE).astype(np.int32))
    # (token m, pair p) -> (token n, pair p) for every n: kron(ones(N, N), I_P)
    mix = sparse.kron(np.ones((tokens, tokens), np.int64), sparse.identity(pairs, np.int64), format="csr")
    mixing = Sparse(weights=mix, num_weight_bits=8, num_message_bits=0, name="attn.token_mix")
    product = ProdNeuron(shape=(n,), vth=0, exp=0)
    product.name = "attn.product"
    delay = sparse.identity(n, dtype=np.int64, format="csr")
    q_in = DelaySparse(weights=delay, delays=delay, max_delay=1, num_message_bits=0, name="attn.product<-q")
    coincidences.s_out.connect(mixing.s_in)
    mixing.a_out.connect(product.a_in1)
    q.s_out.connect(q_in.s_in)
    q_in.a_out.connect(product.a_in2)
    out = memoryless_lif(n, 1 << 17, "out")
    rescale = Sparse(weights=sparse.identity(n, dtype=np.int64, format="csr"), num_message_bits=24, name="attn.rescale")
    product.s_out.connect(rescale.s_in)
    rescale.a_out.connect(out.a_in)
    return [coincidences, q, mixing, product, q_in, rescale, out], mix.nnz


def cores_of(graph, net) -> dict:
    """check-hw's count of the built head (the attention LIF 'out' included, the sources on the host)."""
    from spikeport.hw_profiles import load_profile
    from spikeport.runtime.loihi2.check_hw import describe_processes, evaluate

    procs = describe_processes(graph, net, load_profile("loihi2"), host_readout=False)
    result = evaluate(graph, procs, load_profile("loihi2"))
    mixing = [p for p in procs if p.layer == "attn"]
    return {
        "processes": len(mixing),
        "neurons": sum(p.neurons for p in mixing),
        "weights_stored": sum(r["stored_weights"] for r in result.layers if r["layer"] == "attn"),
        "cores": result.cores,
        "cores_high": result.cores_high,
        "floor": result.floor.cores if result.floor else None,
    }


def _group_cores(kind: str, neurons: int, synapses: list[tuple[int, int]]) -> int:
    """The core model's cores (check-hw's, runtime/loihi2/core_model.py) of a group of ``neurons`` fed by weight
    matrices of (input axons, synapses) each, local as these are (an axon reaches the neurons of its own token)."""
    from spikeport.hw_profiles import load_profile
    from spikeport.runtime.loihi2.core_model import CoreModel, Group, SynapseLoad, fit_group

    model = CoreModel.of(load_profile("loihi2"))
    loads = [SynapseLoad(kind, "Sparse", 8, local=(axons, neurons, syn)) for axons, syn in synapses]
    return fit_group(Group(kind, (neurons,), loads), model).cores


def sparse_cores(nnz: int) -> dict:
    """The core model on the full head's Sparse layout: the mixing group's synapses stored one by one."""
    n, tokens = math.prod(GRID) * DH * DH, math.prod(GRID)
    synapses = nnz * SPARSE_SHARE
    cores = (
        _group_cores("ProdNeuron", n, [(n, synapses), (tokens * DH, n)])  # the mixing, q through its identity
        + _group_cores("LIF", n, [(tokens * DH, n), (tokens * DH, n)])  # the coincidence of k and v
        + _group_cores("LIFReset", tokens * DH, [(n, n)])  # the rescale into the attention LIF
    )
    return {"neurons": 2 * n, "weights_stored": synapses + 4 * n, "cores": cores}


def token_block_cores() -> dict:
    """The core model, analytically, on the 1-D raster layout in 64-token blocks (not built)."""
    tokens, p = math.prod(GRID), DH * DH
    blocks, n = math.ceil(tokens / 64), tokens * p
    cores = (
        _group_cores("LIF", n, [(tokens * DH, n), (tokens * DH, n)])  # coincidence
        + _group_cores("GradedVec", n, [(n, n)] * blocks)  # block sums: each token's sum reads every source block
        + _group_cores("ProdNeuron", n, [(n, n), (tokens * DH, n)])  # product
        + _group_cores("LIFReset", tokens * DH, [(n, n)])  # attention LIF
    )
    return {"neurons": 3 * n, "cores": cores, "steps": 4, "convs": blocks**2}


def main(argv: list[str] | None = None) -> dict:
    from spikeport.runtime.lava.compat import import_lava

    import_lava()
    from bench_lava_overhead import time_network

    from spikeport.runtime.lava.backend import release

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--json")
    args = p.parse_args(argv)
    rows = {}
    for layout in args.layouts.split(","):
        t0 = time.perf_counter()
        if layout == "sparse":
            procs, nnz = build_sparse()
            root, row = procs[0], {"built_share": 1 / SPARSE_SHARE, **sparse_cores(nnz)}
        else:
            graph, net, sources = build(layout)
            root, row = sources["q"], cores_of(graph, net)
            if layout == "grid-z":  # timed on Z_TIMED of its segments
                release(net.processes)
                graph, net, sources = build(layout, keep=Z_TIMED)
                root, row["timed_share"] = sources["q"], Z_TIMED / 64
        row["build_s"] = round(time.perf_counter() - t0, 1)
        timing = time_network(root, args.steps, args.repeats, warmup=2, fast=True)
        scale = {"sparse": SPARSE_SHARE, "grid-z": 64 // Z_TIMED}.get(layout, 1)
        row.update(ms_per_step=round(timing["ms_per_step"] * scale, 1), lava_processes=timing["processes"],
                   compile_s=timing["compile_s"], init_s=timing["init_s"])  # fmt: skip
        rows[layout] = row
        print(layout, json.dumps(row), flush=True)
    rows["token-blocks"] = token_block_cores()
    print("token-blocks", json.dumps(rows["token-blocks"]))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
