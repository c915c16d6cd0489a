"""The memory fixes of issue 25, each held by a check that would fail if it came back (fast: digits-tiny and
small matrices; the figures at size come from benchmarks/bench_scale.py)."""

import tracemalloc

import numpy as np
import pytest

from conftest import quantized_graph, random_images, spiky_model
from spikeport.runtime.executor import GraphExecutor, memory_batch, to_channels_last


@pytest.fixture(scope="module")
def graph():
    return quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))


def test_a_step_drops_each_output_after_its_last_reader(graph):
    import weakref

    done = graph.last_readers()
    assert sorted(n for names in done.values() for n in names) == sorted(graph.order)  # each dropped once
    for reader, names in done.items():
        later = graph.order[graph.order.index(reader) + 1 :]
        assert not any(name in graph.nodes[n].inputs for name in names for n in later)
    refs, alive_at_end = {}, []

    def observe(t, name, out, extra):  # holds no output itself
        if t == 0 and isinstance(out, np.ndarray):
            refs[name] = weakref.ref(out)
            if name == graph.order[-1]:
                alive_at_end.append([n for n, r in refs.items() if r() is not None])

    GraphExecutor(graph).run(to_channels_last(random_images(2, seed=3).numpy()), observe)
    # at the step's last node only what it reads (and its own output) is still held, not all the step's outputs
    assert len(alive_at_end[0]) <= len(graph.nodes[graph.order[-1]].inputs) + 1 < len(refs) // 4


def test_reference_batches_are_bounded_by_memory(graph):
    from spikeport.runtime.sim.reference import ReferenceSimulator

    assert memory_batch(graph) >= 64  # digits-tiny: the requested batch stands
    assert memory_batch(graph, budget=1) == 1
    x = to_channels_last(random_images(10, seed=4).numpy())
    small = ReferenceSimulator(graph).run(x, batch_size=3).to_dict()
    large = ReferenceSimulator(graph).run(x, batch_size=64).to_dict()
    for report in (small, large):
        report.pop("wall_time_s")
    assert small == large


def test_fake_quant_parameter_cache_does_not_grow_per_run(graph):
    from spikeport.convert.fakequant import FakeQuantExecutor

    fq = FakeQuantExecutor(graph)
    x = to_channels_last(random_images(2, seed=5).numpy())
    fq.run(x)
    held = len(fq.executor.ops._constants)
    fq.run(x)
    fq.run(x)
    assert len(fq.executor.ops._constants) == held  # w.T of a dense layer is the same constant every step


def test_conversion_batches_follow_the_graph_size(graph):
    from spikeport.convert.api import calibration_batch, comparison_batch

    assert comparison_batch(graph) == 128 and calibration_batch(graph) == 64  # digits-tiny: the caps
    assert comparison_batch(graph, budget=1) == calibration_batch(graph, budget=1) == 1


def test_conv_matrix_is_the_convolution():
    from spikeport import fixedpoint as fx
    from spikeport.runtime.lava.lowerings.builder import conv_matrix

    rng = np.random.default_rng(0)
    for stride, padding, dilation, groups in [(1, 1, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (2, 0, 1, 4)]:
        w = rng.integers(-5, 6, (8, 3, 3, 8 // groups))
        w[0, 1] = 0  # zero weights leave no synapse
        x = rng.integers(0, 2, (1, 9, 7, 8))
        out = fx.conv2d_sum(x, w, (stride,) * 2, (padding,) * 2, (dilation,) * 2, groups, np.float64)[0]
        attrs = {"stride": (stride,) * 2, "padding": (padding,) * 2, "dilation": (dilation,) * 2, "groups": groups}
        m = conv_matrix(x.shape[1:], out.shape, w, attrs)
        assert m.indices.dtype == np.int32 and m.nnz == np.count_nonzero(m.data)
        assert np.array_equal(m @ x[0].ravel(), out.ravel())


def test_block_search_rejects_a_window_matrix_without_copying_it():
    """A max-pool window over a 64 x 64 x 16 map (stride 2, overlapping windows): not block-diagonal, found so from
    a few rows, with no copy of its synapses (the old search densified a candidate block per divisor)."""
    from spikeport.runtime.lava.compat import import_lava
    from spikeport.runtime.lava.lowerings.builder import conv_matrix

    import_lava()
    from spikeport.runtime.lava.procs.fast_models import BlockDiagonal, sparse_product

    ones = np.ones((16, 3, 3, 1), np.int64)
    attrs = {"stride": (2, 2), "padding": (1, 1), "dilation": (1, 1), "groups": 16}
    w = conv_matrix((64, 64, 16), (32, 32, 16), 2 * ones, attrs)
    tracemalloc.start()
    assert BlockDiagonal.find(w) is None
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < w.data.nbytes  # not one copy of the weights
    s = np.random.default_rng(1).integers(0, 2, w.shape[1])
    assert np.array_equal(sparse_product(w)(s), w.astype(np.int64) @ s)
    big = np.full(w.shape[1], 2**28)  # past int32: the int64 path
    assert np.array_equal(sparse_product(w)(big), w.astype(np.int64) @ big)
