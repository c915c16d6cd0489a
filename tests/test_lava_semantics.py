"""The integer semantics of Lava's fixed_pt models that docs/lava_notes.md states, checked against Lava
itself (every golden number below is a Lava output) and against spikeport.fixedpoint where it mirrors them.
Marked lava310: the same numbers must come out of upstream lava-nc on Python 3.10 / numpy 1.x.
"""

import numpy as np
import pytest

from spikeport import fixedpoint as fx
from spikeport.runtime.lava.compat import import_lava
from spikeport.runtime.lava.session import LavaSession

pytestmark = [pytest.mark.lava, pytest.mark.lava310]
import_lava()

from lava.magma.core.run_configs import Loihi2SimCfg  # noqa: E402
from lava.proc.dense.process import DelayDense, Dense  # noqa: E402
from lava.proc.io.sink import RingBuffer as Sink  # noqa: E402
from lava.proc.io.source import RingBuffer as Source  # noqa: E402
from lava.proc.lif.process import LIF, LIFReset  # noqa: E402

CFG = Loihi2SimCfg(select_tag="fixed_pt")


def record(data: np.ndarray, synapses: dict, steps: int) -> dict:
    """One Source feeding every synapse process, each into its own Sink: {name: [steps, *out_shape]}."""
    src = Source(data=data)
    sinks = {}
    for name, syn in synapses.items():
        sinks[name] = Sink(shape=syn.a_out.shape, buffer=steps)
        src.s_out.connect(syn.s_in)
        syn.a_out.connect(sinks[name].a_in)
    with LavaSession(src, CFG) as session:
        session.run(steps)
        return {k: np.moveaxis(s.data.get().astype(np.int64), -1, 0) for k, s in sinks.items()}


def test_lif_update_wrap_clip_bias_threshold():
    T, N = 6, 6
    a = np.zeros((N, T), int)
    a[0, 0], a[1, 0], a[2, 0], a[3, 0:2], a[5, 0] = 131077, 131072, -5, 1, -131073
    bias_mant, bias_exp = np.array([0, 0, 0, 0, 3, 0]), np.array([0, 0, 0, 0, 2, 0])
    src, ident = Source(data=a), Dense(weights=np.eye(N, dtype=int), num_message_bits=24)
    lif = LIF(shape=(N,), du=100, dv=200, vth=100000, bias_mant=bias_mant, bias_exp=bias_exp)
    sink = Sink(shape=(N,), buffer=T)
    src.s_out.connect(ident.s_in)
    ident.a_out.connect(lif.a_in)
    lif.s_out.connect(sink.a_in)
    us, vs = [], []
    with LavaSession(lif, CFG) as session:
        for _ in range(T):
            session.run(1)
            us.append(lif.u.get().astype(np.int64))
            vs.append(lif.v.get().astype(np.int64))
        s = sink.data.get().astype(np.int64).T
    us, vs = np.array(us), np.array(vs)
    # golden (Lava): n0 131077 << 6 = 8388928 wraps to -8388288; n1 u = 2**23 exactly stays (v clips to
    # 2**23 - 1 and spikes); n2 decays toward zero: -320 * 3995 >> 12 -> -312; n5 -8388672 wraps up
    assert us[1].tolist() == [-8388288, 8388608, -320, 64, 0, 8388544]
    assert us[2].tolist() == [-8181447, 8181760, -312, 126, 0, 8181697]
    assert vs[1].tolist() == [-8388288, 0, -320, 64, 23, 0]
    assert vs[2].tolist() == [-8388607, 0, -616, 186, 33, 0]
    assert vs[0, 4] == 12  # bias 3 << 2 from step 1 on
    assert s[:, 1].tolist() == [0, 1, 1, 1, 1, 1] and s[:, 5].tolist() == [0, 1, 1, 1, 1, 1]
    # the same numbers from spikeport's reference formula (effective bias, one LIF group)
    p = fx.LifParams(du=100, dv=200, vth=100000, bias_mant=bias_mant << bias_exp, bias_exp=0)
    u = v = np.zeros(N, np.int64)
    for t in range(T):
        a_in = a[:, t - 1] if t else np.zeros(N, np.int64)  # Dense delivers one step later
        u, v, spk = fx.lif_step(fx.INT, u, v, a_in.astype(np.int64), p)
        assert np.array_equal(u, us[t]) and np.array_equal(v, vs[t]) and np.array_equal(spk, s[t]), t


