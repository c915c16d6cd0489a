"""The networks of the public compile tables (src/spikeport/hw_profiles/compile_tables/), for tests: the netx files
lava-dl ships or tests/data/netx vendors, and YOLO-KP's layer shapes written as a netx file (its trained file is a
Git LFS object that is not in lava-dl's repository)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import h5py
import numpy as np

DATA = Path(__file__).parent / "data" / "netx"
GTS = Path(sysconfig.get_paths()["purelib"]) / "tests" / "lava" / "lib" / "dl" / "netx" / "gts"
NETWORKS = {
    "pilotnet_lif": GTS / "pilotnet_lif" / "network.net",
    "pilotnet_sdnn": DATA / "pilotnet_sdnn_tutorial.net",
    "oxford": DATA / "oxford.net",
    "mnist": DATA / "mnist_tutorial.net",
}

# lava-dl src/lava/lib/dl/slayer/object_detection/models/yolo_kp.py: (in, out, kernel, stride) of its nine blocks
# and its head (a 1 x 1 conv to 3 anchors x (5 + 11 BDD100K classes) = 48 channels), on 448 x 448 x 3 frames
YOLO_KP = [(3, 16, 3, 2), (16, 32, 3, 2), (32, 64, 3, 2), (64, 128, 3, 2), (128, 256, 3, 1), (256, 256, 3, 2),
           (256, 512, 3, 1), (512, 256, 1, 1), (256, 512, 3, 1), (512, 48, 1, 1)]  # fmt: skip
YOLO_FRAME = 448


def yolo_kp_netx(path: Path, seed: int = 0) -> Path:
    """A netx file with YOLO-KP's layers (sigma-delta ReLU neurons, 8-bit weights drawn at random): its core counts
    depend on its shapes, not on what it learnt."""
    rng = np.random.default_rng(seed)
    size = YOLO_FRAME
    with h5py.File(path, "w") as f:
        layer = f.create_group("layer/0")
        layer["type"] = np.array([b"input"])
        layer["shape"] = np.array([3, size, size])
        _sdnn(layer)
        for i, (cin, cout, k, stride) in enumerate(YOLO_KP, 1):
            size = (size + 2 * (k // 2) - k) // stride + 1
            layer = f.create_group(f"layer/{i}")
            layer["type"] = np.array([b"conv"])
            layer["shape"] = np.array([cout, size, size])
            layer["inChannels"], layer["outChannels"], layer["groups"] = cin, cout, 1
            layer["kernelSize"], layer["stride"] = np.array([k, k]), np.array([stride, stride])
            layer["padding"], layer["dilation"] = np.array([k // 2, k // 2]), np.array([1, 1])
            layer["weight"] = rng.integers(-64, 64, (cout, cin, k, k)).astype(np.float32) * 2
            layer["bias"] = np.zeros(cout, np.float32)
            _sdnn(layer)
    return path


def _sdnn(layer: h5py.Group) -> None:
    neuron = layer.create_group("neuron")
    neuron["type"], neuron["activation"], neuron["vThMant"] = b"SDNN", b"relu", 6
