"""Lava under torchrun (issue 45): samples/s of one process against two ranks on a CIFAR-shaped network, side by side
in one run, and the memory of each rank's process tree.

    python benchmarks/bench_lava_ranks.py                      # spikformer-4-384 lrf_dyn at CIFAR-10 shape, 8 samples
    python benchmarks/bench_lava_ranks.py --attention ssa --partition 4 --samples 8 --rounds 3 --json ranks.json
    python benchmarks/bench_lava_ranks.py --preset digits-tiny --samples 6 --rounds 1       # a quick check

The network is untrained with BatchNorm statistics from the data set's images so that every LIF layer fires
(tests/scale_models.py), on a synthetic CIFAR-10 folder. Each round runs, in turn (the order flipped every round),

  1 rank    ``python -m spikeport run ARTIFACT --backend lava --samples N [--partition P] --json ...``
  2 ranks   ``python -m torch.distributed.run --standalone --nproc_per_node 2 -m spikeport run ...`` (the same flags)

each as its own process group while a thread samples /proc every 0.25 s (benchmarks/tree_memory.py): for each rank
(a worker process and the Lava processes below it) the peak of its tree's summed PSS, its peak process count, and
how long its Lava network was alive (from its first Lava child to its last: build, compile, start, the steps and
the stop of its own share). Printed per round and as medians over the rounds with their spread (min..max):

  job samples/s       N / the whole command's wall time (interpreter, imports, data, rendezvous and gather included)
  run samples/s       N / the report's wall_time_s (the Lava run; with 2 ranks the longest rank's)
  2 ranks / 1 rank    of each, per round, then the median
  per rank            its share's samples / its network's life; its tree's peak PSS and processes

It also checks that the two-rank report equals the one-process report field for field (wall times aside). Every figure
names the executor (lava-fixed_pt) and is wall clock on whatever machine runs it: on a 2-core machine two ranks share
the same cores (one Lava process tree each), so expect little gain there; the per-rank figures are what an estimate
for more cores or machines starts from (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

from tree_memory import descendants, pss_bytes  # noqa: E402

GB = 1e9
SAMPLE_S = 0.25


def build_artifact(preset: str, attention: str, samples: int, out: Path) -> tuple[Path, list[str]]:
    """The artifact of an untrained ``preset`` whose every layer fires, and the ``run`` flags of its test data."""
    from conftest import quantized_graph, random_images, spiky_model
    from spikeport.ir import artifact

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{preset}-{attention}.spk.h5"
    if preset == "digits-tiny":
        data_flags: list[str] = []
        if not path.exists():
            graph = quantized_graph(spiky_model(attention), random_images(16, seed=1))
            graph.meta["dataset"] = "digits"
            artifact.write(graph, path)
        return path, data_flags
    from scale_models import firing_model, write_synthetic_cifar

    folder = out / f"cifar10-{samples}"
    if not folder.exists():
        write_synthetic_cifar(folder, per_file=max(16, samples))  # the test batch holds per_file images
    if not path.exists():
        from scale_models import dataset_images

        model = firing_model(preset, attention, "cifar10", folder)
        calib, _ = dataset_images("cifar10", folder, "train", 16, 32)
        graph = quantized_graph(model, calib)
        graph.meta["dataset"] = "cifar10"
        artifact.write(graph, path)
    return path, ["--dataset", "cifar10", "--data-dir", str(folder)]


class RankTrees:
    """Samples, every SAMPLE_S, each rank's process tree under ``root``: the worker processes (``root`` itself for one
    process; torchrun's children that run spikeport for a job) and the Lava processes below each."""

    def __init__(self, root: int, torchrun: bool) -> None:
        self.root, self.torchrun = root, torchrun
        self.ranks: dict[int, dict] = {}  # worker pid -> rank, peak_pss, peak_processes, lava_first, lava_last
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> RankTrees:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def workers(self) -> list[int]:
        if not self.torchrun:
            return [self.root]
        return [pid for pid in descendants(self.root)[1:] if _parent(pid) == self.root and b"spikeport" in _cmd(pid)]

    def _loop(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for worker in self.workers():
                row = self.ranks.setdefault(worker, {"rank": _rank(worker), "peak_pss": 0, "peak_processes": 0})
                tree = descendants(worker)
                lava = [pid for pid in tree[1:] if b"resource_tracker" not in _cmd(pid)]
                row["peak_pss"] = max(row["peak_pss"], sum(pss_bytes(pid) for pid in tree))
                row["peak_processes"] = max(row["peak_processes"], len(tree))
                if lava:
                    row.setdefault("lava_first", now)
                    row["lava_last"] = now
            self._stop.wait(SAMPLE_S)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _cmd(pid: int) -> bytes:
    return _read(f"/proc/{pid}/cmdline")


def _parent(pid: int) -> int:
    stat = _read(f"/proc/{pid}/stat").decode(errors="replace")
    return int(stat[stat.rfind(")") + 2 :].split()[1]) if ")" in stat else -1


def _rank(pid: int) -> int:
    for item in _read(f"/proc/{pid}/environ").split(b"\0"):
        if item.startswith(b"RANK="):
            return int(item[5:])
    return 0


def run_job(ranks: int, artifact: Path, flags: list[str], samples: int, out: Path) -> dict:
    """One ``spikeport run --backend lava`` of ``samples`` samples in ``ranks`` processes, measured from outside."""
    report_path = out / f"report-{ranks}.json"
    report_path.unlink(missing_ok=True)
    run = ["-m", "spikeport", "run", str(artifact), "--backend", "lava", "--samples", str(samples), *flags]
    run += ["--json", str(report_path), "--quiet"]
    launch = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks)] if ranks > 1 else []
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, *launch, *run], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    with RankTrees(proc.pid, ranks > 1) as trees:
        _, err = proc.communicate()
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"{ranks} rank(s): exit status {proc.returncode}\n{err[-3000:]}")
    report = json.loads(report_path.read_text())
    shares = [len(range(samples)[_share(samples, ranks, r)]) for r in range(ranks)]
    per_rank = []
    for row in sorted(trees.ranks.values(), key=lambda r: r["rank"]):
        life = row["lava_last"] - row["lava_first"] if "lava_first" in row else None
        per_rank.append(
            {
                "rank": row["rank"],
                "samples": shares[row["rank"]],
                "lava_network_s": None if life is None else round(life, 2),
                "samples_s": None if not life else round(shares[row["rank"]] / life, 4),
                "peak_pss_gb": round(row["peak_pss"] / GB, 3),
                "peak_processes": row["peak_processes"],
            }
        )
    return {
        "ranks": ranks,
        "job_s": round(wall, 2),
        "run_s": report["wall_time_s"],
        "job_samples_s": round(samples / wall, 4),
        "run_samples_s": round(samples / report["wall_time_s"], 4),
        "processes": report["lava"]["processes"],
        "per_rank": per_rank,
        "report": report,
    }


