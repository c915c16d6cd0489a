"""The Lava backend: bit-exact with the reference simulator, no state leaks, fast models == Lava's models."""

import numpy as np
import pytest

from conftest import ATTENTIONS, quantized_graph, random_images, spiky_model
from procs import process_group, with_ctrl_c
from spikeport.runtime.executor import to_channels_last

lava_run = pytest.importorskip("spikeport.runtime.lava.run")
from runs import lava_spikes, reference_spikes  # noqa: E402
from spikeport.runtime.compare import first_divergence  # noqa: E402

pytestmark = pytest.mark.lava


@pytest.fixture(scope="module", params=ATTENTIONS)
def graph(request):
    return quantized_graph(spiky_model(request.param), random_images(16, seed=1))


def images(n, seed=3):
    return to_channels_last(random_images(n, seed=seed).numpy())


def test_lava_equals_reference_every_layer_every_step(graph):
    x = images(8)
    rep, spikes = lava_spikes(graph, x, np.zeros(8, np.int64), chunk_samples=4)
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]
    assert rep["executor"] == "lava-fixed_pt"
    assert "parts" not in rep["lava"]  # a whole run streams as one part, but its report lists none
    assert sum(int(s.sum()) for s in spikes.values()) > 0
    for a, b in zip(rep["layers"], ref_rep["layers"], strict=True):  # same counts from the same spikes
        assert a["spikes"] == b["spikes"] and a["synops"] == b["synops"]
    # the run report lists the state each process held (issue 12 req. 3): every LIF layer's u and v
    held = {row["process"]: row for row in rep["lava"]["state"]}
    for node in graph.by_op("lif"):
        n = int(np.prod(node.shape))
        assert [(v["var"], v["shape"], v["bits"]) for v in held[node.name]["vars"]] == [("u", [n], 24), ("v", [n], 24)]


def test_no_state_leaks_between_streamed_samples():
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    a, b = images(3, seed=5), images(2, seed=6)
    _, alone = lava_spikes(graph, b)
    _, after = lava_spikes(graph, np.concatenate([a, b]))
    for name in alone:
        assert np.array_equal(alone[name], after[name][3:]), name


def test_stalled_run_restarts_and_stays_bit_exact(tmp_path, monkeypatch):
    """A Lava network that stops making progress (every child idle: a deadlock) is torn down and
    restarted from an earlier sample; the spikes are still those of the reference, in every layer."""
    import time

    from spikeport.runtime.lava.compat import import_lava
    from spikeport.runtime.lava.session import child_pids, is_resource_tracker

    import_lava()
    from lava.proc.lif.models import PyLifResetModelBitAcc

    flag = tmp_path / "stalled-once"
    run_spk = PyLifResetModelBitAcc.run_spk

    def stall_once(self):  # the forked children inherit this: one LIF hangs at step 37
        if self.time_step == 37 and not flag.exists():
            flag.touch()
            time.sleep(3600)
        run_spk(self)

    monkeypatch.setattr(PyLifResetModelBitAcc, "run_spk", stall_once)
    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    x = images(12, seed=5)
    with pytest.warns(RuntimeWarning, match=r"restarting the Lava network at sample \d+ \(restart 1 of"):
        rep, spikes = lava_spikes(graph, x, chunk_samples=2, stall_s=2.0)
    assert flag.exists() and rep["lava"]["restarts"] == 1
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]
    assert [p for p in child_pids() if not is_resource_tracker(p)] == []  # the hung network is gone too


def test_first_divergence_names_layer_step_and_neuron():
    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    _, ref = reference_spikes(graph, images(2))
    broken = {k: v.copy() for k, v in ref.items()}
    broken["block.0.mlp.fc1_lif"][1, 2, 3, 4, 5] ^= 1
    div = first_divergence(graph, ref, broken)
    assert div["layer"] == "block.0.mlp.fc1_lif" and div["time_step"] == 2 and div["sample"] == 1
    assert div["neuron"] == [3, 4, 5] and div["mismatches"] == 1


