"""spikeport artifacts for the Python 3.10 parity check (make test-lava310): the whole deploy path.

The main environment (Python 3.11, torch) converts the test model of every attention variant (conftest's
``spiky_model``: every layer fires) to ``<attention>.spk.h5`` and records the reference simulator's spikes
of every spiking layer on a few images in ``<attention>.reference.npz``. The 3.10 environment (upstream
lava-nc, numpy < 2, no torch, no compatibility step) reads the same artifacts, runs them as Lava processes
on fixed_pt, and must reproduce those spikes and predictions bit for bit.

    python tests/lava_testprocs/artifact_parity.py --write build/lava310
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")
SAMPLES = 12


def write(folder: str) -> list[str]:
    """Main environment only (needs torch): artifacts + reference spikes for every attention variant."""
    from conftest import quantized_graph, random_images, spiky_model
    from runs import reference_spikes
    from spikeport.ir import artifact
    from spikeport.runtime.executor import to_channels_last

    os.makedirs(folder, exist_ok=True)
    written = []
    images = to_channels_last(random_images(SAMPLES, seed=7).numpy())
    for attention in ATTENTIONS:
        model = spiky_model(attention)
        graph = quantized_graph(model, random_images(16, seed=1))
        path = artifact.write(graph, os.path.join(folder, f"{attention}.spk.h5"))
        report, spikes = reference_spikes(graph, images)
        tmp = os.path.join(folder, f".{attention}.reference.tmp.npz")
        np.savez(
            tmp,
            images=images,
            predictions=np.asarray(report["predictions"]),
            **{f"spikes/{name}": s for name, s in spikes.items()},
        )
        os.replace(tmp, os.path.join(folder, f"{attention}.reference.npz"))
        fired = sum(int(s.sum()) for s in spikes.values())
        written.append(f"{path} ({fired} reference spikes on {SAMPLES} images)")
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", required=True, metavar="DIR", help="folder for the artifacts and reference spikes")
    args = ap.parse_args(argv)
    for line in write(args.write):
        print(f"wrote {line}")
    return 0


if __name__ == "__main__":
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:0] = [tests]
    sys.exit(main())
