"""The reference's fast backend (runtime/sim/fast_ops.py) against the int64 walk (fixedpoint.IntOps): the same
value in every layer at every step, the same counters, and each exactness bound hit on both sides."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import random_images
from spikeport import fixedpoint as fx
from spikeport.counting import NUMPY
from spikeport.runtime.executor import GraphExecutor, to_channels_last
from spikeport.runtime.sim.fast_ops import F32_EXACT, FAST, gemm_dtype
from spikeport.runtime.sim.reference import ReferenceSimulator


def walk(graph, images, ops) -> tuple[dict, np.ndarray]:
    """Every node's output (and a LIF's v) at every step, pipeline fill included, and the logits."""
    seen: dict = {}

    def observe(t, name, value, extra) -> None:
        seen[t, name] = np.array(value, copy=True)
        if "v" in extra:
            seen[t, name, "v"] = np.array(extra["v"], copy=True)

    logits = GraphExecutor(graph, ops).run(images, observe, fill_observer=observe)
    return seen, logits


def assert_same_walk(graph, images) -> None:
    fast, fast_logits = walk(graph, images, FAST)
    exact, exact_logits = walk(graph, images, fx.INT)
    assert fast.keys() == exact.keys()
    for key, want in exact.items():
        got = fast[key]
        assert got.shape == want.shape and np.array_equal(got, want), f"{key}: {np.count_nonzero(got != want)} differ"
    assert (fast_logits is None and exact_logits is None) or np.array_equal(fast_logits, exact_logits)


def test_every_attention_variant_walks_identically_and_counts_the_same(variant_graph):
    _, _, graph = variant_graph
    images = to_channels_last(random_images(24, seed=5).numpy())
    assert_same_walk(graph, images)
    fast = ReferenceSimulator(graph).run(images, batch_size=16, workers=3).to_dict()  # batches split over 3 threads
    exact = ReferenceSimulator(graph, fx.INT).run(images, batch_size=16, workers=1).to_dict()
    for report in (fast, exact):
        report.pop("wall_time_s")
    assert fast == exact and fast["totals"]["spikes"] > 0


def test_netx_networks_walk_identically():
    """lava-dl's PilotNet SDNN (delta, sigma-delta, sigma), ntidigits (axonal delays) and mnist (integrator)."""
    from spikeport.netx.read import graph_from_netx
    from test_netx_delays import ntidigits
    from test_netx_sdnn import SDNN, frame

    if not (SDNN / "network.net").is_file():
        pytest.skip("lava-dl's netx test data not installed")
    x = frame()
    assert_same_walk(graph_from_netx(SDNN / "network.net", x.shape[2:], T=3, input_drive="graded"), np.repeat(x, 3, 1))
    path, spikes, _ = ntidigits()
    assert_same_walk(graph_from_netx(path, T=120, num_layers=5), spikes[:, :120])


@pytest.mark.parametrize("k", [1024, 1025])
def test_gemm_bound_picks_float32_only_where_every_sum_is_exact(k):
    """K * 127 * 129 is 16,776,192 < 2**24 at K = 1024 (float32) and 16,792,575 > 2**24 at K = 1025 (float64):
    there float32 BLAS would round the odd sum, and the backend must not."""
    a, b = np.full((2, k), 127, np.int64), np.full((k, 3), 129, np.int64)
    want = a @ b
    assert gemm_dtype(a, b, k) == (np.float32 if want.max() < F32_EXACT else np.float64)
    assert np.array_equal(FAST.matmul(a, b), want)
    if want.max() >= F32_EXACT:
        assert not np.array_equal((a.astype(np.float32) @ b.astype(np.float32)).astype(np.int64), want)


def test_conv_bound_is_checked_per_call():
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (4, 3, 3, 8))
    for top in (1, 2**15):  # spikes: float32; 16-bit pixels: float64 (2**15 * 128 * 72 > 2**24)
        x = rng.integers(0, top + 1, (2, 6, 6, 8))
        got = FAST.conv2d(x, w, (1, 1), (1, 1), (1, 1), 1)
        assert np.array_equal(got, fx.conv2d_nhwc(x, w, (1, 1), (1, 1), (1, 1), 1))


