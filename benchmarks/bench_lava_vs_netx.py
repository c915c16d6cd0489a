"""spikeport's Lava graph vs a plain netx network with the same neurons and synapses, per time step.

Issue 4 goal: the converted network costs at most 1.5x the per-step wall time of a plain netx network with
the same neuron and synapse counts (Lava's own per-process overhead is the floor).

The spikeport side is digits-tiny converted to fixed point (tests' ``spiky_model``: every layer fires)
and built by ``runtime.lava.backend.build_network``: standard Conv / Sparse / DelaySparse / LIF / LIFReset /
ProdNeuron processes (since issue 12 the attention is chip-native too; figures measured before it ran
spikeport's host-side AttentionCore).

The netx side is a lava-dl netx HDF5 network (loaded by ``lava.lib.dl.netx.hdf5.Network``) with one
conv + CUBA block per LIF node of the spikeport graph, in the same order, on the same 8x8 grid with the
same channel count (so the same neurons per layer). Two such baselines run side by side:

  netx_groups    the goal's baseline since issue 14: one block per neuron *process* of spikeport's graph, the
                 attention's coincidence LIFs, product neurons and residual relays included (they run on the
                 chip since issue 12), with its neurons and, through a (1, kw) kernel and conv groups, about the
                 synapses that feed it.
  netx_synapses  the goal's baseline before: same LIF layers' neurons *and synapses*: each LIF's block takes
                 the kernel of the conv that drives it, and token-wise layers a (1, kw) kernel, kw odd, chosen so the
                 running synapse total follows spikeport's (a residual consumer holds one weight copy per
                 source; the attention LIFs of ssa have no synapses in spikeport, 1x1 in netx).
  netx_layers    same LIF layers with the driving synapse's kernel (1x1 for token-wise layers): fewer
                 synapses than spikeport, a stricter floor.

Weights are random even integers, input spikes random (rate 0.1), so the netx network's activity is not
the converted network's: the figure is the cost of the process graph, not of the same computation.

All run with ``Loihi2SimCfg(select_tag="fixed_pt")`` and spikeport's bit-exact fast CPU models of Conv /
Sparse / DelaySparse (Lava's own Conv model costs ~65 ms per 8x8x64 1x1 layer per step, which would swamp
all), interleaved, medians of ``--repeats`` runs of ``--steps`` steps after a warm-up.

    python benchmarks/bench_lava_vs_netx.py [--attention ssa --attention lrf_dyn] [--steps 64 --repeats 5]
    python benchmarks/bench_lava_vs_netx.py --preset spikformer-4-384 --baselines netx_groups   # CIFAR-10 shape
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

SHAPES = {"digits-tiny": (1, 8, 8), "spikformer-4-384": (3, 32, 32)}  # --preset: digits, CIFAR-10 shape


def spikeport_network(attention: str, preset: str = "digits-tiny"):
    """(graph, LavaNetwork) of ``preset`` with every layer firing, fed with test-like images."""
    from conftest import quantized_graph, random_images, spiky_model
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.lava import backend as LB
    from spikeport.runtime.lava.run import pixel_stream

    shape = SHAPES[preset]
    graph = quantized_graph(spiky_model(attention, preset=preset), random_images(16, seed=1, shape=shape))
    images = to_channels_last(random_images(16, seed=3, shape=shape).numpy())
    net = LB.build_network(graph, pixel_stream(graph, images, LB.reset_interval(graph.T), 0))
    return graph, net


def synapses_into(graph, net) -> dict[str, int]:
    """Per LIF node, the synapses of the Lava processes that drive its a_in, as ``spikeport check-hw``
    counts them (attention cores hold none)."""
    from spikeport.runtime.loihi2.check_hw import describe_processes

    procs = describe_processes(graph, net)
    return {node.name: sum(p.synapses for p in procs if node.name in p.feeds) for node in graph.by_op("lif")}


def count_synapses(graph, net) -> int:
    """All synapses of the Lava graph, as ``spikeport check-hw`` counts them (AnalogConv's MACs on pixels
    and the cores' host arithmetic are not synapses)."""
    from spikeport.runtime.loihi2.check_hw import describe_processes

    return sum(p.synapses for p in describe_processes(graph, net))


def netx_layers(graph, match_synapses: dict | None = None) -> list[dict]:
    """One netx conv block per LIF node on the 8x8 grid, in graph order, with that LIF's neurons.

    Without ``match_synapses``: the kernel of the synapse that drives the LIF (1x1 for token-wise dense
    layers and attention LIFs). With it (LIF -> spikeport synapses): token-wise layers get a (1, kw)
    kernel, kw odd, chosen so that the running total of netx synapses stays closest to spikeport's."""
    side = graph.nodes["input"].shape[0]
    layers, cin, have, want = [], graph.nodes["input"].shape[-1], 0, 0
    for node in graph.by_op("lif"):
        # a conv driver has a spatial kernel; token-wise dense layers and attention cores act as 1x1
        kernel = next(
            (tuple(graph.nodes[s].attrs["kernel"]) for s in node.inputs if "kernel" in graph.nodes[s].attrs), (1, 1)
        )
        cout = int(node.shape[-1])
        per_tap = cin * cout * side * side
        if match_synapses is not None and kernel == (1, 1):
            want += match_synapses[node.name]
            kw = min(range(1, 2 * side, 2), key=lambda k: abs(want - have - k * per_tap))
            kernel = (1, kw)
        elif match_synapses is not None:
            want += match_synapses[node.name]
        have += kernel[0] * kernel[1] * per_tap
        layers.append({"name": node.name, "channels": cout, "kernel": kernel, "neurons": int(np.prod(node.shape))})
        cin = cout
    return layers


def netx_groups(graph, net) -> list[dict]:
    """One netx conv block per *neuron process* of spikeport's Lava graph (LIF / LIFReset, and since the
    attention runs on the chip its coincidence LIFs, product neurons and residual relays too), in graph order,
    each with that process's neurons on the 8x8 grid and, as near as a (1, kw) kernel with ``groups`` allows,
    the synapses of the processes that feed it."""
    from spikeport.runtime.loihi2.check_hw import describe_processes

    procs = describe_processes(graph, net)
    side = graph.nodes["input"].shape[0]
    layers, cin = [], graph.nodes["input"].shape[-1]
    for group in (p for p in procs if p.neurons):
        cout = group.neurons // (side * side)
        want = max(1, sum(p.synapses for p in procs if group.layer in p.feeds or group.name in p.feeds))
        gcd = int(np.gcd(cin, cout))
        options = [(g, kw) for g in (d for d in range(1, gcd + 1) if gcd % d == 0) for kw in range(1, 2 * side, 2)]
        groups, kw = min(options, key=lambda o: abs(np.log(cout * (cin // o[0]) * o[1] * side * side / want)))
        layers.append(
            {"name": group.name, "channels": cout, "kernel": (1, kw), "groups": groups, "neurons": group.neurons}
        )
        cin = cout
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
            cout, (kh, kw), groups = layer["channels"], layer["kernel"], layer.get("groups", 1)
            w = 2 * rng.integers(-12, 13, size=(cout, cin // groups, kh, kw))
            synapses += int(np.count_nonzero(w)) * side * side
            g.create_dataset("type", (1,), "S10", [b"conv"])
            g.create_dataset("shape", data=np.array([cout, side, side]))
            for key, value in (
                ("inChannels", cin),
                ("outChannels", cout),
                ("kernelSize", (kh, kw)),
                ("stride", (1, 1)),
                ("padding", (kh // 2, kw // 2)),
                ("dilation", (1, 1)),
                ("groups", groups),
            ):
                g.create_dataset(key, data=np.array(value))
            g.create_dataset("weight", data=w.astype(np.float32))
            write_cuba(g)
            cin = cout
    return synapses


BASELINES = {
    "netx_groups": "netx, same neuron groups, neurons and synapses (the goal's baseline since issue 14)",
    "netx_synapses": "netx, same LIF layers' neurons and synapses (the goal's baseline before the attention "
    "ran on the chip)",
    "netx_layers": "netx, same LIF layers and driving kernels",
}


def bench(attention: str, steps: int, repeats: int, preset: str = "digits-tiny", baselines=tuple(BASELINES)) -> dict:
    from lava.lib.dl.netx.hdf5 import Network
    from lava.proc.io.source import RingBuffer as Source

    graph, net = spikeport_network(attention, preset)
    side, in_channels = graph.nodes["input"].shape[0], graph.nodes["input"].shape[-1]
    make = {
        "netx_groups": lambda: netx_groups(graph, net),
        "netx_synapses": lambda: netx_layers(graph, synapses_into(graph, net)),
        "netx_layers": lambda: netx_layers(graph),
    }
    layer_sets = {key: make[key]() for key in baselines}
    rng = np.random.default_rng(1)
    roots, synapses = {"spikeport": net.source}, {"spikeport": count_synapses(graph, net)}
    with tempfile.TemporaryDirectory() as tmp:
        for key, layers in layer_sets.items():
            path = os.path.join(tmp, f"{key}.net")
            synapses[key] = write_netx(path, layers, side, in_channels)
            roots[key] = Source(data=(rng.random((side, side, in_channels, 64)) < 0.1).astype(np.int32))
            netx = Network(net_config=path)
            roots[key].s_out.connect(netx.inp)
            sink_for(netx.out)
        timed = time_networks(roots, steps, repeats, fast=True)
    sp = timed["spikeport"]
    lifs = graph.by_op("lif")
    row = {
        "preset": preset,
        "attention": attention,
        "lif_layers": len(lifs),
        "neurons": sum(int(np.prod(node.shape)) for node in lifs),
        "baseline_neurons": {k: sum(layer["neurons"] for layer in v) for k, v in layer_sets.items()},
        "synapses": synapses,
        "host_processes": net.host_only,
        **timed,
    }
    if "netx_synapses" in layer_sets:
        row["netx_kernels"] = {syn["name"]: syn["kernel"] for syn in layer_sets["netx_synapses"]}
    for key in layer_sets:
        row[f"ratio_over_{key}"] = round(sp["ms_per_step"] / timed[key]["ms_per_step"], 3)
        # per process: what one process of each graph costs a step (Lava's cost is mostly per process)
        row[f"per_process_ratio_over_{key}"] = round(
            (sp["ms_per_step"] / sp["processes"]) / (timed[key]["ms_per_step"] / timed[key]["processes"]), 3
        )
    return row


def main(argv=None) -> list:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attention", action="append", help="attention variant (repeatable; default ssa, lrf_dyn)")
    ap.add_argument("--preset", default="digits-tiny", choices=sorted(SHAPES), help="spikformer-4-384: CIFAR-10 shape")
    ap.add_argument(
        "--baselines", default=",".join(BASELINES), help="netx baselines to run beside it (each is a live network)"
    )
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="write the results here as JSON")
    args = ap.parse_args(argv)
    from spikeport.runtime.lava.compat import import_lava

    import_lava()
    rows = []
    for attention in args.attention or ("ssa", "lrf_dyn"):
        r = bench(attention, args.steps, args.repeats, args.preset, tuple(args.baselines.split(",")))
        rows.append(r)
        print(
            f"{attention}: {r['lif_layers']} LIF layers, {r['neurons']:,} neurons; host-side spikeport processes: "
            f"{', '.join(r['host_processes'])}"
        )
        baselines = [k for k in BASELINES if f"ratio_over_{k}" in r]
        for k in ("spikeport", *baselines):
            x = r[k]
            print(
                f"  {k:13s}: {x['ms_per_step']:7.2f} ms/step (runs {x['ms_per_step_runs']}), {x['processes']} "
                f"processes, {r['synapses'][k]:,} synapses, compile {x['compile_s']:.2f} s, start {x['init_s']:.2f} s"
            )
        for k in baselines:
            print(
                f"  ratio spikeport / {BASELINES[k]}: {r['ratio_over_' + k]:.2f} per step, "
                f"{r['per_process_ratio_over_' + k]:.2f} per process" + (" (goal <= 1.0)" if k == "netx_groups" else "")
            )
    print(f"load average after: {os.getloadavg()} on {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
