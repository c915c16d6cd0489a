"""Pieces of the Lava lowering that need no Lava run."""

import numpy as np
import pytest

from spikeport import fixedpoint as fx
from spikeport.runtime.lava.lowerings.builder import conv_matrix


@pytest.mark.parametrize(
    "in_shape, c_out, kernel, stride, padding, dilation, groups",
    [
        ((8, 8, 1), 8, (3, 3), (1, 1), (1, 1), (1, 1), 1),  # digits-tiny's stem
        ((9, 7, 4), 6, (3, 2), (2, 1), (1, 0), (1, 2), 2),  # odd sizes, strides, dilation, groups
        ((6, 6, 3), 3, (5, 5), (1, 1), (4, 4), (2, 2), 3),
    ],  # depthwise, padding wider than the map
)
def test_conv_matrix_is_the_convolution(in_shape, c_out, kernel, stride, padding, dilation, groups):
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, (c_out, *kernel, in_shape[-1] // groups))
    w[w % 5 == 0] = 0  # zero weights leave no synapse
    x = rng.integers(-(2**15), 2**15, (2, *in_shape))
    want = fx.conv2d_nhwc(x, w, stride, padding, dilation, groups)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    m = conv_matrix(in_shape, want.shape[1:], w, attrs)
    got = (m @ x.reshape(2, -1).T).T.reshape(want.shape)
    assert np.array_equal(got, want)
    assert m.nnz == np.count_nonzero(m.toarray())


def test_each_op_is_lowered_by_its_own_module():
    """runtime/lava/lowerings mirrors ir/kernels: op X's lowering is built in lowerings/X.py, and the package holds
    one such module per kernel record besides the shared builder and token mixing."""
    import pkgutil

    from spikeport.ir.kernels import KERNELS
    from spikeport.runtime.lava import lowerings

    refused = set(lowerings.LOWERINGS.refused)  # declared with why: an op no Lava process computes
    assert set(lowerings.LOWERINGS) | refused == set(KERNELS) and not set(lowerings.LOWERINGS) & refused
    for op in set(KERNELS) - refused:
        assert lowerings.LOWERINGS.get(op).build.__module__ == f"{lowerings.__name__}.{op}"
    modules = {m.name for m in pkgutil.iter_modules(lowerings.__path__)}
    assert modules - {"builder", "token_mixing"} == set(KERNELS) - refused
