"""Every speed ratio of issue 14, measured side by side in one run, with the goal each is held to.

    python benchmarks/bench_executor_ratios.py                 # all sections (~6-10 min on 2 cores)
    python benchmarks/bench_executor_ratios.py --sections reference --json ratios.json
    python benchmarks/bench_executor_ratios.py --sections reference --shapes digits cifar --rounds 5

Sections:

  reference   the numpy reference (counters on, as ``spikeport run`` uses it) vs the float torch forward of the
              same network, samples/s on this CPU, for every attention variant (``--attentions``) at every shape
              (``--shapes``): digits (digits-tiny, 8 x 8, batch 64), cifar (spikformer-4-384 at CIFAR-10 shape,
              batch 64) and imagenet (spikformer-8-512 at 224 x 224, batch 8; the reference caps its batch by
              memory). Untrained networks whose every layer fires (tests' ``spiky_model``: trained weights fire
              less, which makes both sides faster). Float: SpikingJelly neurons, eval mode, no grad, torch's own
              threads. Rounds alternate float / reference (``--rounds``); the ratio is the median of the rounds'
              ratios, with their spread (min..max). Goal (issues 14, 45): reference / float >= 1.0.
  recording   a Lava run of digits-tiny ssa (chip-native attention, fixed_pt, spikeport's fast CPU models)
              per time step: recording every spiking layer inside the LIF models (what ``spikeport run
              --compare`` does) and with one SpikeRecorder process per layer (before issue 14), each over the
              same network recording nothing. Goal: in-model / none <= 1.2.
  netx        spikeport's Lava graph per step vs a plain lava-dl netx network with the same neuron groups,
              neurons and synapses (``bench_lava_vs_netx.py``'s netx_groups, ssa and lrf_dyn; the chip-native
              attention's own neurons included). Goal: <= 1.0.
  cuda        the torch executor of the integer contract on a CUDA GPU (``run --device cuda``, counters on) vs the
              float torch forward of the same network on the same GPU, samples/s on spikformer-4-384 at CIFAR-10
              shape, batch 64 (both fed from host memory). Goal: >= 1.0. Skipped without a GPU.

Every figure names its executor; timings are wall clock on a shared machine (noisy: rerun before quoting).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

SECTIONS = ("reference", "recording", "netx", "cuda")
ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")
CIFAR = (3, 32, 32)
IMAGENET = (3, 224, 224)
# the reference section's shapes: preset, image shape, default samples and batch
SHAPES = {
    "digits": ("digits-tiny", (1, 8, 8), 360, 64),
    "cifar": ("spikformer-4-384", CIFAR, 128, 64),
    "imagenet": ("spikformer-8-512", IMAGENET, 16, 8),
}


def network(attention: str, preset: str = "digits-tiny"):
    """(float torch model, quantized graph, image shape) of an untrained network whose every layer fires."""
    from conftest import quantized_graph, random_images, spiky_model

    shape = next((s[1] for s in SHAPES.values() if s[0] == preset), CIFAR)
    # BatchNorm statistics and quantization from 64 and 16 random images; 8 each at ImageNet shape (memory)
    bn, calib = (8, 8) if shape == IMAGENET else (64, 16)
    model = spiky_model(attention, preset=preset, calib=random_images(bn, seed=100, shape=shape))
    return model, quantized_graph(model, random_images(calib, seed=1, shape=shape)), shape


def alternating_times(runs: dict[str, Callable[[], None]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each run in each of ``rounds`` rounds, the order flipped every round (the machine's drift falls
    on both sides)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for r in range(rounds):
        for name, fn in list(runs.items())[:: 1 if r % 2 == 0 else -1]:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def alternating_medians(runs: dict[str, Callable[[], None]], rounds: int) -> dict[str, float]:
    """Median seconds of each run over ``rounds`` alternating rounds (``alternating_times``)."""
    return {name: statistics.median(t) for name, t in alternating_times(runs, rounds).items()}


def reference_and_float_speed(model, graph, x, batch: int, rounds: int) -> dict:
    """Samples/s of the reference (counters on) and of the float torch forward on the same images ``x``
    [S, C, H, W], alternating rounds, medians, after a warm-up of each, and each round's reference / float ratio
    (``ratios``). Both sides get the same cores: the reference's worker threads and torch's intra-op threads are
    set to the cores this process may use (an inherited ``OMP_NUM_THREADS`` would otherwise give torch fewer)."""
    import torch

    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator, default_workers
    from spikeport.train.neurons import reset_net

    n, x_nhwc, sim = len(x), to_channels_last(x.numpy()), ReferenceSimulator(graph)
    cores = default_workers()
    torch.set_num_threads(cores)

    @torch.no_grad()
    def float_forward() -> None:
        for i in range(0, n, batch):
            reset_net(model)
            model(x[i : i + batch])

    def reference() -> None:
        sim.run(x_nhwc, batch_size=batch, workers=cores)

    float_forward(), sim.run(x_nhwc[:batch], batch_size=batch, workers=cores)  # warm-up
    times = alternating_times({"float": float_forward, "reference": reference}, rounds)
    ratios = [f / r for f, r in zip(times["float"], times["reference"], strict=True)]
    return {**{name: n / statistics.median(t) for name, t in times.items()}, "ratios": ratios}


def reference_vs_float(attention: str, preset: str, samples: int, rounds: int, batch: int = 64) -> dict:
    import torch

    from conftest import random_images

    model, graph, shape = network(attention, preset)
    x = random_images(samples, seed=3, shape=shape)
    sps = reference_and_float_speed(model, graph, x, batch, rounds)
    return {
        "network": f"{preset} {attention}",
        "samples": samples,
        "batch": batch,
        "float_torch_samples_s": round(sps["float"], 2),
        "reference_samples_s": round(sps["reference"], 2),
        "ratio": round(statistics.median(sps["ratios"]), 3),
        "ratio_min": round(min(sps["ratios"]), 3),
        "ratio_max": round(max(sps["ratios"]), 3),
        "rounds": rounds,
        "torch_threads": torch.get_num_threads(),
    }


def recording_overhead(steps: int, repeats: int) -> dict:
    from bench_lava_overhead import time_networks

    from conftest import random_images
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.lava import backend as LB
    from spikeport.runtime.lava.run import network_with_recorders, pixel_stream, sim_config
    from spikeport.runtime.recording import recorded

    _, graph, shape = network("ssa")
    R, warmup = LB.reset_interval(graph.T), 20
    total = warmup + steps * repeats + R
    images = to_channels_last(random_images(total // R + 1, seed=3, shape=shape).numpy())
    stream = pixel_stream(graph, images, R, 0)
    depth = LB.depths(graph)
    roots, cfgs = {}, {}
    with tempfile.TemporaryDirectory(prefix="spikeport-bench-") as tmp:
        roots["none"] = LB.build_network(graph, stream).source
        for key, in_model in (("in_model", True), ("recorders", False)):
            paths = {}
            for i, name in enumerate(recorded(graph)):
                paths[name] = os.path.join(tmp, f"{key}{i}.npy")
                rows = (stream.shape[1], *LB.flat(graph.nodes[name].shape))
                np.lib.format.open_memmap(paths[name], mode="w+", dtype=np.int8, shape=rows)
            net, cfgs[key] = network_with_recorders(graph, stream, paths, depth, 0, sim_config(), in_model)
            roots[key] = net.source
        timed = time_networks(roots, steps, repeats, warmup, fast=True, cfgs=cfgs)
    none = timed["none"]["ms_per_step"]
    return {
        "network": "digits-tiny ssa, lava-fixed_pt (fast CPU models)",
        "recorded_layers": len(recorded(graph)),
        **{f"{k}_ms_per_step": v["ms_per_step"] for k, v in timed.items()},
        **{f"{k}_processes": v["processes"] for k, v in timed.items()},
        "in_model_ratio": round(timed["in_model"]["ms_per_step"] / none, 3),
        "recorders_ratio": round(timed["recorders"]["ms_per_step"] / none, 3),
    }


def netx_ratios(steps: int, repeats: int) -> list[dict]:
    from bench_lava_vs_netx import bench

    rows = []
    for attention in ("ssa", "lrf_dyn"):
        r = bench(attention, steps, repeats)
        rows.append(
            {
                "network": f"digits-tiny {attention}",
                "spikeport_ms_per_step": r["spikeport"]["ms_per_step"],
                "netx_ms_per_step": r["netx_groups"]["ms_per_step"],
                "spikeport_processes": r["spikeport"]["processes"],
                "netx_processes": r["netx_groups"]["processes"],
                "synapses": r["synapses"],
                "neurons": r["baseline_neurons"],
                "ratio": r["ratio_over_netx_groups"],
                "ratio_over_lif_layers_only": r["ratio_over_netx_synapses"],
            }
        )
    return rows


def cuda_vs_float(samples: int, rounds: int, batch: int = 64) -> dict:
    """The integer executor on a CUDA GPU (``run --device cuda``: TorchReferenceSimulator, counters on) vs the float
    torch forward of the same network on the same GPU (SpikingJelly neurons, eval, no grad, fp32 with torch's
    default TF32 settings), both fed from host memory batch by batch; alternating rounds, medians."""
    import torch

    from conftest import random_images
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.torch_reference import TorchReferenceSimulator
    from spikeport.train.neurons import reset_net

    if not torch.cuda.is_available():
        return {"skipped": "no CUDA GPU (torch.cuda.is_available() is False)"}
    model, graph, shape = network("ssa", "spikformer-4-384")
    model = model.cuda().eval()
    x = random_images(samples, seed=3, shape=shape)
    x_nhwc = to_channels_last(x.numpy())
    sim = TorchReferenceSimulator(graph, "cuda")

    @torch.no_grad()
    def float_forward() -> None:
        for i in range(0, samples, batch):
            reset_net(model)
            model(x[i : i + batch].cuda())
        torch.cuda.synchronize()

    def reference() -> None:
        sim.run(x_nhwc, batch_size=batch)

    float_forward(), reference()  # warm-up: cuDNN plans, the first batch eager, the second captured
    seconds = alternating_medians({"float": float_forward, "reference": reference}, rounds)
    sps = {k: samples / v for k, v in seconds.items()}
    return {
        "network": "spikformer-4-384 ssa, CIFAR-10 shape",
        "device": torch.cuda.get_device_name(),
        "samples": samples,
        "batch": batch,
        "float_torch_samples_s": round(sps["float"], 1),
        "reference_samples_s": round(sps["reference"], 1),
        "ratio": round(sps["reference"] / sps["float"], 3),
        "captured": sim.capture_error is None,
        "capture_error": sim.capture_error,
        "exact_reruns": sim.reruns,
        "tf32": {"cudnn": torch.backends.cudnn.allow_tf32, "matmul": torch.backends.cuda.matmul.allow_tf32},
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--shapes", nargs="+", choices=tuple(SHAPES), default=list(SHAPES), help="reference section")
    ap.add_argument("--attentions", nargs="+", choices=ATTENTIONS, default=list(ATTENTIONS), help="reference section")
    ap.add_argument("--digits-samples", type=int, default=SHAPES["digits"][2])
    ap.add_argument("--cifar-samples", type=int, default=SHAPES["cifar"][2])
    ap.add_argument("--imagenet-samples", type=int, default=SHAPES["imagenet"][2])
    ap.add_argument("--cuda-samples", type=int, default=1024, help="images per timed round of the cuda section")
    ap.add_argument("--rounds", type=int, default=3, help="alternating float / reference rounds (median)")
    ap.add_argument("--steps", type=int, default=48, help="Lava steps per timed round")
    ap.add_argument("--repeats", type=int, default=5, help="Lava timed rounds (median)")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args(argv)
    results: dict = {"cpu_cores": len(os.sched_getaffinity(0))}
    summary = []
    if "reference" in args.sections:
        rows = []
        for shape in args.shapes:
            preset, _, _, batch = SHAPES[shape]
            samples = getattr(args, f"{shape}_samples")
            for attention in args.attentions:
                r = reference_vs_float(attention, preset, samples, args.rounds, batch)
                rows.append(r)
                print(
                    f"reference vs float torch, {r['network']}: {r['reference_samples_s']} vs "
                    f"{r['float_torch_samples_s']} samples/s (batch {r['batch']}, {r['samples']} samples) = "
                    f"{r['ratio']}x (rounds {r['ratio_min']}..{r['ratio_max']})",
                    flush=True,
                )
                summary.append((f"reference / float, {r['network']}", r["ratio"], ">= 1.0", r["ratio"] >= 1.0))
        results["reference"] = rows
    if "recording" in args.sections or "netx" in args.sections:
        from spikeport.runtime.lava.compat import import_lava

        import_lava()
    if "recording" in args.sections:
        r = recording_overhead(args.steps, args.repeats)
        results["recording"] = r
        print(
            f"Lava recording, {r['network']}, {r['recorded_layers']} layers: none {r['none_ms_per_step']} ms/step "
            f"({r['none_processes']} processes), in the LIF models {r['in_model_ms_per_step']} "
            f"({r['in_model_processes']}), SpikeRecorders {r['recorders_ms_per_step']} ({r['recorders_processes']})"
        )
        summary.append(("Lava recording (in-model) / none", r["in_model_ratio"], "<= 1.2", r["in_model_ratio"] <= 1.2))
        summary.append(("Lava recording (SpikeRecorders) / none", r["recorders_ratio"], "(before)", None))
    if "netx" in args.sections:
        rows = netx_ratios(args.steps, args.repeats)
        results["netx"] = rows
        for r in rows:
            print(
                f"Lava graph vs netx, {r['network']}: {r['spikeport_ms_per_step']} vs {r['netx_ms_per_step']} ms/step "
                f"({r['spikeport_processes']} vs {r['netx_processes']} processes) = {r['ratio']}x"
            )
            summary.append((f"spikeport Lava / netx, {r['network']}", r["ratio"], "<= 1.0", r["ratio"] <= 1.0))
    if "cuda" in args.sections:
        r = cuda_vs_float(args.cuda_samples, max(args.rounds, 5))
        results["cuda"] = r
        if "skipped" in r:
            print(f"reference-torch-cuda: skipped ({r['skipped']})")
        else:
            print(
                f"reference-torch-cuda vs float torch on {r['device']}, {r['network']}: {r['reference_samples_s']} vs "
                f"{r['float_torch_samples_s']} samples/s (batch {r['batch']}) = {r['ratio']}x "
                f"(captured: {r['captured']}, exact reruns: {r['exact_reruns']})"
            )
            summary.append(("reference-torch-cuda / float torch (CUDA)", r["ratio"], ">= 1.0", r["ratio"] >= 1.0))
    print("\nratio                                                         value   goal     met")
    for name, value, goal, met in summary:
        print(f"{name:60s} {value:7.3f}  {goal:8s} {'-' if met is None else 'yes' if met else 'NO'}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
        print(f"wrote {args.json}")
    return results


if __name__ == "__main__":
    main()