def test_lif_spikes_on_strictly_greater_and_resets_v_only():
    T = 4
    a = np.zeros((2, T), int)
    a[:, 0] = [10, 11]  # vth 10: v = 10 << 6 does not spike, 11 << 6 does
    src, ident = Source(data=a), Dense(weights=np.eye(2, dtype=int), num_message_bits=8)
    lif = LIF(shape=(2,), du=0, dv=0, vth=10)
    sink = Sink(shape=(2,), buffer=T)
    src.s_out.connect(ident.s_in)
    ident.a_out.connect(lif.a_in)
    lif.s_out.connect(sink.a_in)
    with LavaSession(lif, CFG) as session:
        session.run(2)
        u, v = lif.u.get(), lif.v.get()
        spikes = sink.data.get()[:, :2]
    assert spikes.tolist() == [[0, 0], [0, 1]]
    assert u.tolist() == [640, 704] and v.tolist() == [640, 0]  # u is not reset by a spike


def test_dense_clip_truncate_sign_modes_exponents_message_bits():
    T = 4
    x = np.zeros((4, T), int)
    x[:, 0], x[:, 1], x[:, 2] = [5, -1, 1, 0], [1, 1, 1, 1], [2, 3, -4, 7]
    w_mixed = np.array([[3, -3, 100, -128], [300, -300, 1, 1], [7, 5, 3, 1]])
    w_exc = np.array([[3, 5, 300, 255]])
    out = record(
        x,
        {
            "binary": Dense(weights=w_mixed),
            "graded": Dense(weights=w_mixed, num_message_bits=8),
            "exp-1": Dense(weights=w_mixed, num_message_bits=8, weight_exp=-1),
            "exp+2": Dense(weights=w_mixed, num_message_bits=8, weight_exp=2),
            "bits6": Dense(weights=w_mixed, num_message_bits=8, num_weight_bits=6),
            "exc": Dense(weights=w_exc),
            "exc-bits6": Dense(weights=w_exc, num_message_bits=8, num_weight_bits=6),
            "inh": Dense(weights=-w_exc, num_message_bits=8),
            "inh-bits6": Dense(weights=-w_exc, num_message_bits=8, num_weight_bits=6),
            "floor": Dense(weights=np.array([[-3, 0, 0, 0]]), num_message_bits=8, weight_exp=-1),
        },
        T,
    )
    assert out["binary"][0].tolist() == [0, 0, 0]  # one step of latency
    # mixed: clip to [-256, 255], drop the LSB (floor): [[2,-4,100,-128],[254,-256,0,0],[6,4,2,0]];
    # binary: any non-zero input (also -1, 5) counts as one spike
    assert out["binary"][1:].tolist() == [[98, -2, 12], [-30, -2, 12], [-30, -2, 12]]
    assert out["graded"][1:].tolist() == [[114, 1526, 28], [-30, -2, 12], [-1304, -260, 16]]
    assert out["exp-1"][1:].tolist() == [[57, 763, 14], [-15, -1, 6], [-652, -130, 8]]
    assert out["exp+2"][1].tolist() == [456, 6104, 112]
    assert out["bits6"][1:].tolist() == [[104, 1496, 0], [-40, -8, 0], [-1304, -272, 0]]
    assert out["exc"][1:, 0].tolist() == [263, 518, 518]  # excitatory: no LSB dropped, clip 255
    assert out["exc-bits6"][1:, 0].tolist() == [248, 508, 768]
    assert out["inh"][1:, 0].tolist() == [-265, -518, -786]
    assert out["inh-bits6"][1:, 0].tolist() == [-248, -508, -768]
    assert out["floor"][1:, 0].tolist() == [-8, -2, -3]  # (-3*5) >> 1 = -8: floor, not trunc


