"""Golden tests of the Loihi fixed-point formulas (spikeport.fixedpoint) and the torch twin's exactness."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from spikeport import fixedpoint as fx
from spikeport.convert.fakequant import TORCH

INT = fx.INT


def lif(du=4095, dv=2048, vth=10, bias=0, bias_exp=0, channels=1):
    return fx.LifParams(du, dv, vth, np.full(channels, bias), bias_exp)


def test_lif_integrates_decays_and_fires_on_strictly_greater():
    p = lif(vth=10)  # effective threshold 10 << 6 = 640
    u, v = np.zeros(1, np.int64), np.zeros(1, np.int64)
    u, v, s = fx.lif_step(INT, u, v, np.array([5]), p)  # u = 5 << 6 = 320, v = 320
    assert (u[0], v[0], s[0]) == (320, 320, 0)
    u, v, s = fx.lif_step(INT, u, v, np.array([5]), p)  # v = 160 + 320 = 480
    assert (v[0], s[0]) == (480, 0)
    u, v, s = fx.lif_step(INT, u, v, np.array([10]), p)  # v = 240 + 640 = 880 > 640: spike, reset
    assert (v[0], s[0]) == (0, 1)


def test_lif_equal_to_threshold_does_not_spike():
    # SpikingJelly fires on v >= v_th, Loihi on v > vth << 6: the boundary goes the Loihi way.
    u, v, s = fx.lif_step(INT, np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([10]), lif(vth=10))
    assert v[0] == 640 and s[0] == 0
    u, v, s = fx.lif_step(INT, np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([11]), lif(vth=10))
    assert s[0] == 1


def test_decay_rounds_toward_zero_for_negative_potentials():
    v = np.array([-3, 3, -1])
    _, v2, _ = fx.lif_step(INT, np.zeros(3, np.int64), v, np.zeros(3, np.int64), lif(vth=100, channels=3))
    assert list(v2) == [-1, 1, 0]  # trunc(-1.5) = -1, trunc(1.5) = 1, trunc(-0.5) = 0


def test_current_wraps_at_24_bits_like_lava():
    zero = np.zeros(3, np.int64)
    a = np.array([2**17 - 1, 2**17 + 1, -(2**17)])  # << 6: 2**23 - 64, 2**23 + 64, -2**23
    u, _, _ = fx.lif_step(INT, zero, zero, a, lif(du=4095, vth=fx.VTH_MAX, channels=3))
    assert list(u) == [2**23 - 64, 64 - 2**23, 2**23]  # > 2**23 wraps down; <= -2**23 wraps up


def test_voltage_clips_at_24_bits():
    p = lif(du=4095, dv=0, vth=fx.VTH_MAX, channels=2)
    v = np.array([2**23 - 10, -(2**23) + 10])
    _, v2, s = fx.lif_step(INT, np.zeros(2, np.int64), v, np.array([1000, -1000]), p)
    # the clipped 2**23 - 1 still exceeds the largest threshold (2**17 - 1) << 6 = 2**23 - 64: it spikes
    assert list(s) == [1, 0] and list(v2) == [0, -(2**23 - 1)]


def test_bias_mantissa_and_exponent():
    p = lif(du=4095, dv=4095, vth=fx.VTH_MAX, bias=-3, bias_exp=4)
    _, v, _ = fx.lif_step(INT, np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), p)
    assert v[0] == -48


def test_weight_exponent_shift_floors_negative_sums():
    x = np.array([[1, 1, 0]])
    w = np.array([[-3, 0, 5]])
    assert fx.dense(INT, x, w, -1)[0, 0] == -2  # floor(-3 / 2)
    assert fx.dense(INT, x, w, 2)[0, 0] == -12


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [
        ((1, 1), (1, 1), (1, 1), 1),
        ((2, 2), (1, 1), (1, 1), 2),
        ((1, 1), (3, 3), (3, 3), 4),
        ((1, 1), (0, 0), (1, 1), 1),
    ],
)
def test_conv2d_nhwc_matches_torch(stride, padding, dilation, groups):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, (2, 9, 9, 4))
    w = rng.integers(-128, 128, (8, 3, 3, 4 // groups))
    ours = fx.conv2d_nhwc(x, w, stride, padding, dilation, groups)
    ref = F.conv2d(
        torch.tensor(x).permute(0, 3, 1, 2).double(),
        torch.tensor(w).permute(0, 3, 1, 2).double(),
        None,
        stride,
        padding,
        dilation,
        groups,
    ).permute(0, 2, 3, 1)
    assert np.array_equal(ours, ref.numpy().astype(np.int64))


@pytest.mark.parametrize("dilation, kernel", [((3, 2), (7, 9)), ((1, 1), (7, 1)), ((2, 1), (7, 9))])
def test_token_mixing_conv_is_one_matrix_per_kernel_and_exact(dilation, kernel):
    """The 2-D token mixing's Conv (depthwise, a (2 rows - 1) x (2 cols - 1) kernel dilated over a 4 x 5 token grid
    whose pair slots interleave): ConvPlan's token-matrix path (one matrix per distinct kernel, channels 0 and 2
    share one) equals torch's convolution, and takes that path."""
    rng = np.random.default_rng(3)
    (dh, dw), (kh, kw) = dilation, kernel
    rows, cols = (kh + 1) // 2, (kw + 1) // 2
    x = (rng.random((2, rows * dh, cols * dw, 4)) > 0.6).astype(np.int64)
    w = rng.integers(-128, 128, (4, kh, kw, 1))
    w[2] = w[0]
    padding = ((kh - 1) // 2 * dh, (kw - 1) // 2 * dw)
    plan = fx.ConvPlan(w, (1, 1), padding, dilation, 4, np.float64)
    ours = plan(x).astype(np.int64)
    assert plan._mix is not None and len(plan._mix.mats) == 3
    ref = F.conv2d(
        torch.tensor(x).permute(0, 3, 1, 2).double(),
        torch.tensor(w).permute(0, 3, 1, 2).double(),
        None,
        1,
        padding,
        dilation,
        4,
    ).permute(0, 2, 3, 1)
    assert np.array_equal(ours, ref.numpy().astype(np.int64))


def test_maxpool_on_spikes_is_or():
    x = np.zeros((1, 4, 4, 1), np.int64)
    x[0, 0, 0, 0] = 1
    y = fx.maxpool(INT, x, 3, 2, 1)
    assert y.shape == (1, 2, 2, 1) and y[0, 0, 0, 0] == 1 and y.sum() == 1


def test_ssa_core_equals_q_kt_v():
    rng = np.random.default_rng(1)
    q, k, v = (rng.integers(0, 2, (2, 6, 8)) for _ in range(3))
    out = fx.ssa_core(INT, q, k, v, heads=2)
    qh, kh, vh = (a.reshape(2, 6, 2, 4).transpose(0, 2, 1, 3) for a in (q, k, v))
    ref = (qh @ kh.transpose(0, 1, 3, 2) @ vh).transpose(0, 2, 1, 3).reshape(2, 6, 8)
    assert np.array_equal(out, ref)


def test_causal_core_only_sees_past_tokens():
    rng = np.random.default_rng(2)
    q, k, v = (rng.integers(0, 2, (1, 5, 4)) for _ in range(3))
    out = fx.causal_core(INT, q, k, v, heads=1)
    k2, v2 = k.copy(), v.copy()
    k2[:, 3:], v2[:, 3:] = 1 - k2[:, 3:], 1 - v2[:, 3:]  # change the future of token 2
    out2 = fx.causal_core(INT, q, k2, v2, heads=1)
    assert np.array_equal(out[:, :3], out2[:, :3])
    mask = np.tril(np.ones((5, 5), np.int64))
    assert np.array_equal(out[0], ((q[0] @ k[0].T) * mask) @ v[0])


def test_causal_core_is_the_running_sum_of_seed_004():
    """Eq. 11 written as the loop it is (S_n = S_{n-1} + k_n^T v_n, read by q_n) on every backend the
    reference uses; the held state is S after the last token."""
    from spikeport.runtime.sim.fast_ops import FAST

    rng = np.random.default_rng(3)
    q, k, v = (rng.integers(0, 2, (3, 70, 12)) for _ in range(3))
    qh, kh, vh = (a.reshape(3, 70, 3, 4).transpose(0, 2, 1, 3) for a in (q, k, v))
    state, rows = np.zeros((3, 3, 4, 4), np.int64), []
    for n in range(70):
        state = state + kh[:, :, n, :, None] * vh[:, :, n, None, :]
        rows.append(qh[:, :, n : n + 1] @ state)
    expected = np.concatenate(rows, axis=2).transpose(0, 2, 1, 3).reshape(3, 70, 12)
    for ops in (INT, FAST):
        held = []
        out = fx.causal_core(ops, q, k, v, heads=3, on_state=held.append)
        assert np.array_equal(out, expected)
        assert np.array_equal(held[0], state)


def test_token_mix_core_by_hand():
    # one head, d_h = 1, kernel [4, 2, 1] (3 taps), rescale 3 * 2**-1; q k v all spike except q at token 1
    p = fx.TokenMixParams(np.array([[4, 2, 1]]), (3,), (-1,))
    ones = np.ones((1, 5, 1), np.int64)
    q = ones.copy()
    q[0, 1, 0] = 0
    out, gated = fx.token_mix_core(INT, q, ones, ones, 1, p, fx.token_mix_matrix(p.kernel_mant, 5))
    # g = [4, 6, 7, 7, 7] (the kernel has 3 taps); gated by q; then floor(3 g / 2)
    assert list(gated[0, 0, :, 0]) == [4, 0, 7, 7, 7]
    assert list(out[0, :, 0]) == [6, 0, 10, 10, 10]


@pytest.mark.parametrize("fn", ["trunc_shift", "floor_shift_neg", "floor_shift_pos", "wrap", "round", "conv"])
def test_torch_ops_are_exact_twins_of_int_ops(fn):
    rng = np.random.default_rng(3)
    x = rng.integers(-(2**30), 2**30, 1000)
    t = torch.tensor(x, dtype=torch.float64)
    if fn == "trunc_shift":
        a, b = INT.trunc_shift(x, 12), TORCH.trunc_shift(t, 12)
    elif fn == "floor_shift_neg":
        a, b = INT.floor_shift(x, -5), TORCH.floor_shift(t, -5)
    elif fn == "floor_shift_pos":
        a, b = INT.floor_shift(x, 3), TORCH.floor_shift(t, 3)
    elif fn == "wrap":
        a, b = INT.wrap_lava_u(x >> 6), TORCH.wrap_lava_u(torch.tensor(x >> 6, dtype=torch.float64))
    elif fn == "round":
        y = rng.normal(0, 100, 1000)
        y[:4] = [0.5, 1.5, -0.5, -2.5]  # half to even in both
        a, b = INT.round(y), TORCH.round(torch.tensor(y))
    else:
        xi, w = rng.integers(-3, 4, (2, 7, 7, 4)), rng.integers(-128, 128, (4, 3, 3, 1))
        a = INT.conv2d(xi, w, (1, 1), (3, 3), (3, 3), 4)
        b = TORCH.conv2d(torch.tensor(xi, dtype=torch.float64), torch.tensor(w), (1, 1), (3, 3), (3, 3), 4)
    assert np.array_equal(np.asarray(a), b.numpy().astype(np.int64))


@pytest.mark.parametrize("stride,padding,dilation", [(1, 63, 1), (2, 5, 1), (1, 4, 3), (3, 0, 2)])
def test_single_channel_tall_kernel_conv_matches_torch(stride, padding, dilation):
    """The token-mixing synapse's shape (one channel, a [kH, 1] kernel, computed as a banded GEMM)."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, (2, 64, 40, 1))
    w = rng.integers(-128, 128, (1, 127 if padding == 63 else 5, 1, 1))
    args = ((stride, 1), (padding, 0), (dilation, 1), 1)
    ours = fx.conv2d_nhwc(x, w, *args)
    ref = F.conv2d(
        torch.tensor(x).permute(0, 3, 1, 2).double(), torch.tensor(w).permute(0, 3, 1, 2).double(), None, *args
    )
    assert ours.shape[1] > 0 and np.array_equal(ours, ref.permute(0, 2, 3, 1).numpy().astype(np.int64))


def test_depthwise_tall_kernel_conv_matches_torch():
    """The dendritic token-mixing synapse's shape: one [kH, 1] kernel per channel (groups = channels)."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 2, (3, 64, 16, 4))
    w = rng.integers(-128, 128, (4, 127, 1, 1))
    args = ((1, 1), (63, 0), (1, 1), 4)
    ours = fx.conv2d_nhwc(x, w, *args)
    ref = F.conv2d(
        torch.tensor(x).permute(0, 3, 1, 2).double(), torch.tensor(w).permute(0, 3, 1, 2).double(), None, *args
    )
    assert np.array_equal(ours, ref.permute(0, 2, 3, 1).numpy().astype(np.int64))


@pytest.mark.parametrize("size", [(8, 8), (9, 7), (3, 7)])
@pytest.mark.parametrize(
    "kernel,stride,padding,dilation",
    [
        ((3, 3), (1, 1), (3, 3), (3, 3)),  # the LRF term's kernels on the token grid
        ((3, 3), (1, 1), (5, 5), (5, 5)),
        ((3, 3), (2, 2), (1, 1), (1, 1)),
        ((5, 2), (1, 3), (5, 2), (2, 1)),
        ((1, 3), (2, 1), (0, 0), (1, 3)),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_depthwise_conv_without_padding_matches_torch(size, kernel, stride, padding, dilation, dtype):
    """Depthwise taps over the outputs they reach (no padded copy, laid out [H, W, B C]): torch's convolution for
    spikes (uint8, as the reference's LIFs send them) and for integers, in every dtype the bound may pick, where
    some taps reach no output at all."""
    rng = np.random.default_rng(4)
    w = rng.integers(-128, 128, (6, *kernel, 1))
    for x in ((rng.random((3, *size, 6)) > 0.6).astype(np.uint8), rng.integers(-5, 6, (3, *size, 6)).astype(dtype)):
        ours = fx.ConvPlan(w, stride, padding, dilation, 6, dtype)(x)
        ref = F.conv2d(
            torch.tensor(x.astype(np.float64)).permute(0, 3, 1, 2),
            torch.tensor(w).permute(0, 3, 1, 2).double(),
            None,
            stride,
            padding,
            dilation,
            6,
        ).permute(0, 2, 3, 1)
        assert ours.dtype == dtype and np.array_equal(ours, ref.numpy())


@pytest.mark.parametrize(
    "kernel,stride,padding,dilation",
    [
        ((3, 3), (1, 1), (1, 1), (1, 1)),  # the stem's convs: a row's 3 taps gathered in one copy
        ((3, 3), (2, 3), (1, 2), (1, 1)),  # strided along W: the row's windows step by 3 pixels
        ((5, 2), (1, 1), (2, 0), (2, 1)),
        ((3, 3), (1, 1), (2, 2), (1, 2)),  # dilated along W: the taps one by one
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_gathered_taps_conv_matches_torch(kernel, stride, padding, dilation, dtype):
    rng = np.random.default_rng(5)
    x, w = rng.integers(-3, 4, (2, 9, 11, 5)), rng.integers(-128, 128, (4, *kernel, 5))
    ours = fx.ConvPlan(w, stride, padding, dilation, 1, dtype)(x)
    ref = F.conv2d(
        torch.tensor(x).permute(0, 3, 1, 2).double(),
        torch.tensor(w).permute(0, 3, 1, 2).double(),
        None,
        stride,
        padding,
        dilation,
    ).permute(0, 2, 3, 1)
    assert ours.dtype == dtype and np.array_equal(ours, ref.numpy())


@pytest.mark.parametrize("stride,padding,dilation", [(1, 3, 3), (1, 5, 5), (2, 1, 1), (1, 0, 2)])
def test_fake_quant_depthwise_conv_equals_torch_conv_with_its_gradients(stride, padding, dilation):
    """TorchOps sums a depthwise kernel tap by tap; F.conv2d's values and gradients are the contract."""
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.integers(-3, 4, (2, 8, 7, 5)), dtype=torch.float64, requires_grad=True)
    w = torch.tensor(rng.integers(-128, 128, (5, 3, 3, 1)), dtype=torch.float64, requires_grad=True)
    args = ((stride, stride), (padding, padding), (dilation, dilation), 5)
    ours = TORCH.conv2d(x, w, *args)
    torchs = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), None, *args).permute(0, 2, 3, 1)
    assert torch.equal(ours, torchs)
    upstream = torch.tensor(rng.integers(-5, 6, ours.shape), dtype=torch.float64)
    grads = [torch.autograd.grad(out, (x, w), upstream) for out in (ours, torchs)]
    for a, b in zip(*grads, strict=True):
        assert torch.equal(a, b)
