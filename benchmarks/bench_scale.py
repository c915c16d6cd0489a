"""The papers' model sizes through every stage (issue 25): wall time and peak memory of the whole process tree.

    python benchmarks/bench_scale.py                                   # everything (~45 min on 2 cores)
    python benchmarks/bench_scale.py --models spikformer-4-384 --attention ssa --stages convert,lava
    python benchmarks/bench_scale.py --models spikformer-4-384 --stages lava --lava whole,parts:4 --json out.json

Per model (digits-tiny on scikit-learn digits, spikformer-4-384 at CIFAR-10 shape, spikformer-8-512 at ImageNet
shape) and attention variant, each stage runs as its own OS process, as a user would run it, while this script
samples the process tree from /proc (benchmarks/tree_memory.py): the peak of the summed PSS of the tree (Lava forks
one OS process per ProcessModel: one process's RSS says little) and the peak of the machine's used memory above its
level when the stage started (which also counts other work on the machine: read it beside the PSS). Stages:

  train      ``spikeport train --epochs 1`` on a small synthetic folder of the model's data set format: s per step
  convert    ``spikeport convert`` of a checkpoint whose every LIF layer fires (tests/scale_models.py: BatchNorm
             statistics from the folder's images), calibration and parity on the folder's images
  reference  ``spikeport run`` (the integer reference): s per sample
  lava       the Lava run of a few samples in a process that never imports torch, whole network (``run_lava``) or
             partitioned (``run_lava_partitioned``; ``--lava whole,parts:4,max:100``), compared with the reference in
             every layer: s per sample and per step, OS processes, whether every LIF layer fired on >= 1 % of its
             neuron-steps (a comparison of silent layers proves little)
  check-hw   ``spikeport check-hw --json``: cores (and their range) and chips, the lower bound and the ratio to it,
             the computing processes left on the host, and the verdict; a FAIL (exit status 1, a verdict naming
             the broken limit) is told from a crash (no verdict)
  report     ``spikeport report`` of the reference run
  ratio      the reference / float torch samples/s on the same images, at that size (goal >= 1.0)

The goals it checks (issue 25): Lava at CIFAR shape <= 6 GB for every variant; convert <= 2 GB at CIFAR shape and
<= 8 GB at ImageNet shape; reference and check-hw <= 8 GB at ImageNet shape; a Lava sample completes there. A stage
that pushes the machine's used memory past --kill-above-gib is killed (the machine is shared) and reported so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from tree_memory import TreeMemory  # noqa: E402

GB = 1e9
ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")
STAGES = ("train", "convert", "reference", "lava", "check-hw", "report", "ratio")
IMAGENET_CLASSES = 2  # class folders of the synthetic ImageNet folders (the models are built with as many outputs)


# Per model: data set, image size, and the sizes of each stage's work (small enough for a 2-core machine)
MODELS: dict[str, dict] = {
    "digits-tiny": dict(
        dataset="digits", size=8, train_batch=32, calibrate=64, evaluate=24, reference=64, lava_samples=4,
        lava=("whole",), ratio_samples=256, ratio_batch=64, goals={},
    ),
    "spikformer-4-384": dict(
        dataset="cifar10", size=32, train_batch=8, calibrate=64, evaluate=24, reference=32, lava_samples=2,
        lava=("whole", "parts:4"), ratio_samples=64, ratio_batch=32,
        goals={"lava": 6 * GB, "convert": 2 * GB},
    ),
    "spikformer-8-512": dict(
        dataset="imagenet", size=224, train_batch=2, calibrate=8, evaluate=4, reference=16, lava_samples=1,
        lava=("parts:9",), ratio_samples=8, ratio_batch=4,
        goals={"convert": 8 * GB, "reference": 8 * GB, "check-hw": 8 * GB},
    ),
}  # fmt: skip


def python() -> list[str]:
    return [sys.executable]


def measured(cmd: list[str], kill_above: float, env: dict | None = None, timeout_s: float = 3600) -> dict:
    """Run ``cmd`` as its own process group; wall time, peaks of summed PSS and of used memory, its stdout."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    with TreeMemory(proc.pid, every_s=0.25, kill_above_used=kill_above) as mem:
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            out, err = proc.communicate()
    return {
        "cmd": " ".join(cmd),
        "rc": proc.returncode,
        "wall_s": round(time.perf_counter() - start, 2),
        "peak_pss_gb": round(mem.peak_pss / GB, 3),
        "peak_used_gb": round(mem.peak_used / GB, 3),
        "processes": mem.peak_processes,
        "killed_for_memory": mem.killed,
        "stdout": out,
        "stderr_tail": err[-2000:],
    }