def test_graded_dense_arithmetic_is_int32():
    x = np.zeros((1, 3), int)
    x[0, 0] = 2**30
    out = record(x, {"d": Dense(weights=np.array([[4]]), num_message_bits=24)}, 3)
    assert out["d"][1, 0] == 0  # 2**32 wrapped in int32


def test_delays_and_per_slot_exponent():
    T = 6
    x = np.zeros((2, T), int)
    x[:, 0], x[0, 2] = 1, 1
    x2 = np.zeros((2, T), int)
    x2[:, 0:2] = 1
    dd = DelayDense(weights=np.array([[10, 20], [30, 40]]), delays=np.array([[0, 1], [3, 2]]))
    out = record(x, {"dd": dd}, T)
    # spike at t with delay d arrives at t + 1 + d
    assert out["dd"].tolist() == [[0, 0], [10, 0], [20, 0], [10, 40], [0, 30], [0, 0]]
    out = record(
        x2,
        {
            "dd": DelayDense(weights=np.array([[-3, -3]]), delays=np.array([[0, 1]]), weight_exp=-1),
            "d": Dense(weights=np.array([[-3, -3]]), weight_exp=-1),
        },
        T,
    )
    assert out["dd"][:, 0].tolist() == [0, -2, -4, -2, 0, 0]  # floor per delay slot: -2 + -2
    assert out["d"][:, 0].tolist() == [0, -3, -3, 0, 0, 0]  # floor of the sum: -6 >> 1


def test_sparse_equals_dense():
    import scipy.sparse as sp
    from lava.proc.sparse.process import Sparse

    rng = np.random.default_rng(0)
    w = rng.integers(-300, 300, size=(6, 8)) * (rng.random((6, 8)) < 0.5)
    x = rng.integers(-3, 4, size=(8, 5))
    out = record(
        x,
        {
            "dense": Dense(weights=w, num_message_bits=8, weight_exp=-2),
            "sparse": Sparse(weights=sp.csr_matrix(w), num_message_bits=8, weight_exp=-2),
            "dense_b": Dense(weights=w),
            "sparse_b": Sparse(weights=sp.csr_matrix(w)),
        },
        5,
    )
    assert np.array_equal(out["dense"], out["sparse"]) and np.array_equal(out["dense_b"], out["sparse_b"])
    assert out["dense"].any()


CONV = dict(C=4, H=5, W=6, O=6, groups=2, kernel=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))