def test_fast_models_match_lavas_own_models():
    """Conv (stride, dilation, groups), Sparse and DelaySparse (random and block-diagonal weights, uniform
    and mixed delays) with spikeport's CPU models vs Lava's."""
    from scipy import sparse

    from spikeport.runtime.lava.compat import import_lava

    import_lava()
    from lava.magma.core.run_conditions import RunSteps
    from lava.proc.conv.process import Conv
    from lava.proc.io.sink import RingBuffer as Sink
    from lava.proc.io.source import RingBuffer
    from lava.proc.sparse.process import DelaySparse, Sparse

    rng = np.random.default_rng(0)
    data = (rng.random((6, 6, 4, 9)) > 0.6).astype(np.int32)
    w = rng.integers(-128, 128, (8, 3, 3, 2)).astype(np.int32)
    wsp = sparse.csr_matrix(rng.integers(-128, 128, (10, 144)) * (rng.random((10, 144)) > 0.7))
    block = sparse.csr_matrix(rng.integers(-128, 128, (5, 36)) * (rng.random((5, 36)) > 0.3))
    tokenwise = sparse.kron(sparse.identity(4, dtype=np.int64), block, format="csr")
    mixed = tokenwise.copy()
    mixed.data[:] = rng.integers(1, 4, mixed.nnz)

    def synapses():
        uniform = tokenwise.copy()
        uniform.data[:] = 3
        delays = wsp.copy()
        delays.data[:] = 2
        return [
            Sparse(weights=2 * wsp, weight_exp=-1),
            DelaySparse(weights=2 * wsp, delays=delays, max_delay=2, weight_exp=1),
            Sparse(weights=2 * tokenwise, weight_exp=-2),
            DelaySparse(weights=2 * tokenwise, delays=uniform, max_delay=3, weight_exp=-1),
            DelaySparse(weights=2 * tokenwise, delays=uniform, max_delay=5, weight_exp=1),
            DelaySparse(weights=2 * tokenwise, delays=mixed, max_delay=3, weight_exp=0),
        ]

    def run(fast):
        src = RingBuffer(data=data)
        conv = Conv(weight=w, input_shape=(6, 6, 4), padding=(2, 1), stride=(2, 1), dilation=(2, 1), groups=2)
        src.s_out.connect(conv.s_in)
        sinks = [Sink(shape=conv.a_out.shape, buffer=9)]
        conv.a_out.connect(sinks[0].a_in)
        for syn in synapses():
            src.s_out.reshape((144,)).connect(syn.s_in)
            sinks.append(Sink(shape=syn.a_out.shape, buffer=9))
            syn.a_out.connect(sinks[-1].a_in)
        try:
            src.run(condition=RunSteps(num_steps=9), run_cfg=lava_run.sim_config(fast=fast))
            return [s.data.get() for s in sinks]
        finally:
            src.stop()

    fast, slow = run(True), run(False)
    for a, b in zip(fast, slow, strict=True):
        assert np.array_equal(a, b)
    assert all(np.abs(a).sum() > 0 for a in fast)


def test_block_diagonal_weights_are_found_and_multiplied_exactly():
    from scipy import sparse

    from spikeport.runtime.lava.compat import import_lava

    import_lava()
    from spikeport.runtime.lava.procs.fast_models import BlockDiagonal

    rng = np.random.default_rng(1)
    block = rng.integers(-255, 256, (6, 4))
    w = sparse.kron(sparse.identity(8, dtype=np.int64), sparse.csr_matrix(block), format="csr")
    found = BlockDiagonal.find(w)
    assert found is not None and found.n == 8  # the finest split, not kron(I_4, kron(I_2, B))
    s = (rng.random(32) > 0.5).astype(np.int64)
    assert np.array_equal(found.dot(s), w.dot(s))
    w_off = w.tolil()
    w_off[0, 31] = 1  # one synapse outside the diagonal blocks
    assert BlockDiagonal.find(w_off.tocsr()) is None
    assert BlockDiagonal.find(sparse.csr_matrix(rng.integers(1, 9, (6, 8)))) is None


@pytest.mark.slow
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_lava_200_samples_bit_exact(attention):
    graph = quantized_graph(spiky_model(attention), random_images(16, seed=1))
    x = images(200, seed=11)
    rep, spikes = lava_spikes(graph, x)
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]