# ------------------------------------------------------------------------------------------------ the inputs
def prepare_data(model: str, out: Path) -> dict[str, Path | None]:
    """The synthetic data folders of a model's data set: a small one to train on, a larger one to convert and run."""
    spec = MODELS[model]
    if spec["dataset"] == "digits":
        return {"train": None, "data": None}
    from scale_models import write_synthetic_cifar, write_synthetic_imagenet

    folders = {}
    for key, size in (("train", "small"), ("data", "large")):
        folder = out / f"{spec['dataset']}-{key}"
        if not folder.exists():
            if spec["dataset"] == "cifar10":
                write_synthetic_cifar(folder, per_file=8 if size == "small" else 32)
            else:
                write_synthetic_imagenet(folder, classes=IMAGENET_CLASSES, per_class=2 if size == "small" else 8)
        folders[key] = folder
    return folders


def data_args(spec: dict, folder: Path | None) -> list[str]:
    return ["--dataset", spec["dataset"]] + (["--data-dir", str(folder)] if folder is not None else [])


# ------------------------------------------------------------------------------------------------ the stages
def stage_train(model: str, attention: str, folders: dict, work: Path, kill: float) -> dict:
    spec = MODELS[model]
    run = work / "train"
    cmd = python() + ["-m", "spikeport", "train", "--preset", model, "--attention", attention, "--epochs", "1",
                      "--batch-size", str(spec["train_batch"]), "--out", str(run), "--quiet",
                      *data_args(spec, folders["train"])]  # fmt: skip
    if spec["dataset"] == "imagenet":  # the synthetic folder has 2 classes, the preset 1000
        config = work / "train.yaml"
        config.write_text(f"model:\n  num_classes: {IMAGENET_CLASSES}\n")
        cmd += ["--config", str(config)]
    row = measured(cmd, kill)
    speed = train_speed(run)
    row["train_batch"] = spec["train_batch"]
    row["s_per_step"] = round(spec["train_batch"] / speed, 3) if speed else None
    return row


def train_speed(run: Path) -> float | None:
    """Training images per second of the epoch (metrics.jsonl), None if the run wrote none."""
    metrics = run / "metrics.jsonl"
    if not metrics.exists():
        return None
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return float(rows[-1]["train_images_per_s"]) if rows and "train_images_per_s" in rows[-1] else None


def make_checkpoint(model: str, attention: str, folders: dict, work: Path, kill: float) -> dict:
    spec = MODELS[model]
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, {tests!r});"
        "from scale_models import firing_checkpoint;"
        "print(firing_checkpoint({model!r}, {attention!r}, {dataset!r}, {folder}, Path({out!r}), calib={calib}))"
    ).format(tests=str(ROOT / "tests"), model=model, attention=attention, dataset=spec["dataset"],
             folder=f"Path({str(folders['data'])!r})" if folders["data"] else "None", out=str(work / "firing"),
             calib=min(16, spec["calibrate"]))  # fmt: skip
    return measured(python() + ["-c", code], kill)


def stage_convert(model: str, folders: dict, work: Path, kill: float) -> dict:
    spec = MODELS[model]
    checkpoint = work / "firing" / "checkpoint.pt"
    cmd = python() + ["-m", "spikeport", "convert", str(checkpoint), "--out", str(work / "build"),
                      "--calibrate", str(spec["calibrate"]), "--eval-samples", str(spec["evaluate"]),
                      *data_args(spec, folders["data"])]  # fmt: skip
    return measured(cmd, kill)


def stage_reference(model: str, folders: dict, work: Path, kill: float) -> dict:
    spec = MODELS[model]
    cmd = python() + ["-m", "spikeport", "run", str(work / "build" / "model.spk.h5"), "--samples",
                      str(spec["reference"]), "--json", str(work / "reference.json"),
                      *data_args(spec, folders["data"])]  # fmt: skip
    row = measured(cmd, kill)
    if row["rc"] == 0:
        report = json.loads((work / "reference.json").read_text())
        row["s_per_sample"] = round(report["wall_time_s"] / report["samples"], 4)
    return row


