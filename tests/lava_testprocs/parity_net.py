"""A small network of standard Lava processes for the Python 3.10 parity check (make test-lava310).

The main environment (Python 3.11, numpy 2, lava_compat steps applied) runs it and writes every recorded
output to an .npz; the 3.10 environment (upstream lava-nc, numpy < 2, no compatibility step) runs the same
network and must produce identical arrays. It touches the semantics a spikeport Lava graph relies on:
binary and graded Dense with mixed-sign odd weights (LSB truncation), positive and negative weight
exponents, num_weight_bits, two connections summed on one a_in, DelayDense, Sparse, LIFReset, a reshaped
port into Conv (the numpy-2 ReshapePort step), ProdNeuron, and a LIF current that wraps at 2**23.

    python tests/lava_testprocs/parity_net.py --write build/lava310/parity_net.npz
"""

from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

T = 24


def build(seed: int = 0):
    """Returns (root process, {name: sink RingBuffer}, {name: LIF process})."""
    import scipy.sparse as sp
    from lava.proc.conv.process import Conv
    from lava.proc.dense.process import DelayDense, Dense
    from lava.proc.io.sink import RingBuffer as Sink
    from lava.proc.io.source import RingBuffer as Source
    from lava.proc.lif.process import LIF, LIFReset
    from lava.proc.prodneuron.process import ProdNeuron
    from lava.proc.sparse.process import Sparse

    rng = np.random.default_rng(seed)
    spikes_in = Source(data=(rng.random((16, T)) < 0.3).astype(np.int32))
    graded_in = Source(data=rng.integers(-200, 201, size=(8, T)).astype(np.int32))
    huge_in = Source(data=np.tile(np.array([[131077], [-131073], [1000]]), (1, T)).astype(np.int32))

    lif1 = LIF(shape=(12,), du=300, dv=500, vth=40, bias_mant=rng.integers(-50, 51, 12), bias_exp=3)
    d1 = Dense(weights=rng.integers(-255, 256, size=(12, 16)), weight_exp=-1)
    d2 = Dense(weights=rng.integers(-128, 128, size=(12, 8)), num_message_bits=16, num_weight_bits=6, weight_exp=-4)
    spikes_in.s_out.connect(d1.s_in)
    graded_in.s_out.connect(d2.s_in)
    d1.a_out.connect(lif1.a_in)
    d2.a_out.connect(lif1.a_in)  # two connections summed on one a_in

    lif2 = LIFReset(shape=(10,), du=4095, dv=100, vth=20, reset_interval=8, reset_offset=3)
    dd = DelayDense(weights=rng.integers(0, 120, size=(10, 12)), delays=rng.integers(0, 4, size=(10, 12)))
    lif1.s_out.connect(dd.s_in)
    dd.a_out.connect(lif2.a_in)

    lif3 = LIF(shape=(10,), du=1000, dv=0, vth=30)
    w4 = rng.integers(-200, 200, size=(10, 10)) * (rng.random((10, 10)) < 0.4)
    sparse = Sparse(weights=sp.csr_matrix(w4), weight_exp=1)
    lif2.s_out.connect(sparse.s_in)
    sparse.a_out.connect(lif3.a_in)

    conv = Conv(weight=rng.integers(-300, 300, size=(4, 2, 2, 3)), input_shape=(2, 2, 3), padding=1)
    lif1.s_out.reshape((2, 2, 3)).connect(conv.s_in)

    prod = ProdNeuron(shape=(8,), vth=50, exp=4)
    graded_in.s_out.connect(prod.a_in1)
    graded_in.s_out.connect(prod.a_in2)

    lif_wrap = LIF(shape=(3,), du=0, dv=4095, vth=100000)
    ident = Dense(weights=np.eye(3, dtype=int), num_message_bits=24)
    huge_in.s_out.connect(ident.s_in)
    ident.a_out.connect(lif_wrap.a_in)
    # Lava compiles only the processes connected to the root: tie this branch to the rest (a silent
    # disconnected branch would not run, and its Var.get() would return the initial values)
    tie = Dense(weights=np.zeros((3, 12), int))
    lif1.s_out.connect(tie.s_in)
    tie.a_out.connect(lif_wrap.a_in)

    sinks = {}
    for name, port in (
        ("lif1", lif1.s_out),
        ("lif2", lif2.s_out),
        ("lif3", lif3.s_out),
        ("conv", conv.a_out),
        ("prod", prod.s_out),
        ("lif_wrap", lif_wrap.s_out),
    ):
        sinks[name] = Sink(shape=port.shape, buffer=T)
        port.connect(sinks[name].a_in)
    return spikes_in, sinks, {"lif1": lif1, "lif2": lif2, "lif3": lif3, "lif_wrap": lif_wrap}


def run(seed: int = 0) -> dict:
    """Run the network for T steps (LavaSession, fixed_pt); every recorded array as int64."""
    from spikeport.runtime.lava.compat import import_lava
    from spikeport.runtime.lava.session import LavaSession

    steps = import_lava()
    from lava.magma.core.run_configs import Loihi2SimCfg

    root, sinks, lifs = build(seed)
    out = {}
    with LavaSession(root, Loihi2SimCfg(select_tag="fixed_pt")) as session:
        session.run(T)
        for name, sink in sinks.items():
            out[f"sink/{name}"] = sink.data.get().astype(np.int64)
        for name, lif in lifs.items():
            out[f"u/{name}"] = lif.u.get().astype(np.int64)
            out[f"v/{name}"] = lif.v.get().astype(np.int64)
    out["meta/compat_steps"] = np.array(steps, dtype=str)
    return out


def environment() -> dict:
    return {"python": platform.python_version(), "numpy": np.__version__}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", required=True, help="the .npz to write (atomically)")
    args = ap.parse_args(argv)
    out = run()
    out.update({f"meta/{k}": np.array(v) for k, v in environment().items()})
    os.makedirs(os.path.dirname(os.path.abspath(args.write)), exist_ok=True)
    tmp = args.write + ".tmp.npz"
    np.savez(tmp, **out)
    os.replace(tmp, args.write)
    fired = {k: int((v != 0).sum()) for k, v in out.items() if k.startswith("sink/")}
    print(
        f"wrote {args.write}: Python {environment()['python']}, numpy {environment()['numpy']}, "
        f"compat steps {list(out['meta/compat_steps'])}, nonzero outputs {fired}"
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