@pytest.mark.under_load
def test_ctrl_c_during_spikeport_run_lava_leaves_no_process(tmp_path):
    """`spikeport run --backend lava` interrupted by a terminal's Ctrl-C (SIGINT to the whole process group,
    Lava's children included) stops the network and exits 130 with one line; nothing of it is left."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from spikeport.ir import artifact

    path = artifact.write(quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1)), tmp_path / "m.spk.h5")
    proc = subprocess.Popen(
        with_ctrl_c([sys.executable, "-m", "spikeport", "run", str(path), "--backend", "lava", "--samples", "200"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while len(process_group(proc.pid)) < 10 and time.monotonic() < deadline:  # Lava's children are up
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err, err
    deadline = time.monotonic() + 15
    while process_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_group(proc.pid)


@pytest.mark.slow
def test_wide_model_past_the_conv_fields_is_bit_exact():
    """256 channels: the depthwise LRF convs (groups 256) and the 256-channel max-pool exceed Lava Conv's
    8-bit fields and become Sparse; the dendritic token mixing keeps one Conv group per head (16)."""
    from spikeport.runtime.lava import backend as LB

    model = spiky_model("lrf_dyn", embed_dim=256, num_heads=16, depth=1, img_size=16, pool_stages=(3,))
    graph = quantized_graph(model, random_images(16, seed=1, shape=(1, 16, 16)))
    assert {n.attrs["groups"] for n in graph.by_op("conv")} >= {256}
    x = to_channels_last(random_images(2, seed=3, shape=(1, 16, 16)).numpy())
    net = LB.build_network(graph, np.zeros((256, 1), np.int32))
    groups = {p.name: int(np.ravel(p.groups.init)[0]) for p in net.processes if type(p).__name__ == "Conv"}
    assert groups["block.0.attn.dendrites.token_mix"] == 16 and max(groups.values()) <= 127
    rep, spikes = lava_spikes(graph, x)
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]


@pytest.mark.slow
def test_attention_split_over_head_chains_is_bit_exact():
    """128 channels in 4 heads (d_h 32): 64 x 4 x 32^2 = 262,144 pair neurons, past MAX_PAIR_NEURONS, so the
    causal attention is built as two chains of two heads each, each summed in a relay; still bit-exact."""
    model = spiky_model("lrf_causal", embed_dim=128, num_heads=4, depth=1)
    graph = quantized_graph(model, random_images(16, seed=1))
    x = images(3)
    rep, spikes = lava_spikes(graph, x)
    by_type = {}
    for row in rep["lava"]["state"]:
        by_type.setdefault(row["type"], set()).add(row["process"])
    assert by_type["ProdNeuron"] == {"block.0.attn.core.heads0-1.product", "block.0.attn.core.heads2-3.product"}
    # each chain sums into its own relay, so the attention LIF reads N C relay neurons, not the products
    assert {"block.0.attn.core.heads0-1.sum", "block.0.attn.core.heads2-3.sum"} <= by_type["GradedVec"]
    from spikeport.ir.kernels import kernel

    node = graph.nodes["block.0.attn.core"]
    assert kernel("attention").neurons(node) == 2 * 64 * 4 * 32**2 + 64 * 128  # pairs x 2 + the relays
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]


def test_stock_conv_model_runs_fields_past_int8():
    """Lava's own CPU Conv model (not spikeport's fast one) with groups = 200: the compat step widens its int8
    geometry Vars, which numpy 2 refuses to fill with 200 (PilotNet's netx file has such a field)."""
    from spikeport.runtime.lava.compat import import_lava
    from spikeport.runtime.lava.session import LavaSession

    assert "conv-fields-numpy2" in import_lava()
    from lava.magma.core.run_configs import Loihi2SimCfg
    from lava.proc.conv.process import Conv
    from lava.proc.io.sink import RingBuffer as Sink
    from lava.proc.io.source import RingBuffer as Source

    channels, steps = 200, 3
    data = np.zeros((2, 1, channels, steps), int)
    data[0, 0, :, 0] = 1  # every channel spikes at token 0, step 0
    weight = np.arange(1, channels + 1).reshape(channels, 1, 1, 1) % 100
    src, sink = Source(data=data), Sink(shape=(2, 1, channels), buffer=steps)
    conv = Conv(weight=weight, input_shape=(2, 1, channels), groups=channels)
    src.s_out.connect(conv.s_in)
    conv.a_out.connect(sink.a_in)
    with LavaSession(src, Loihi2SimCfg(select_tag="fixed_pt")) as session:
        session.run(steps)
        out = sink.data.get().astype(np.int64)
        groups = int(np.ravel(conv.groups.get())[0])
    assert out[0, 0, :, 1].tolist() == weight.ravel().tolist()  # one step later, one weight per channel
    assert not out[1].any() and groups == channels


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["ssa", "lrf_causal", "lrf_dyn"])
def test_attention_past_64_tokens_is_chip_native_and_bit_exact(attention):
    """16 x 16 = 256 tokens, past the first lowering's 64: the token mixing is one Conv over the token grid (a
    31 x 31 kernel, the pair slots interleaved by dilation), no host process, and Lava equals the reference."""
    from spikeport.runtime.lava import backend as LB

    model = spiky_model(attention, embed_dim=32, num_heads=2, depth=1, img_size=16, pool_stages=())
    graph = quantized_graph(model, random_images(16, seed=1, shape=(1, 16, 16)))
    core = next(n for n in graph.order if graph.nodes[n].op in ("attention", "dendritic"))
    assert graph.nodes[core].shape[:-1] == (16, 16)
    net = LB.build_network(graph, np.zeros((256, 1), np.int32))
    (mix,) = [p for p in net.processes if p.name.endswith("token_mix")]
    assert np.asarray(mix.weight.init).shape[1:3] == (31, 31) and net.host_only == ["input"]
    x = to_channels_last(random_images(2, seed=3, shape=(1, 16, 16)).numpy())
    rep, spikes = lava_spikes(graph, x)
    assert "AttentionCore" not in {row["type"] for row in rep["lava"]["state"]}
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["ssa", "lrf_causal"])
def test_host_attention_core_where_asked_is_bit_exact(attention):
    """The host AttentionCore is a fallback the user asks for (``placement`` 'host', convert --host-attention):
    its core is the same fixedpoint function as the reference's, and Lava still equals the reference."""
    from spikeport.ir.kernels.attention import place_on_host

    model = spiky_model(attention, embed_dim=32, num_heads=2, depth=1)
    graph = quantized_graph(model, random_images(16, seed=1))
    assert place_on_host(graph) == ["block.0.attn.core"]
    x = images(2)
    rep, spikes = lava_spikes(graph, x)
    assert "AttentionCore" in {row["type"] for row in rep["lava"]["state"]}
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]