def stage_lava(model: str, mode: str, folders: dict, work: Path, kill: float) -> dict:
    spec = MODELS[model]
    images = work / "lava_images.npy"
    if not images.exists():
        save = measured(python() + [__file__, "--child", "images", "--model", model, "--data", str(folders["data"]),
                                    "--to", str(images), "--samples", str(spec["lava_samples"])], kill)  # fmt: skip
        if save["rc"] != 0:
            return save
    result = work / f"lava-{mode.replace(':', '')}.json"
    cmd = python() + [__file__, "--child", "lava", "--artifact", str(work / "build" / "model.spk.h5"),
                      "--images", str(images), "--mode", mode, "--to", str(result)]  # fmt: skip
    row = measured(cmd, kill)
    if row["rc"] == 0:
        row.update(json.loads(result.read_text()))
    return row


def stage_check_hw(model: str, work: Path, kill: float) -> dict:
    cmd = python() + ["-m", "spikeport", "check-hw", str(work / "build" / "model.spk.h5"), "--json"]
    row = measured(cmd, kill)
    row.update(check_hw_outcome(row["rc"], row["stdout"]))
    return row


def check_hw_outcome(rc: int, stdout: str) -> dict:
    """What check-hw's --json said: 'ok' (exit 0), 'fail' (exit 1 with a verdict: a limit broken, the network
    checked) or 'crash' (anything else: no verdict to read), with its cores, chips, floor and host processes."""
    try:
        data = json.loads(stdout)
        totals = data["totals"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return {"outcome": "crash"}
    outcome = "ok" if rc == 0 and data.get("ok") else "fail" if rc == 1 and not data.get("ok") else "crash"
    floor = totals.get("floor") or {}
    return {
        "outcome": outcome,
        "verdict": data.get("verdict"),
        "chips": totals.get("chips"),
        "system": (data.get("system") or {}).get("name"),
        "cores": totals.get("cores"),
        "cores_high": totals.get("cores_high"),
        "floor": floor.get("cores"),
        "ratio_to_floor": totals.get("ratio_to_floor"),
        "host_computing": len(totals.get("host_computing", [])),
    }


def stage_report(work: Path, kill: float) -> dict:
    cmd = python() + ["-m", "spikeport", "report", str(work / "reference.json"), "--quiet", "--json",
                      str(work / "report.json")]  # fmt: skip
    return measured(cmd, kill)


def stage_ratio(model: str, folders: dict, work: Path, kill: float) -> dict:
    result = work / "ratio.json"
    cmd = python() + [__file__, "--child", "ratio", "--model", model, "--checkpoint",
                      str(work / "firing" / "checkpoint.pt"), "--artifact", str(work / "build" / "model.spk.h5"),
                      "--data", str(folders["data"]), "--to", str(result)]  # fmt: skip
    row = measured(cmd, kill)
    if row["rc"] == 0:
        row.update(json.loads(result.read_text()))
    return row


# ------------------------------------------------------------------------------------------------ child modes
def child_images(args: argparse.Namespace) -> None:
    """The first test images of the model's data set, channels-last, for the lean Lava process."""
    import numpy as np

    from spikeport.runtime.executor import to_channels_last
    from spikeport.train.data import split_tensors

    spec = MODELS[args.model]
    x, _ = split_tensors(spec["dataset"], args.data or None, "test", args.samples, spec["size"])
    np.save(args.to, to_channels_last(x.numpy()))


def child_lava(args: argparse.Namespace) -> None:
    """A Lava run in a process that imports numpy, h5py and lava only (never torch), compared with the reference."""
    import numpy as np

    from spikeport.ir import artifact
    from spikeport.runtime.compare import first_divergence
    from spikeport.runtime.lava.run import run_lava
    from spikeport.runtime.targets import run_recorded

    graph = artifact.read(args.artifact)
    images = np.load(args.images)
    start = time.perf_counter()
    if args.mode == "whole":
        report = run_lava(graph, images)
    else:
        from spikeport.runtime.lava.partition import run_lava_partitioned

        how, value = args.mode.split(":")
        report = run_lava_partitioned(graph, images, **{"parts" if how == "parts" else "max_processes": int(value)})
    wall = time.perf_counter() - start
    assert "torch" not in sys.modules, "the Lava process imported torch"
    spikes = report.recording
    ref = run_recorded(graph, images, batch_size=1).recording
    lifs = [n.name for n in graph.by_op("lif")]
    rates = {name: float(np.mean(ref[name])) for name in lifs}
    lava = report.to_dict()["lava"]
    out = {
        "samples": len(images),
        "s_per_sample": round(wall / len(images), 2),
        "s_per_step": round(wall / lava["steps"], 4),
        "steps": lava["steps"],
        "lava_processes": lava["processes"],
        "parts": len(lava.get("parts", [])) or 1,
        "largest_part": max((p["processes"] for p in lava.get("parts", [])), default=lava["processes"]),
        "identical": first_divergence(graph, ref, spikes) is None,
        "lif_layers": len(lifs),
        "lif_layers_firing_1pct": sum(r >= 0.01 for r in rates.values()),
        "min_lif_rate": round(min(rates.values()), 4),
    }
    Path(args.to).write_text(json.dumps(out))


def child_ratio(args: argparse.Namespace) -> None:
    """Reference (counters on) / float torch forward, samples/s on the same images; rounds alternate, medians."""
    import torch
    from bench_executor_ratios import reference_and_float_speed

    from spikeport.ir import artifact
    from spikeport.train.checkpoint import load_model
    from spikeport.train.data import split_tensors

    spec = MODELS[args.model]
    model, _ = load_model(args.checkpoint)
    graph = artifact.read(args.artifact)
    split = "train" if spec["dataset"] != "digits" else "test"  # the synthetic folders' test splits are small
    x, _ = split_tensors(spec["dataset"], args.data or None, split, spec["ratio_samples"], spec["size"])
    n, batch = len(x), spec["ratio_batch"]
    sps = reference_and_float_speed(model, graph, x, batch, rounds=3)
    out = {
        "ratio_samples": n,
        "ratio_batch": batch,
        "float_samples_s": round(sps["float"], 2),
        "reference_samples_s": round(sps["reference"], 2),
        "reference_over_float": round(sps["reference"] / sps["float"], 3),
        "torch_threads": torch.get_num_threads(),
    }
    Path(args.to).write_text(json.dumps(out))


# ------------------------------------------------------------------------------------------------ the table
def notes(row: dict) -> list[str]:
    out = []
    if row["stage"] == "check-hw" and row.get("outcome") == "fail":
        out.append(f"check-hw FAILS (a limit broken): {row['verdict']}")
    elif row["rc"] != 0:
        crashed = "crashed" if row["stage"] == "check-hw" else "failed"
        out.append("KILLED for memory" if row.get("killed_for_memory") else f"{crashed} (rc {row['rc']})")
    if row["stage"].startswith("lava") and "identical" in row:
        out.append(f"{row['lava_processes']} Lava processes, {row['parts']} part(s), largest {row['largest_part']}")
        out.append("bit-exact with the reference" if row["identical"] else "DIVERGES from the reference")
        firing = f"{row['lif_layers_firing_1pct']}/{row['lif_layers']}"
        out.append(f"{firing} LIF layers firing >= 1 % (min {row['min_lif_rate']:.1%})")
    if row["stage"] == "check-hw" and row.get("chips"):
        out.append(f"{row['chips']} chip(s) ({row['system'] or 'no system holds them'}), {row.get('cores')} cores")
        if row.get("floor"):
            out.append(
                f"lower bound {row['floor']} cores, ratio {row['ratio_to_floor']} (to {row['cores_high']} extrapolated)"
            )
        out.append(f"{row.get('host_computing', 0)} computing processes on the host")
    if row["stage"] == "ratio" and "reference_over_float" in row:
        speeds = f"{row['reference_samples_s']} vs {row['float_samples_s']} samples/s"
        out.append(f"reference / float torch {row['reference_over_float']} ({speeds}, batch {row['ratio_batch']})")
    return out


def summarize(rows: list[dict]) -> str:
    lines = [
        "| model | attention | stage | wall | per unit | peak PSS (tree) | peak used Δ | goal | notes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        per = []
        if row.get("s_per_sample") is not None:
            per.append(f"{row['s_per_sample']} s/sample")
        if row.get("s_per_step") is not None:
            per.append(f"{row['s_per_step']} s/step")
        goal = MODELS[row["model"]]["goals"].get(row["stage"].split(" ")[0])
        verdict = ""
        if goal is not None:
            ran = row["rc"] == 0 or row.get("outcome") == "fail"  # a check-hw FAIL ran to its verdict
            met = ran and row["peak_pss_gb"] * GB <= goal
            verdict = f"<= {goal / GB:g} GB: {'met' if met else 'NOT met'}"
        lines.append(
            f"| {row['model']} | {row['attention']} | {row['stage']} | {row['wall_s']:.1f} s | {', '.join(per)} | "
            f"{row['peak_pss_gb']:.2f} GB | {row['peak_used_gb']:.2f} GB | {verdict} | {'; '.join(notes(row))} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0]
        + " A CIFAR- or ImageNet-shape model runs here without the data set: each stage makes a small synthetic folder "
        "of the model's data format.",
        epilog="models: "
        + "; ".join(
            f"{name} ({spec['dataset']} shape, {spec['size']}x{spec['size']})" for name, spec in MODELS.items()
        ),
    )
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of: {', '.join(MODELS)} (default all)")
    p.add_argument(
        "--attention", default=",".join(ATTENTIONS), help=f"comma-separated, of: {', '.join(ATTENTIONS)} (default all)"
    )
    p.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of: {', '.join(STAGES)} (default all)")
    p.add_argument("--lava", default=None, help="Lava modes, e.g. whole,parts:4,max:100 (default: per model)")
    p.add_argument("--out", default="build/bench_scale", help="work folder (data, checkpoints, artifacts)")
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--kill-above-gib", type=float, default=20.5, help="kill a stage past this machine used memory")
    # child modes (this script runs them in their own processes)
    p.add_argument("--child", choices=("images", "lava", "ratio"), help=argparse.SUPPRESS)
    for flag in ("--model", "--data", "--to", "--artifact", "--images", "--mode", "--checkpoint"):
        p.add_argument(flag, help=argparse.SUPPRESS)
    p.add_argument("--samples", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        {"images": child_images, "lava": child_lava, "ratio": child_ratio}[args.child](args)
        return []

    kill = args.kill_above_gib * 2**30
    stages = args.stages.split(",")
    rows: list[dict] = []
    for model in args.models.split(","):
        spec = MODELS[model]
        folders = prepare_data(model, Path(args.out))
        for attention in args.attention.split(","):
            work = Path(args.out) / f"{model}-{attention}"
            work.mkdir(parents=True, exist_ok=True)

            def add(stage: str, row: dict, model: str = model, attention: str = attention) -> None:
                row.update(model=model, attention=attention, stage=stage)
                rows.append(row)
                print(f"{model} {attention} {stage}: {row['wall_s']:.1f} s, peak PSS {row['peak_pss_gb']:.2f} GB, "
                      f"used Δ {row['peak_used_gb']:.2f} GB, rc {row['rc']}", flush=True)  # fmt: skip
                if row["rc"] != 0:
                    print(row["stderr_tail"], file=sys.stderr)

            if "train" in stages:
                add("train", stage_train(model, attention, folders, work, kill))
            if not (work / "firing" / "checkpoint.pt").exists():
                made = make_checkpoint(model, attention, folders, work, kill)
                if made["rc"] != 0:
                    add("checkpoint", made)
                    continue
            if "convert" in stages or not (work / "build" / "model.spk.h5").exists():
                add("convert", stage_convert(model, folders, work, kill))
            if "reference" in stages or ("report" in stages and not (work / "reference.json").exists()):
                add("reference", stage_reference(model, folders, work, kill))
            if "lava" in stages:
                for mode in args.lava.split(",") if args.lava else spec["lava"]:
                    add(f"lava {mode}", stage_lava(model, mode, folders, work, kill))
            if "check-hw" in stages:
                add("check-hw", stage_check_hw(model, work, kill))
            if "report" in stages:
                add("report", stage_report(work, kill))
            if "ratio" in stages:
                add("ratio", stage_ratio(model, folders, work, kill))
    for row in rows:
        row.pop("stdout", None)
    print()
    print(summarize(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