@pytest.fixture(scope="module")
def conv_case():
    """A torch-layout conv (C,H,W map, (out, in/groups, kH, kW) kernel, (H, W) tuples) run as Lava Conv."""
    from lava.proc.conv.process import Conv

    c = CONV
    rng = np.random.default_rng(0)
    x_chw = rng.integers(-3, 4, size=(c["C"], c["H"], c["W"]))
    w_torch = rng.integers(-300, 300, size=(c["O"], c["C"] // c["groups"], *c["kernel"]))  # > 8 bits on purpose
    x_xyz = x_chw.transpose(2, 1, 0)  # Lava (X, Y, Z) = (W, H, C)
    w_lava = w_torch[:, :, ::-1, ::-1].transpose(0, 3, 2, 1).copy()  # (out, kW, kH, in/groups), flipped
    T = 3
    data = np.repeat(x_xyz[..., None], T, axis=-1)
    kw = dict(
        input_shape=x_xyz.shape,
        stride=c["stride"][::-1],
        padding=c["padding"][::-1],
        dilation=c["dilation"][::-1],
        groups=c["groups"],
    )
    out = record(
        data,
        {"graded": Conv(weight=w_lava, num_message_bits=8, weight_exp=3, **kw), "binary": Conv(weight=w_lava, **kw)},
        T,
    )
    return x_chw, w_torch, {k: v[1] for k, v in out.items()}  # step 2: the input of step 1


def test_conv_layout_index_mapping(conv_case):
    x_chw, w_torch, out = conv_case
    c = CONV
    # torch.nn.functional.conv2d semantics (cross-correlation) in spikeport's channels-last form
    w_hwc = w_torch.transpose(0, 2, 3, 1)  # (out, kH, kW, in/groups)
    args = (c["stride"], c["padding"], c["dilation"], c["groups"])
    ref = fx.conv2d_nhwc(x_chw.transpose(1, 2, 0)[None], w_hwc, *args)[0]
    ref_b = fx.conv2d_nhwc((x_chw != 0).transpose(1, 2, 0)[None].astype(np.int64), w_hwc, *args)[0]
    assert np.array_equal(out["graded"].transpose(1, 0, 2), ref)  # no weight_exp, no 8-bit clip
    assert np.array_equal(out["binary"].transpose(1, 0, 2), ref_b)  # binary: input != 0


def test_conv_layout_equals_torch_conv2d(conv_case):
    torch = pytest.importorskip("torch")
    x_chw, w_torch, out = conv_case
    c = CONV
    t = torch.nn.functional.conv2d(
        torch.tensor(x_chw[None], dtype=torch.float64),
        torch.tensor(w_torch, dtype=torch.float64),
        stride=c["stride"],
        padding=c["padding"],
        dilation=c["dilation"],
        groups=c["groups"],
    )[0]
    assert np.array_equal(out["graded"].transpose(2, 1, 0), t.numpy().astype(np.int64))


def test_conv_wraps_at_24_bits():
    from lava.proc.conv.process import Conv

    data = np.zeros((1, 1, 1, 3), int)
    data[..., 0] = 2**22
    out = record(data, {"c": Conv(weight=np.array([[[[3]]]]), input_shape=(1, 1, 1), num_message_bits=24)}, 3)
    assert out["c"][1].item() == 3 * 2**22 - 2**24


def test_inputs_sum_on_a_in_and_lifreset_schedule():
    T = 8
    src = Source(data=np.ones((2, T), int))
    d1, d2 = Dense(weights=np.array([[5, 0]])), Dense(weights=np.array([[0, 7]]))
    lif = LIFReset(shape=(1,), du=4095, dv=0, vth=10**5, reset_interval=4, reset_offset=2)
    for d in (d1, d2):
        src.s_out.connect(d.s_in)
        d.a_out.connect(lif.a_in)
    vs = []
    with LavaSession(lif, CFG) as session:
        for _ in range(T):
            session.run(1)
            vs.append(int(lif.v.get()[0]))
    # 5 + 7 = 12 per step from step 2; u, v zeroed at steps t % 4 == 2 before that step's input
    assert [v // (12 << 6) for v in vs] == [0, 1, 2, 3, 4, 1, 2, 3]


def test_prodneuron_gradedvec_and_custom_process():
    from lava.proc.graded.process import GradedVec
    from lava.proc.prodneuron.process import ProdNeuron

    from lava_testprocs.scale import Scale

    T = 3
    a1 = Source(data=np.array([[3, -3, 100, 7]]).T.repeat(T, 1))
    a2 = Source(data=np.array([[5, 5, 100, -1]]).T.repeat(T, 1))
    prod = ProdNeuron(shape=(4,), vth=10, exp=1)
    graded = GradedVec(shape=(4,), vth=10)
    scale = Scale(shape=(4,), mant=3, exp=1)
    a1.s_out.connect(prod.a_in1)
    a2.s_out.connect(prod.a_in2)
    a1.s_out.connect(graded.a_in)
    a2.s_out.connect(graded.a_in)
    a1.s_out.connect(scale.s_in)
    sinks = {}
    for name, port in (("prod", prod.s_out), ("graded", graded.s_out), ("scale", scale.a_out)):
        sinks[name] = Sink(shape=(4,), buffer=T)
        port.connect(sinks[name].a_in)
    with LavaSession(a1, CFG) as session:
        session.run(T)
        out = {k: s.data.get().astype(np.int64).T for k, s in sinks.items()}
        buffer = scale.buffer.get()
    assert out["prod"][0].tolist() == [0, 0, 5000, 0]  # (a1*a2) >> 1 where |.| > 10, same step
    assert out["graded"][0].tolist() == [0, 0, 200, 0]  # a1 + a2 where |.| > 10, same step
    assert out["scale"].tolist() == [[0, 0, 0, 0], [4, -5, 150, 10], [4, -5, 150, 10]]
    assert buffer.tolist() == [4, -5, 150, 10]