@pytest.mark.slow
def test_token_mixing_split_into_segments_is_bit_exact(monkeypatch):
    """Pair rows that do not fit one Conv (here: Conv fields narrowed to 16, so 4 pair slots a token and 16 on Z)
    are split into segments, each its own coincidence LIF, Conv, ProdNeuron and rescale; a segment holds whole
    outputs (all d_h pairs (c, c') of a c'), so each output is floored once, and Lava still equals the reference."""
    from spikeport import chip_limits

    monkeypatch.setattr(chip_limits, "CONV_FIELD_MAX", 16)  # the token mixing reads it from chip_limits at build time
    model = spiky_model("lrf_causal", embed_dim=32, num_heads=2, depth=1)
    graph = quantized_graph(model, random_images(16, seed=1))
    x = images(2)
    rep, spikes = lava_spikes(graph, x)
    products = {row["process"] for row in rep["lava"]["state"] if row["type"] == "ProdNeuron"}
    assert len(products) == 8 and "block.0.attn.core.seg7.product" in products  # 512 rows / (4 x 16 each)
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    assert rep["predictions"] == ref_rep["predictions"]


@pytest.mark.slow
def test_fan_in_past_a_core_is_split_into_partial_sums_bit_exact(monkeypatch, tmp_path):
    """A neuron that reads more inputs than one core receives (here counting.MAX_FAN_IN lowered to 100: the 3 x 3 x
    64 rpe conv, 576 inputs, and the 256-input MLP layer) is split at lowering time: partial sums over runs of its
    input channels in GradedVec relay neurons, summed by a graded Sparse of ones; the reference computes the same
    regrouped integers and counts the relays, Lava equals it, and check-hw finds no fan-in past the limit there
    (the token mixing's 15 x 15 kernel is past 100, but no preset's limit)."""
    from spikeport import counting
    from spikeport.runtime.lava import backend as LB
    from spikeport.runtime.loihi2.check_hw import describe_processes, evaluate

    monkeypatch.setattr(counting, "MAX_FAN_IN", 100)
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    net = LB.build_network(graph, np.zeros((64, 1), np.int32))
    names = {p.name: p for p in net.processes}
    rpe = graph.nodes["patch_embed.rpe_conv"]
    assert int(np.ravel(names["patch_embed.rpe_conv"].groups.init)[0]) == 8  # 576 / 8 = 72 inputs a neuron
    assert type(names["patch_embed.rpe_conv.partial"]).__name__ == "GradedVec"
    assert type(names["patch_embed.rpe_conv.sum"]).__name__ == "Sparse" and "block.0.mlp.fc2_linear.partial" in names
    assert LB.depths(graph)[rpe.name] == LB.depths(graph)[rpe.inputs[0]] + 2
    procs = describe_processes(graph, net)
    # a core that holds one neuron of 100 kernel rows (2 SynMem units a row, core_model) and no more
    result = evaluate(graph, procs, profile_with_synmem(tmp_path, 200))
    broken = {f.layer for f in result.violations if f.rule == "synmem_units_per_core"}
    assert broken.isdisjoint({"patch_embed.rpe_lif", "block.0.mlp.fc2_lif", "patch_embed.rpe_conv"}), broken
    x = images(3)
    rep, spikes = lava_spikes(graph, x)
    ref_rep, ref_spikes = reference_spikes(graph, x)
    assert first_divergence(graph, ref_spikes, spikes) is None
    by_name = {row["name"]: row for row in ref_rep["layers"]}
    assert sum(by_name[rpe.name]["neuron_updates"]) == 3 * graph.T * 8 * 8 * 64 * 8  # the relays, every step
    for a, b in zip(rep["layers"], ref_rep["layers"], strict=True):
        assert a["spikes"] == b["spikes"] and a["macs"] == b["macs"], a["name"]


def profile_with_synmem(tmp_path, units):
    import yaml

    from spikeport.hw_profiles import PROFILE_DIR, load_profile

    data = yaml.safe_load((PROFILE_DIR / "loihi2.yaml").read_text())
    data["name"], data["limits"]["synmem_units_per_core"]["value"] = "small-synmem", units
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_profile(path)
