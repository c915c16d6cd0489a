"""spikeport's Lava graph vs a plain netx network with the same LIF layers and synapses, per time step.

Issue 4 goal: the converted network costs at most 1.5x the per-step wall time of a plain netx network with
the same neuron and synapse counts (Lava's own per-process overhead is the floor).

The spikeport side is digits-tiny converted to fixed point (tests' ``spiky_model``: every layer fires)
and built by ``runtime.lava_backend.build_network``: standard Conv / Sparse / DelaySparse / LIFReset
processes plus spikeport's host-side AnalogConv, AttentionCore and DendriticCore.

The netx side is a lava-dl netx HDF5 network (loaded by ``lava.lib.dl.netx.hdf5.Network``) with one
conv + CUBA block per LIF node of the spikeport graph, in the same order, on the same 8x8 grid with the
same channel count (so the same neurons per layer) and the same kernel as the synapse that drives that
LIF (1x1 for token-wise dense layers and for the LIFs fed by an attention core, which have no synapses in
spikeport). Input channels follow the chain, so synapse counts differ a little: both are printed.
Weights are random even integers, input spikes random (rate 0.1), so the netx network's activity is not
the converted network's: the figure is the cost of the process graph, not of the same computation.

Both run with ``Loihi2SimCfg(select_tag="fixed_pt")`` and spikeport's bit-exact fast CPU models of Conv /
Sparse / DelaySparse (Lava's own Conv model costs ~65 ms per 8x8x64 1x1 layer per step, which would swamp
both), interleaved, medians of ``--repeats`` runs of ``--steps`` steps after a warm-up.

    python benchmarks/bench_lava_vs_netx.py [--attention ssa --attention lrf_dyn] [--steps 64 --repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from bench_lava_overhead import sink_for, time_networks, write_cuba  # noqa: E402


def spikeport_network(attention: str):
    """(graph, LavaNetwork) of digits-tiny with every layer firing, fed with test-like images."""
    from conftest import quantized_graph, random_images, spiky_model

    from spikeport.runtime import lava_backend as LB
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.lava_run import pixel_stream

    graph = quantized_graph(spiky_model(attention), random_images(16, seed=1))
    images = to_channels_last(random_images(16, seed=3).numpy())
    net = LB.build_network(graph, pixel_stream(graph, images, LB.reset_interval(graph.T), 0))
    return graph, net


def count_synapses(net) -> int:
    """Synapses held by the Lava processes: non-zeros of Sparse blocks, conv kernel x output positions."""
    total = 0
    for proc in net.processes:
        kind = type(proc).__name__
        if kind in ("Sparse", "DelaySparse"):
            total += int(proc.weights.init.nnz)
        elif kind == "Conv":             # weight (out, kh, kw, in / groups): each used once per output position
            total += int(np.count_nonzero(proc.weight.init)) * int(np.prod(proc.a_out.shape[:-1]))
    return total                         # AnalogConv: host MACs on pixels, not synapses on chip


def netx_layers(graph) -> list[dict]:
    """One netx conv block per LIF node: (channels, kernel) on the 8x8 grid, in graph order."""
    layers = []
    for node in graph.by_op("lif"):
        driver = next((graph.nodes[s] for s in node.inputs if graph.nodes[s].op in ("conv", "dense")), None)
        kernel = tuple(driver.attrs["kernel"]) if driver is not None and driver.op == "conv" else (1, 1)
        layers.append({"name": node.name, "channels": int(node.shape[-1]), "kernel": kernel,
                       "neurons": int(np.prod(node.shape))})
    return layers


def write_netx(path: str, layers: list[dict], side: int, in_channels: int, seed: int = 0) -> int:
    """A netx HDF5 file (lava-dl 0.6 format) of conv + CUBA blocks; returns its synapse count."""
    import h5py

    rng = np.random.default_rng(seed)
    synapses, cin = 0, in_channels
    with h5py.File(path, "w") as f:
        group = f.create_group("layer")
        first = group.create_group("0")
        first.create_dataset("type", (1,), "S10", [b"input"])
        first.create_dataset("shape", data=np.array([in_channels, side, side]))
        for i, layer in enumerate(layers, start=1):
            g = group.create_group(str(i))
            cout, (kh, kw) = layer["channels"], layer["kernel"]
            w = 2 * rng.integers(-12, 13, size=(cout, cin, kh, kw))
            synapses += int(np.count_nonzero(w)) * side * side
            g.create_dataset("type", (1,), "S10", [b"conv"])
            g.create_dataset("shape", data=np.array([cout, side, side]))
            for key, value in (("inChannels", cin), ("outChannels", cout), ("kernelSize", (kh, kw)),
                               ("stride", (1, 1)), ("padding", (kh // 2, kw // 2)), ("dilation", (1, 1)),
                               ("groups", 1)):
                g.create_dataset(key, data=np.array(value))
            g.create_dataset("weight", data=w.astype(np.float32))
            write_cuba(g)
            cin = cout
    return synapses


def bench(attention: str, steps: int, repeats: int) -> dict:
    from lava.lib.dl.netx.hdf5 import Network
    from lava.proc.io.source import RingBuffer as Source

    graph, net = spikeport_network(attention)
    side, in_channels = graph.nodes["input"].shape[0], graph.nodes["input"].shape[-1]
    layers = netx_layers(graph)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "equivalent.net")
        netx_synapses = write_netx(path, layers, side, in_channels)
        src = Source(data=(rng.random((side, side, in_channels, 64)) < 0.1).astype(np.int32))
        netx = Network(net_config=path)
        src.s_out.connect(netx.inp)
        sink_for(netx.out)
        timed = time_networks({"spikeport": net.source, "netx": src}, steps, repeats, fast=True)
    neurons = sum(l["neurons"] for l in layers)
    sp, nx = timed["spikeport"], timed["netx"]
    return {"attention": attention, "lif_layers": len(layers), "neurons": neurons,
            "synapses": {"spikeport": count_synapses(net), "netx": netx_synapses},
            "host_processes": net.host_only, "spikeport": sp, "netx": nx,
            "ratio_spikeport_over_netx": round(sp["ms_per_step"] / nx["ms_per_step"], 3),
            "ratio_per_process": round((sp["ms_per_step"] / sp["processes"]) / (nx["ms_per_step"] / nx["processes"]), 3)}


def main(argv=None) -> list:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attention", action="append", help="digits-tiny variant (repeatable; default ssa, lrf_dyn)")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="write the results here as JSON")
    args = ap.parse_args(argv)
    from spikeport.runtime.lava_session import import_lava

    import_lava()
    rows = []
    for attention in args.attention or ("ssa", "lrf_dyn"):
        r = bench(attention, args.steps, args.repeats)
        rows.append(r)
        print(f"{attention}: {r['lif_layers']} LIF layers, {r['neurons']:,} neurons; synapses spikeport "
              f"{r['synapses']['spikeport']:,} / netx {r['synapses']['netx']:,}")
        for k in ("spikeport", "netx"):
            x = r[k]
            print(f"  {k:9s}: {x['ms_per_step']:8.2f} ms/step (runs {x['ms_per_step_runs']}), {x['processes']} "
                  f"processes, compile {x['compile_s']:.2f} s, start {x['init_s']:.2f} s")
        print(f"  ratio spikeport / netx per step: {r['ratio_spikeport_over_netx']:.2f} (goal <= 1.5); per process "
              f"and step: {r['ratio_per_process']:.2f}; host-side spikeport processes: {', '.join(r['host_processes'])}")
    print(f"load average after: {os.getloadavg()} on {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