@pytest.mark.parametrize(
    "du,dv,bias_exp",
    [
        (4095, 2048, 0),  # tau = 2: the float32 path
        (4095, 0, 7),  # no leak, the largest bias: sums past 2**24 before the clip
        (4095, 1024, 3),  # a decay that is no power of two: the float64 formula
        (1024, 2048, 0),  # a current that decays: the float64 formula
        (-1, 4096, 0),  # netx's integrator
    ],
)
def test_fused_lif_equals_the_formula_at_the_clip_and_the_wrap(du, dv, bias_exp):
    rng = np.random.default_rng(du + dv)
    shape = (4, 5, 64)
    p = fx.LifParams(du, dv, 2000, rng.integers(fx.BIAS_MANT_MIN, fx.BIAS_MANT_MAX + 1, 64), bias_exp)
    u_f = v_f = FAST.zeros(shape)
    u_i = v_i = fx.INT.zeros(shape)
    peak = 0
    for t in range(12):
        # inputs that drive v to the clip (|a_in| up to 2**17 - 1) and, at t = 9, past the wrap of u
        a_in = rng.integers(-(2**17) + 1, 2**17, shape) if t != 9 else np.full(shape, 2**17 + 5)
        u_f, v_f, s_f = FAST.lif_step(u_f, v_f, a_in, p)
        u_i, v_i, s_i = fx.lif_step(fx.INT, u_i, v_i, a_in, p)
        assert np.array_equal(v_f, v_i) and np.array_equal(s_f, s_i), f"step {t}"
        if du + 1 == fx.DECAY_UNITY:
            assert np.array_equal(u_f, u_i)
        peak = max(peak, np.abs(v_i).max())
    assert peak == fx.STATE_MAX - 1  # the clip was reached


@pytest.mark.parametrize("top", [1, 2**15, 2**40])  # the sums in float32, float64 and int64
@pytest.mark.parametrize("e", [-3, 0, 2])
def test_shifted_gemms_equal_the_shift_of_the_gemm(top, e):
    """``matmul_shift`` and ``conv2d_shift`` (the GEMM's sums shifted as they are read) give ``floor_shift`` of
    ``matmul`` and ``conv2d``, value for value and as float64, whichever dtype the bound picked for the sums."""
    rng = np.random.default_rng(top + e + 3)
    x, w = rng.integers(-top, top + 1, (3, 5, 5, 8)), rng.integers(-128, 128, (6, 3, 3, 8))
    got = FAST.matmul_shift(x, w[:, 0, 0, :].T, e)
    assert got.dtype == np.float64 and np.array_equal(got, FAST.floor_shift(FAST.matmul(x, w[:, 0, 0, :].T), e))
    assert np.array_equal(got, fx.dense(fx.INT, x, w[:, 0, 0, :], e))
    conv = fx.conv(FAST, x, w, e, (1, 1), (1, 1), (1, 1), 1)
    assert conv.dtype == np.float64 and np.array_equal(conv, fx.conv(fx.INT, x, w, e, (1, 1), (1, 1), (1, 1), 1))


@pytest.mark.parametrize("top", [1, 2**14])  # spikes: float32 scores; 4 * 16 * 2**14 * 2**14 > 2**24: float64
def test_causal_blocks_keep_float32_scores_only_within_the_bound(top):
    rng = np.random.default_rng(top)
    q, k, v = (rng.integers(0, top + 1, (2, 4, 32)) for _ in range(3))
    assert np.array_equal(fx.causal_core(FAST, q, k, v, 2), fx.causal_core(fx.INT, q, k, v, 2))
    mask = fx.causal_mask(4)
    qh, kh, vh = (fx.split_heads(x, 2) for x in (q, k, v))
    assert np.array_equal(FAST.masked_mix(qh, kh, vh, mask), fx.masked_mix(fx.INT, qh, kh, vh, mask))


def test_the_fused_lif_hands_its_bound_to_the_overflow_count():
    """Where the float32 LIF checked |a_in| < 2**17 it notes the largest |a_in|, and the LIF's count of overflows
    reads that instead of a_in; where a_in passes the bound nothing is noted and the count looks at a_in itself."""
    from spikeport.ir.kernels.lif import count

    p = fx.LifParams(4095, 2048, 2000, np.zeros(8, np.int64), 0)
    for a_in, noted, overflows in (
        (np.full((2, 8), -(2**17) + 1.0), 2**17 - 1, 0),
        (np.full((2, 8), 2.0**17), None, 16),
    ):
        extra: dict = {"a_in": a_in}
        _, _, s = FAST.lif_step(FAST.zeros(a_in.shape), FAST.zeros(a_in.shape), a_in, p, extra)
        assert extra.get("a_in_absmax") == noted
        assert count(NUMPY, None, [a_in], s, extra)["act_overflows"] == overflows
