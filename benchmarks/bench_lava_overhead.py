"""Lava CPU-simulator cost per time step: a plain netx network vs the same Dense+LIF chain built directly.

This is the floor for spikeport's Lava graph (issue 4 goal: at most 1.5x the per-step wall time of a
plain netx network with the same neuron and synapse counts). Compile / runtime start-up are timed apart
from the per-step cost. Extra sections probe what the per-step cost depends on:

  processes   chains of (Dense + LIF) of growing length, tiny layers: cost per process per step
  width       4 layers of growing width: cost of message size and of the synapse model's arithmetic
  tokenwise   one token-wise linear layer on N tokens x d channels as Dense (block-diagonal), Sparse,
              Conv 1x1; Lava's own models, and spikeport's faster bit-exact models when importable
  streaming   S samples back to back with LIFReset vs one run per sample with Var.set(0) resets

Everything runs with Loihi2SimCfg(select_tag="fixed_pt") inside spikeport's LavaSession. Inputs are
random binary spikes (rate 0.1) from a RingBuffer; the last layer feeds a RingBuffer sink in both
variants. Timings are wall-clock medians of --repeats runs of --steps steps after a warm-up run; on a
loaded machine they are pessimistic (the CPU is shared with the other processes of the box).

    python benchmarks/bench_lava_overhead.py                 # all sections (~3-6 min on 2 cores)
    python benchmarks/bench_lava_overhead.py --sections netx --layers 4 --width 256
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from spikeport.runtime.lava.compat import import_lava
from spikeport.runtime.lava.session import LavaSession

CUBA = {"iDecay": 1024, "vDecay": 128, "vThMant": 80, "refDelay": 1, "gradedSpike": False}


def weights(rng, n_out: int, n_in: int) -> np.ndarray:
    """Even integers in [-256, 254] (netx's range): netx and Lava Dense then apply the same values."""
    return 2 * rng.integers(-40, 41, size=(n_out, n_in))


def write_netx(path: str, ws: list) -> None:
    """A netx HDF5 file (lava-dl 0.6 format, as slayer exports it): one dense+CUBA block per matrix."""
    import h5py

    with h5py.File(path, "w") as f:
        layers = f.create_group("layer")
        for i, w in enumerate(ws):
            g = layers.create_group(str(i))
            g.create_dataset("type", (1,), "S10", [b"dense"])
            g.create_dataset("shape", data=np.array([w.shape[0]]))
            g.create_dataset("inFeatures", data=w.shape[1])
            g.create_dataset("outFeatures", data=w.shape[0])
            g.create_dataset("weight", data=w.astype(np.float32))
            write_cuba(g)


def write_cuba(layer_group) -> None:
    """The CUBA neuron of a netx layer group, with the parameters above."""
    neuron = layer_group.create_group("neuron")
    neuron.create_dataset("type", data="CUBA")
    for key, value in CUBA.items():
        neuron.create_dataset(key, data=value)


def spikes(rng, n: int, steps: int, rate: float = 0.1) -> np.ndarray:
    return (rng.random((n, steps)) < rate).astype(np.int32)


def direct_chain(ws: list, source, reset_interval: int | None = None):
    """source -> (Dense -> LIF) per matrix, with netx's CUBA parameters; returns the LIFs."""
    from lava.proc.dense.process import Dense
    from lava.proc.lif.process import LIF, LIFReset

    prev, lifs = source.s_out, []
    for k, w in enumerate(ws):
        dense = Dense(weights=w)
        p = dict(shape=(w.shape[0],), du=CUBA["iDecay"] - 1, dv=CUBA["vDecay"], vth=CUBA["vThMant"], bias_exp=6)
        lif = LIFReset(**p, reset_interval=reset_interval, reset_offset=1 + k) if reset_interval else LIF(**p)
        prev.connect(dense.s_in)
        dense.a_out.connect(lif.a_in)
        prev = lif.s_out
        lifs.append(lif)
    return lifs


def sim_cfg(fast: bool = False):
    from lava.magma.core.run_configs import Loihi2SimCfg

    if not fast:
        return Loihi2SimCfg(select_tag="fixed_pt")
    from spikeport.runtime.lava.procs.fast_models import exception_map

    return Loihi2SimCfg(select_tag="fixed_pt", exception_proc_model_map=exception_map())


def time_networks(
    roots: dict, steps: int, repeats: int, warmup: int = 20, fast: bool = False, after_warmup=None, cfgs=None
) -> dict:
    """Compile + start every network, warm each up, then ``repeats`` rounds in which each runs ``steps``
    steps in turn (interleaved, order reversed every other round, so a change of machine load hits all
    alike): per-step medians in ms. ``after_warmup()`` (optional) runs between warm-up and timing; ``cfgs``
    (optional) gives a network its own run config (default ``sim_cfg(fast)``)."""
    import contextlib

    cfgs = cfgs or {}
    with contextlib.ExitStack() as stack:
        sessions = {
            k: stack.enter_context(LavaSession(root, cfgs.get(k) or sim_cfg(fast))) for k, root in roots.items()
        }
        per_step = {k: [] for k in roots}
        for s in sessions.values():
            s.start()
            s.run(warmup)
        if after_warmup is not None:
            after_warmup()
        for r in range(repeats):
            for k, s in list(sessions.items()) if r % 2 == 0 else list(sessions.items())[::-1]:
                t0 = time.perf_counter()
                s.run(steps)
                per_step[k].append((time.perf_counter() - t0) / steps * 1e3)
        n_proc = {k: len(s.runtime._executable.proc_builders) for k, s in sessions.items()}
    return {
        k: {
            "compile_s": round(s.timings.compile_s, 3),
            "init_s": round(s.timings.init_s, 3),
            "ms_per_step": round(statistics.median(per_step[k]), 3),
            "ms_per_step_runs": [round(x, 3) for x in per_step[k]],
            "processes": n_proc[k],
            "stop_s": round(s.timings.stop_s, 3),
        }
        for k, s in sessions.items()
    }


def time_network(root, steps: int, repeats: int, warmup: int = 20, fast: bool = False) -> dict:
    return time_networks({"x": root}, steps, repeats, warmup, fast)["x"]


def sink_for(port, buffer: int = 20):
    from lava.proc.io.sink import RingBuffer as Sink

    sink = Sink(shape=port.shape, buffer=buffer)
    port.connect(sink.a_in)
    return sink


def bench_netx(layers: int, width: int, steps: int, repeats: int, seed: int = 0) -> dict:
    from lava.lib.dl.netx.hdf5 import Network
    from lava.proc.io.source import RingBuffer as Source

    rng = np.random.default_rng(seed)
    ws = [weights(rng, width, width) for _ in range(layers)]
    data = spikes(rng, width, 64)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.net")
        write_netx(path, ws)
        src_netx = Source(data=data)
        net = Network(net_config=path)
        src_netx.s_out.connect(net.inp)
        sink_netx = sink_for(net.out)
        src = Source(data=data)
        sink_direct = sink_for(direct_chain(ws, src)[-1].s_out)
        same = {}

        def compare():  # the warm-up's 20 steps of output spikes (sink buffer = 20)
            a, b = sink_netx.data.get(), sink_direct.data.get()
            same.update(identical=bool(np.array_equal(a, b)), spikes=int(a.sum()))

        timed = time_networks({"netx": src_netx, "direct": src}, steps, repeats, after_warmup=compare)
    netx, direct = timed["netx"], timed["direct"]
    synapses = sum(int(np.count_nonzero(w)) for w in ws)
    return {
        "layers": layers,
        "width": width,
        "neurons": layers * width,
        "synapses": synapses,
        "netx": netx,
        "direct": direct,
        "outputs_identical": same["identical"],
        "output_spikes_in_warmup": same["spikes"],
        "ratio_direct_over_netx": round(direct["ms_per_step"] / netx["ms_per_step"], 3),
    }


def bench_processes(lengths, width: int, steps: int, repeats: int) -> list:
    from lava.proc.io.source import RingBuffer as Source

    rng = np.random.default_rng(1)
    rows = []
    for n_layers in lengths:
        src = Source(data=spikes(rng, width, 64))
        sink_for(direct_chain([weights(rng, width, width) for _ in range(n_layers)], src)[-1].s_out)
        r = time_network(src, steps, repeats)
        rows.append({"layers": n_layers, "width": width, **r})
    return rows


def bench_width(widths, layers: int, steps: int, repeats: int) -> list:
    from lava.proc.io.source import RingBuffer as Source

    rng = np.random.default_rng(2)
    rows = []
    for width in widths:
        src = Source(data=spikes(rng, width, 64))
        sink_for(direct_chain([weights(rng, width, width) for _ in range(layers)], src)[-1].s_out)
        r = time_network(src, steps, repeats)
        rows.append({"layers": layers, "width": width, **r})
    return rows


def bench_tokenwise(tokens: int, channels: int, steps: int, repeats: int, fast: bool) -> list:
    """One linear layer applied to every token: N tokens x d channels, binary input, rate 0.1."""
    import scipy.sparse as sp
    from lava.proc.conv.process import Conv
    from lava.proc.dense.process import Dense
    from lava.proc.io.source import RingBuffer as Source
    from lava.proc.sparse.process import Sparse

    rng = np.random.default_rng(3)
    w = weights(rng, channels, channels)
    side = int(round(tokens**0.5))
    data = spikes(rng, tokens * channels, 64)
    variants = {
        "dense_blockdiag": lambda: Dense(weights=np.kron(np.eye(tokens, dtype=np.int64), w)),
        "sparse_blockdiag": lambda: Sparse(weights=sp.csr_matrix(np.kron(np.eye(tokens, dtype=np.int64), w))),
        "conv1x1": lambda: Conv(weight=w[:, None, None, :], input_shape=(side, side, channels)),
    }
    roots, meta = {}, {}
    for use_fast in [False, True] if fast else [False]:
        for name, make in variants.items():
            syn = make()
            src = Source(data=data if name != "conv1x1" else data.reshape(side, side, channels, -1))
            src.s_out.connect(syn.s_in)
            sink_for(syn.a_out)
            key = (name, "spikeport-fast" if use_fast else "lava")
            roots[key], meta[key] = src, use_fast
    rows = []
    for use_fast in sorted(set(meta.values())):  # one interleaved timing per model family
        timed = time_networks({k: r for k, r in roots.items() if meta[k] == use_fast}, steps, repeats, fast=use_fast)
        rows += [
            {"variant": k[0], "models": k[1], "tokens": tokens, "channels": channels, **r} for k, r in timed.items()
        ]
    return rows


def bench_streaming(layers: int, width: int, T: int, samples: int) -> dict:
    """Per-sample cost of the two ways to reset state between samples (both warmed up by one sample)."""
    from lava.proc.io.source import RingBuffer as Source

    rng = np.random.default_rng(4)
    ws = [weights(rng, width, width) for _ in range(layers)]
    R = 1 << (T - 1).bit_length()
    data = spikes(rng, width, R * (samples + 1))
    # (1) one run, samples R steps apart, LIFReset at the pipeline wavefront
    src = Source(data=data)
    sink_for(direct_chain(ws, src, reset_interval=R)[-1].s_out)
    with LavaSession(src, sim_cfg()) as session:
        session.run(R)
        t0 = time.perf_counter()
        session.run(R * samples)
        lifreset = (time.perf_counter() - t0) / samples
    # (2) one run of T steps per sample, then u and v of every LIF set to 0
    src = Source(data=data)
    lifs = direct_chain(ws, src)
    sink_for(lifs[-1].s_out)
    run_s = set_s = 0.0
    zero = np.zeros(width)
    with LavaSession(src, sim_cfg()) as session:
        for i in range(samples + 1):
            t0 = time.perf_counter()
            session.run(T)
            t1 = time.perf_counter()
            for lif in lifs:
                lif.u.set(zero)
                lif.v.set(zero)
            if i:  # sample 0 is the warm-up
                run_s += t1 - t0
                set_s += time.perf_counter() - t1
    return {
        "layers": layers,
        "width": width,
        "T": T,
        "R": R,
        "samples": samples,
        "lifreset_ms_per_sample": round(lifreset * 1e3, 2),
        "varset_run_ms_per_sample": round(run_s / samples * 1e3, 2),
        "varset_reset_ms_per_sample": round(set_s / samples * 1e3, 2),
        "varset_total_ms_per_sample": round((run_s + set_s) / samples * 1e3, 2),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="netx,processes,width,tokenwise,streaming")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the results here as JSON")
    args = ap.parse_args(argv)
    import_lava()
    sections = set(args.sections.split(","))
    out: dict = {
        "executor": "lava-fixed_pt (Loihi2SimCfg CPU simulator)",
        "cpu_count": os.cpu_count(),
        "loadavg_before": os.getloadavg(),
    }
    if "netx" in sections:
        r = out["netx"] = bench_netx(args.layers, args.width, args.steps, args.repeats)
        print(
            f"netx vs direct, {r['layers']} x (Dense {r['width']}x{r['width']} + LIF), "
            f"{r['neurons']} neurons, {r['synapses']} synapses:"
        )
        for k in ("netx", "direct"):
            x = r[k]
            print(
                f"  {k:6s}: {x['ms_per_step']:8.3f} ms/step  (runs {x['ms_per_step_runs']}), "
                f"compile {x['compile_s']:.2f} s, start {x['init_s']:.2f} s, {x['processes']} processes"
            )
        print(
            f"  ratio direct / netx per step: {r['ratio_direct_over_netx']:.3f}; last-layer spikes identical: "
            f"{r['outputs_identical']} ({r['output_spikes_in_warmup']} spikes in the 20 warm-up steps)"
        )
    if "processes" in sections:
        rows = out["processes"] = bench_processes([1, 2, 4, 8, 16], 16, args.steps, args.repeats)
        print("chain length (Dense 16x16 + LIF per layer):")
        for r in rows:
            print(
                f"  {r['layers']:3d} layers, {r['processes']:3d} processes: {r['ms_per_step']:8.3f} ms/step, "
                f"compile {r['compile_s']:.2f} s, start {r['init_s']:.2f} s"
            )
        a, b = rows[0], rows[-1]
        slope = (b["ms_per_step"] - a["ms_per_step"]) / (b["processes"] - a["processes"])
        out["ms_per_process_step"] = round(slope, 4)
        print(f"  => {slope:.3f} ms per process per step (tiny processes)")
    if "width" in sections:
        rows = out["width"] = bench_width([64, 256, 1024, 2048], args.layers, max(50, args.steps // 4), args.repeats)
        print(f"width ({args.layers} x (Dense + LIF)):")
        for r in rows:
            print(f"  width {r['width']:5d}: {r['ms_per_step']:8.3f} ms/step")
    if "tokenwise" in sections:
        fast = _fast_models_available()
        rows = out["tokenwise"] = bench_tokenwise(64, 64, max(40, args.steps // 4), args.repeats, fast)
        print("token-wise linear, 64 tokens x 64 channels (one synapse process, binary input):")
        for r in rows:
            print(
                f"  {r['variant']:17s} [{r['models']:14s}]: {r['ms_per_step']:9.3f} ms/step, "
                f"compile {r['compile_s']:.2f} s"
            )
    if "streaming" in sections:
        r = out["streaming"] = bench_streaming(args.layers, args.width, T=8, samples=16)
        print(f"streaming {r['samples']} samples, T={r['T']} (R={r['R']}), {r['layers']} x {r['width']}:")
        print(f"  LIFReset, one run:           {r['lifreset_ms_per_sample']:8.2f} ms/sample")
        print(
            f"  run(T) + Var.set(0) resets:  {r['varset_total_ms_per_sample']:8.2f} ms/sample "
            f"(run {r['varset_run_ms_per_sample']:.2f} + set {r['varset_reset_ms_per_sample']:.2f})"
        )
    out["loadavg_after"] = os.getloadavg()
    print(
        f"load average before/after: {out['loadavg_before']} / {out['loadavg_after']} "
        f"on {out['cpu_count']} CPUs (a loaded machine makes these figures pessimistic)"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


def _fast_models_available() -> bool:
    try:
        from spikeport.runtime.lava.procs.fast_models import exception_map  # noqa: F401

        return True
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main() and 0)