def _share(samples: int, world: int, rank: int) -> slice:
    """The samples rank ``rank`` of ``world`` runs (runtime.distributed.Ranks.shard's split)."""
    size, more = divmod(samples, world)
    first = rank * size + min(rank, more)
    return slice(first, first + size + (rank < more))


def same_report(a: dict, b: dict) -> bool:
    """Field for field, wall times aside (the run's and each Lava part's) and the rank count torchrun's report names."""

    def strip(report: dict) -> dict:
        data = json.loads(json.dumps(report))
        data.pop("wall_time_s", None)
        data.pop("ranks", None)
        for row in data.get("lava", {}).get("parts") or []:
            row.pop("wall_s", None)
        return data

    return strip(a) == strip(b)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}..{max(values):.3f})"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="spikformer-4-384", choices=("spikformer-4-384", "digits-tiny"))
    ap.add_argument("--attention", default="lrf_dyn", choices=("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn"))
    ap.add_argument("--samples", type=int, default=8, help="samples per run (2 ranks: half each)")
    ap.add_argument("--partition", type=int, help="--partition N of each run (Lava networks run one after another)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of 1 rank and 2 ranks, order flipped each round")
    ap.add_argument("--out", default="build/bench_lava_ranks", help="work folder (data, artifact, reports)")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args(argv)
    out = Path(args.out)
    artifact, flags = build_artifact(args.preset, args.attention, args.samples, out)
    flags += ["--partition", str(args.partition)] if args.partition else []
    network = f"{args.preset} {args.attention}" + (f", {args.partition} parts" if args.partition else "")
    print(f"lava-fixed_pt, {network}, {args.samples} samples a run, {len(os.sched_getaffinity(0))} cores")
    rounds: list[dict[int, dict]] = []
    for r in range(args.rounds):
        runs: dict[int, dict] = {}
        for ranks in (1, 2) if r % 2 == 0 else (2, 1):
            runs[ranks] = run_job(ranks, artifact, flags, args.samples, out)
            row = runs[ranks]
            tail = "; ".join(
                f"rank {p['rank']}: {p['samples']} samples, network alive {p['lava_network_s']} s, "
                f"{p['peak_pss_gb']} GB PSS, {p['peak_processes']} processes"
                for p in row["per_rank"]
            )
            print(
                f"round {r + 1}, {ranks} rank(s): job {row['job_s']} s ({row['job_samples_s']} samples/s), run "
                f"{row['run_s']:.2f} s ({row['run_samples_s']} samples/s) | {tail}"
            )
        if not same_report(runs[1]["report"], runs[2]["report"]):
            raise SystemExit(f"round {r + 1}: the 2-rank report differs from the 1-process report")
        rounds.append(runs)
    summary: dict = {"network": network, "executor": "lava-fixed_pt", "samples": args.samples, "rounds": args.rounds}
    print(f"\nmedians over {args.rounds} rounds (min..max); reports of 1 and 2 ranks equal in every round")
    for key in ("job_samples_s", "run_samples_s"):
        for ranks in (1, 2):
            values = [runs[ranks][key] for runs in rounds]
            summary[f"{key}_{ranks}"] = values
            print(f"  {key} {ranks} rank(s): {spread(values)}")
        ratios = [runs[2][key] / runs[1][key] for runs in rounds]
        summary[f"{key}_ratio"] = ratios
        print(f"  {key} 2 ranks / 1 rank: {spread(ratios)}")
    for ranks in (1, 2):
        for rank in range(ranks):
            rows = [next(p for p in runs[ranks]["per_rank"] if p["rank"] == rank) for runs in rounds]
            pss = [p["peak_pss_gb"] for p in rows]
            alive = [p["lava_network_s"] for p in rows if p["lava_network_s"] is not None]
            summary[f"rank{rank}_of_{ranks}"] = rows
            print(
                f"  {ranks} rank(s), rank {rank}: peak PSS {spread(pss)} GB, network alive "
                f"{spread(alive) if alive else '-'} s, {max(p['peak_processes'] for p in rows)} processes"
            )
    if args.json:
        for runs in rounds:
            for row in runs.values():
                row.pop("report")
        Path(args.json).write_text(json.dumps({"summary": summary, "rounds": rounds}, indent=1))
        print(f"wrote {args.json}")
    return summary


if __name__ == "__main__":
    main()
