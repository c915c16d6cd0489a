"""lava-dl's own ``netx.hdf5.Network`` on Lava: the parity target for spikeport's netx import.

spikeport imports a netx file into its IR and runs it on any Target; this runs the same file the way lava-dl
does (its own processes and blocks, netx's own reset), recording every layer, so that the two can be compared
spike for spike (``compare_layers``; tests/test_netx_*.py, benchmarks/bench_lava_vs_netx.py).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from spikeport.errors import ConfigError
from spikeport.ir.graph import Graph
from spikeport.netx.read import has_sdnn_input, starts_with_input_block
from spikeport.runtime.lava import backend as LB, compat
from spikeport.runtime.lava.leftovers import run_temp_dir
from spikeport.runtime.lava.run import sim_config
from spikeport.runtime.lava.session import LavaSession
from spikeport.runtime.recording import Spikes, recorded


def run_lavadl_netx(
    path: str | os.PathLike[str], inputs: np.ndarray, run_cfg: Any = None, fast: bool = False
) -> list[np.ndarray]:
    """lava-dl's ``netx.hdf5.Network`` on Lava (fixed_pt): spikes of every netx layer, ``[S, T, *shape]``
    channels-last, for spike inputs ``[S, T, *shape]`` streamed one sample every R = 2**ceil(log2 T) steps
    with netx's own reset (``reset_interval=R``). A network with an SDNN input layer takes one sample of
    integers [1, T, *shape] on its Delta's a_in (no reset) and gives graded outputs (the Sigma's sums).
    ``fast`` swaps in spikeport's bit-exact CPU models of Lava's Conv/Sparse (the processes stay lava-dl's)."""
    compat.import_lava()
    from lava.lib.dl.netx.blocks.process import Input

    Network = compat.netx_network()  # lava-dl's, numpy-2 safe
    from lava.proc.io.source import RingBuffer

    from spikeport.runtime.lava.procs.processes import SpikeRecorder

    S, T = inputs.shape[:2]
    R = LB.reset_interval(T)
    starts_with_input = starts_with_input_block(path)
    sdnn = has_sdnn_input(path)
    if sdnn and S != 1:
        raise ConfigError(f"{path}: netx's SDNN neurons have no reset: run one sample (one stream) per call")
    # netx resets layer k at step offset + 1 + k: right when the sample's first input reaches it if the
    # network starts with an Input block (no synapse); one step later otherwise.
    xyz = tuple(int(n) for n in _to_xyz(np.asarray(inputs[:1, :1])).shape[2:])
    net = Network(
        net_config=str(path),
        input_shape=xyz if len(xyz) == 3 else None,
        reset_interval=None if sdnn else R,
        reset_offset=0 if starts_with_input else 1,
    )
    depth = np.cumsum([0 if isinstance(layer, Input) else 1 for layer in net.layers])
    total = S * R + int(depth[-1]) + 1
    x = _to_xyz(np.asarray(inputs))
    data = np.zeros((*x.shape[2:], total), np.int32)
    for s in range(S):
        data[..., s * R : s * R + T] = np.moveaxis(x[s], 0, -1)
    src = RingBuffer(data=data)
    # an SDNN input layer's Delta is fed on its a_in, as lava-dl's test_pilotnet_sdnn does (netx's Input block
    # port is not connected to its neuron)
    src.s_out.connect(net.in_layer.neuron.a_in if sdnn else net.inp)
    with run_temp_dir("netx") as tmp:
        paths = []
        for k, layer in enumerate(net.layers):
            paths.append(os.path.join(tmp, f"{k}.npy"))
            shape = tuple(int(n) for n in layer.out.shape)  # netx's shapes hold numpy ints
            np.lib.format.open_memmap(paths[-1], mode="w+", dtype=np.int32, shape=(total, *shape)).flush()
            rec = SpikeRecorder(shape=shape, path=paths[-1])
            layer.out.connect(rec.s_in)
        with LavaSession(src, run_cfg or sim_config(fast=fast)) as session:
            session.run(total)
        out = []
        for k, p in enumerate(paths):
            rec = np.load(p)
            idx = (np.arange(S)[:, None] * R + np.arange(T)[None, :] + int(depth[k])).reshape(-1)
            out.append(_from_xyz(rec[idx].reshape(S, T, *rec.shape[1:])))
    return out


def _to_xyz(x: np.ndarray) -> np.ndarray:
    """[S, T, H, W, C] -> netx's (x, y, f) = (W, H, C) per step; 1-D inputs unchanged."""
    return x.transpose(0, 1, 3, 2, 4) if x.ndim == 5 else x


def _from_xyz(x: np.ndarray) -> np.ndarray:
    return x.transpose(0, 1, 3, 2, 4) if x.ndim == 5 else x


def compare_layers(graph: Graph, netx_spikes: list[np.ndarray], spikes: Spikes) -> list[dict[str, Any]]:
    """Per imported netx layer: spikes in both runs and the number of (sample, step, neuron) mismatches."""
    rows = []
    for name, theirs in zip(recorded(graph), netx_spikes, strict=True):  # one neuron layer per netx layer
        ours = spikes[name].reshape(theirs.shape)
        rows.append(
            {
                "layer": name,
                "spikes": int(ours.sum()),
                "netx_spikes": int(theirs.sum()),
                "mismatches": int(np.count_nonzero(ours != theirs)),
            }
        )
    return rows
