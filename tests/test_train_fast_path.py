"""The training step's fast path (fused q/k/v projection, the one-node multi-step LIF, BatchNorm and LIF as one
node, the LRF as matrices) computes the reference path's function: the same loss, gradients, BatchNorm statistics
and neuron states to rounding, for every attention variant and both neuron backends."""

from __future__ import annotations

import contextlib
import copy
import os

import pytest
import torch
import torch.nn.functional as F

from spikeport.train import bn_lif, lif_kernels
from spikeport.train.attention import LocalReceptiveField
from spikeport.train.models import SSA, build_model, set_fused_qkv
from spikeport.train.neurons import MultiStepLIF, TorchLIF, groupable, reset_net
from spikeport.train.presets import preset_config

ATTENTIONS = ("ssa", "lrf_ssa", "lrf_causal", "lrf_dyn")


def firing_model(attention: str, backend: str, seed: int = 0):
    """digits-tiny in float64 whose layers fire (BatchNorm gains/biases drawn so that every LIF spikes)."""
    torch.manual_seed(seed)
    model = build_model(preset_config("digits-tiny", attention=attention, neuron_backend=backend)).double()
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data = torch.rand(m.weight.shape, generator=gen, dtype=torch.float64) + 0.5
            m.bias.data = torch.rand(m.bias.shape, generator=gen, dtype=torch.float64) * 0.6
    return model.train()


def step(model, x, y, fused: bool):
    set_fused_qkv(model, fused)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    spikes = {n: m.v.detach().clone() for n, m in model.named_modules() if hasattr(m, "tau") and hasattr(m, "v")}
    return loss.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}, spikes


@pytest.mark.parametrize("backend", ["torch", "spikingjelly"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_fast_and_reference_paths_give_the_same_loss_and_gradients(attention, backend):
    reference = firing_model(attention, backend)
    fast = copy.deepcopy(reference)
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(6, 1, 8, 8, generator=gen, dtype=torch.float64) * 2
    y = torch.randint(0, 10, (6,), generator=gen)
    loss_ref, grads_ref, states_ref = step(reference, x, y, fused=False)
    loss_fast, grads_fast, states_fast = step(fast, x, y, fused=True)
    torch.testing.assert_close(loss_fast, loss_ref, rtol=1e-12, atol=1e-12)
    assert grads_fast.keys() == grads_ref.keys() and any("q_linear" in n for n in grads_ref)
    for name, g in grads_ref.items():
        torch.testing.assert_close(grads_fast[name], g, rtol=1e-9, atol=1e-12, msg=name)
    assert sum(float(g.abs().sum()) for n, g in grads_ref.items() if ".attn.q_" in n) > 0  # gradients reach q
    for name, v in states_ref.items():  # each of q/k/v_lif holds its own final membrane (BN summed in another order)
        torch.testing.assert_close(states_fast[name], v, rtol=1e-12, atol=1e-12, msg=name)
    for (name, a), b in zip(reference.state_dict().items(), fast.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12, msg=name)  # running statistics, step counts


def test_fast_path_steps_aside_where_fusing_would_change_what_is_observed():
    model = firing_model("ssa", "torch").eval()
    attn = next(m for m in model.modules() if isinstance(m, SSA))
    lifs = [attn.q_lif, attn.k_lif, attn.v_lif]
    assert groupable(lifs)
    seen = []
    handle = attn.k_lif.register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    assert not groupable(lifs)
    with torch.no_grad():
        model(torch.rand(2, 1, 8, 8, dtype=torch.float64))
    assert seen and seen[0][-1] == model.cfg.embed_dim  # the hooked LIF ran on its own channels
    handle.remove()
    assert not groupable(lifs)  # each now holds the state of that call: a next call must carry it
    reset_net(model)
    assert groupable(lifs)
    attn.v_lif.v_threshold = 0.7
    assert not groupable(lifs)


def test_multi_step_lif_matches_the_step_by_step_graph():
    """MultiStepLIF (one autograd node) against the plain loop that tracing and ONNX export record."""
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(4, 5, 7, generator=gen, dtype=torch.float64) * 1.5 + 0.8).requires_grad_()
    lif = TorchLIF(tau=2.0, v_threshold=1.0)
    ref_spikes, ref_v = lif.step_by_step(x, torch.zeros_like(x[0]))
    spikes, v = MultiStepLIF.apply(x, torch.zeros_like(x[0]), 2.0, 1.0, 4.0)
    assert torch.equal(spikes, ref_spikes) and torch.equal(v, ref_v) and 0 < spikes.mean() < 1
    weights = torch.randn(spikes.shape, generator=gen, dtype=torch.float64)
    (g_ref,) = torch.autograd.grad((ref_spikes * weights).sum() + ref_v.sum(), x)
    (g_fast,) = torch.autograd.grad((spikes * weights).sum() + v.sum(), x)
    torch.testing.assert_close(g_fast, g_ref, rtol=1e-12, atol=1e-12)


def test_training_net_compiles_on_cuda_only():
    from spikeport.train.loop import training_net

    model = firing_model("ssa", "torch")
    assert training_net(model, torch.device("cpu")) is model
    assert training_net(model, torch.device("cpu"), compile=True) is model


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.compile's Triton kernels)")
def test_compiled_training_step_equals_the_eager_one_on_cuda():
    """The default training step on CUDA (training_net: torch.compile, SpikingJelly neurons) computes the eager
    network's loss and gradients (float64: no spike flips on rounding), for the attention with the most token
    mixing."""
    from spikeport.train.loop import training_net

    eager = firing_model("lrf_dyn", "spikingjelly").cuda()
    compiled_model = copy.deepcopy(eager)
    compiled = training_net(compiled_model, torch.device("cuda"))
    assert compiled is not compiled_model
    gen = torch.Generator().manual_seed(1)
    x = (torch.rand(6, 1, 8, 8, generator=gen, dtype=torch.float64) * 2).cuda()
    y = torch.randint(0, 10, (6,), generator=gen).cuda()
    for step in range(2):  # twice: the compiled step from reset state, as every training step starts
        results = []
        for net, model in ((eager, eager), (compiled, compiled_model)):
            model.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            results.append(
                (loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
            )
            reset_net(model)
        (loss_e, grads_e), (loss_c, grads_c) = results
        torch.testing.assert_close(loss_c, loss_e, rtol=1e-9, atol=1e-12)
        assert grads_c.keys() == grads_e.keys()
        for name, g in grads_e.items():
            torch.testing.assert_close(grads_c[name], g, rtol=1e-7, atol=1e-10, msg=f"step {step} {name}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("tau", [2.0, 1.5])
def test_compiled_lif_kernels_match_multi_step_lif(dtype, tau):
    """FusedLIF (lif_kernels: the CPU training step's LIF) against MultiStepLIF: the same spikes and final
    membrane, gradients equal to rounding, for a layer of any shape (flattened inside)."""
    gen = torch.Generator().manual_seed(5)
    x = (torch.randn(4, 3, 5, 7, generator=gen, dtype=dtype) * 1.5 + 0.8).requires_grad_()
    assert lif_kernels.usable(x), lif_kernels._failure  # numba is a training dependency: it builds
    v0 = torch.zeros_like(x[0])
    ref_spikes, ref_v = MultiStepLIF.apply(x, v0, tau, 1.0, 4.0)
    spikes, v = lif_kernels.FusedLIF.apply(x, v0, tau, 1.0, 4.0)
    assert torch.equal(spikes, ref_spikes) and torch.equal(v, ref_v) and 0 < spikes.mean() < 1
    weights = torch.randn(spikes.shape, generator=gen, dtype=dtype)
    for with_v in (False, True):  # the final state's gradient absent (a training step) or present
        extra = (lambda out: out.sum()) if with_v else (lambda out: 0)
        (g_ref,) = torch.autograd.grad((ref_spikes * weights).sum() + extra(ref_v), x, retain_graph=True)
        (g_fused,) = torch.autograd.grad((spikes * weights).sum() + extra(v), x, retain_graph=True)
        tol = 1e-12 if dtype == torch.float64 else 1e-6
        torch.testing.assert_close(g_fused, g_ref, rtol=tol, atol=tol)
    strided = x.transpose(1, 3)  # a layer's input need not be contiguous (token / channel transposes)
    assert torch.equal(
        lif_kernels.FusedLIF.apply(strided, v0.transpose(0, 2), tau, 1.0, 4.0)[0], ref_spikes.transpose(1, 3)
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_inference_lif_loop_matches_the_step_by_step_graph(dtype, monkeypatch):
    """lif_kernels.infer (TorchLIF in inference on a CPU) against the plain loop: the same spikes and membrane."""
    monkeypatch.setattr(lif_kernels, "_built", set())  # probed again, here under no_grad
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(4, 6, 5, 3, generator=gen, dtype=dtype) * 1.5 + 0.8
    v0 = torch.rand(6, 5, 3, generator=gen, dtype=dtype)  # a state from an earlier call
    lif = TorchLIF(tau=1.5)
    with torch.no_grad():
        assert lif_kernels.usable(x), lif_kernels._failure  # built (and probed) under no_grad: inference's case
        ref_spikes, ref_v = lif.step_by_step(x, v0)
        for layer_input in (x, x.transpose(1, 3).contiguous().transpose(1, 3)):  # contiguous or strided
            spikes, v = lif_kernels.infer(layer_input, v0, lif.tau, lif.v_threshold)
            assert torch.equal(spikes, ref_spikes) and torch.equal(v, ref_v) and 0 < spikes.mean() < 1
        assert torch.equal(lif.run(x, v0)[0], ref_spikes)


def test_training_lif_uses_the_compiled_loops_unless_turned_off(monkeypatch):
    lif = TorchLIF()
    x = torch.randn(2, 3, 4, requires_grad=True)
    assert lif_kernels.usable(x)  # built before counting (the build runs the kernels once)
    used = []
    for cls in (lif_kernels.FusedLIF, MultiStepLIF):
        monkeypatch.setattr(cls, "apply", lambda *a, cls=cls, orig=cls.apply: used.append(cls) or orig(*a))
    lif.run(x, torch.zeros_like(x[0]))
    monkeypatch.setenv(lif_kernels.ENV, "0")
    lif.run(x, torch.zeros_like(x[0]))
    assert used == [lif_kernels.FusedLIF, MultiStepLIF]


_RUN_EVERY_LOOP = """
import json, numpy as np
from spikeport.train import lif_loops as L
f = np.float32
x, v, s, z = np.ones((2, 3), f), np.zeros(3, f), np.empty((2, 3), f), np.empty((2, 3), f)
L.lif_forward(x, v, f(2), f(1), f(4), s, z)
L.lif_backward(z, z, x, v, f(2), f(4), s)
L.lif_infer(x, v, f(2), f(1), s)
y, c = np.ones((2, 3, 4), f), np.ones(4, f)
m, var = np.empty(4), np.empty(4)
L.bn_lif_forward(y, c, c, 1e-5, f(2), f(1), f(4), y.copy(), y.copy(), m, var, np.zeros((3, 4), f))
L.bn_lif_backward(y, y, y, np.zeros((3, 4), f), y, m, m, c, f(2), f(4), y.copy(), c.copy(), c.copy())
names = ("lif_forward", "lif_backward", "lif_infer", "bn_lif_forward", "bn_lif_backward")
print(json.dumps({n: sum(getattr(L, n).stats.cache_hits.values()) for n in names}))
"""


def test_compiled_loops_come_from_numbas_cache_in_the_next_process(tmp_path):
    """A second process reads every loop from numba's on-disk cache instead of compiling it again (~3 s of CPU per
    training process when a loop closed over another compiled function and missed the cache every time)."""
    import json
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [
        subprocess.run([sys.executable, "-c", _RUN_EVERY_LOOP], env=env, capture_output=True, text=True, check=True)
        for _ in range(2)
    ]
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert set(first.values()) == {0}, first  # built in the first
    assert all(hits >= 1 for hits in second.values()), second  # read from the cache in the second


def _conv_form(lrf: LocalReceptiveField, v: torch.Tensor) -> torch.Tensor:
    t, b, n, c = v.shape
    img = v.reshape(t * b, *lrf.grid, c).permute(0, 3, 1, 2)
    return sum(conv(img) for conv in lrf.convs).permute(0, 2, 3, 1).reshape(t, b, n, c)


@pytest.mark.parametrize("grid", [(8, 8), (4, 6)])
def test_training_lrf_as_matrices_equals_its_convolutions(grid):
    torch.manual_seed(0)
    lrf = LocalReceptiveField(12, grid).double()
    v = (torch.rand(3, 2, grid[0] * grid[1], 12, dtype=torch.float64) < 0.3).double().requires_grad_()
    upstream = torch.randn(v.shape, dtype=torch.float64)
    assert lrf._dense(v)
    grads = []
    for form in (lrf, lambda x: _conv_form(lrf, x)):
        lrf.zero_grad()
        v.grad = None
        out = form(v)
        out.backward(upstream)
        grads.append((out.detach(), v.grad.clone(), [conv.weight.grad.clone() for conv in lrf.convs]))
    (out_dense, gv_dense, gw_dense), (out_conv, gv_conv, gw_conv) = grads
    torch.testing.assert_close(out_dense, out_conv, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(gv_dense, gv_conv, rtol=1e-12, atol=1e-12)
    for a, b in zip(gw_dense, gw_conv, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_lrf_keeps_its_convolutions_for_inference_and_large_grids():
    lrf = LocalReceptiveField(8, (8, 8))
    v = (torch.rand(2, 2, 64, 8) < 0.3).float()
    with torch.no_grad():
        assert not lrf._dense(v) and torch.equal(lrf(v), _conv_form(lrf, v))  # what the conversion computes
    big = LocalReceptiveField(8, (14, 14))
    assert not big._dense(torch.zeros(1, 1, 196, 8, requires_grad=True))  # mostly zeros as matrices: slower


def _bn_lif_modules(n: int, channels: int, dtype: torch.dtype, seed: int):
    gen = torch.Generator().manual_seed(seed)
    bns = [torch.nn.BatchNorm1d(channels).to(dtype) for _ in range(n)]
    for bn in bns:
        bn.weight.data = torch.rand(channels, generator=gen, dtype=dtype) + 0.5
        bn.bias.data = torch.rand(channels, generator=gen, dtype=dtype) * 0.5
        bn.running_mean.data = torch.randn(channels, generator=gen, dtype=dtype)
    return bns, [TorchLIF(tau=2.0, v_threshold=1.0) for _ in range(n)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("groups", [1, 3])
def test_batch_norm_and_lif_as_one_node_equal_the_modules_one_after_the_other(dtype, groups):
    """bn_lif.batch_norm_lif (the compiled node) against the same BatchNorm1d and TorchLIF modules run as before
    (the eager BatchNorm, then MultiStepLIF): the same spikes, membranes, running statistics and step counts, and
    gradients for the input, gains and biases, to rounding."""
    gen = torch.Generator().manual_seed(7)
    y = (torch.randn(4, 3, 10, groups * 6, generator=gen, dtype=dtype) * 2 + 3).requires_grad_()
    weights = torch.randn(y.shape, generator=gen, dtype=dtype)
    fused_bns, fused_lifs = _bn_lif_modules(groups, 6, dtype, seed=1)
    plain_bns, plain_lifs = _bn_lif_modules(groups, 6, dtype, seed=1)
    assert bn_lif.fusable(fused_bns, fused_lifs, y)
    spikes = bn_lif.batch_norm_lif(fused_bns, fused_lifs, y)
    with lif_kernels.plain_loops():
        assert not bn_lif.fusable(plain_bns, plain_lifs, y)
        ref = bn_lif.batch_norm_lif(plain_bns, plain_lifs, y)
    assert torch.equal(spikes, ref) and 0 < float(spikes.mean()) < 0.5
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    for a, b in zip(fused_lifs, plain_lifs, strict=True):
        torch.testing.assert_close(a.v, b.v, rtol=tol, atol=tol)
    for a, b in zip(fused_bns, plain_bns, strict=True):
        for key, value in b.state_dict().items():
            torch.testing.assert_close(a.state_dict()[key], value, rtol=tol, atol=tol, msg=key)

    def loss_and_inputs(out, bns, lifs):  # the final membranes' gradient too
        loss = (out * weights).sum() + sum(m.v.sum() for m in lifs)
        return loss, [y] + [p for bn in bns for p in (bn.weight, bn.bias)]

    got = torch.autograd.grad(*loss_and_inputs(spikes, fused_bns, fused_lifs))
    want = torch.autograd.grad(*loss_and_inputs(ref, plain_bns, plain_lifs))
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("groups", [1, 3])
def test_linear_then_batch_norm_and_lif_skip_the_bias_that_batch_norm_cancels(groups):
    """bn_lif.linear_bn_lif (the GEMM without its bias, the node given the bias for the running mean) against
    F.linear with the bias, then the modules one after the other: the same spikes, membranes, running statistics
    (the bias in the running mean) and gradients of the input, the weights and the bias (zero), to rounding."""
    gen = torch.Generator().manual_seed(11)
    x = (torch.rand(4, 3, 10, 8, generator=gen, dtype=torch.float64) < 0.4).double().requires_grad_()
    weight = (torch.randn(groups * 6, 8, generator=gen, dtype=torch.float64) * 0.7).requires_grad_()
    bias = (torch.randn(groups * 6, generator=gen, dtype=torch.float64) * 5).requires_grad_()
    out_weights = torch.randn(4, 3, 10, groups * 6, generator=gen, dtype=torch.float64)
    runs = []
    for plain in (False, True):
        bns, lifs = _bn_lif_modules(groups, 6, torch.float64, seed=1)
        with lif_kernels.plain_loops() if plain else contextlib.nullcontext():
            assert bn_lif.fusable(bns, lifs, x, wants_grad=True) is not plain
            spikes = bn_lif.linear_bn_lif(bns, lifs, x, weight, bias)
        loss = (spikes * out_weights).sum() + sum(m.v.sum() for m in lifs)
        runs.append((spikes, lifs, bns, torch.autograd.grad(loss, [x, weight, bias])))
    (spikes, lifs, bns, grads), (ref, ref_lifs, ref_bns, ref_grads) = runs
    assert torch.equal(spikes, ref) and 0 < float(spikes.detach().mean()) < 0.5
    for a, b in zip(lifs, ref_lifs, strict=True):
        torch.testing.assert_close(a.v, b.v, rtol=1e-12, atol=1e-12)
    for a, b in zip(bns, ref_bns, strict=True):
        for key, value in b.state_dict().items():
            torch.testing.assert_close(a.state_dict()[key], value, rtol=1e-12, atol=1e-12, msg=key)
    assert float(ref_bns[0].running_mean.abs().max()) > 0.1  # the bias moved it
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)
    assert not grads[2].any()  # the bias's gradient: exactly zero


@pytest.mark.parametrize("pools", [(), (1,)])
def test_stem_in_channels_last_memory_equals_its_modules(pools, monkeypatch):
    """SPS (conv, BatchNorm2d and LIF stages, RPE) with BatchNorm and LIF as one node on channels-last memory against
    the same modules one after the other: the same tokens, final membranes (as the modules hold them: [B, C, H, W]),
    running statistics and gradients of the input and every parameter, to rounding."""
    torch.manual_seed(0)
    cfg = preset_config("digits-tiny", attention="ssa", neuron_backend="torch", embed_dim=32, pool_stages=pools)
    fast = build_model(cfg).double().patch_embed.train()
    for m in fast.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.weight.data = torch.rand(m.weight.shape, dtype=torch.float64) + 0.5
            m.bias.data = torch.rand(m.bias.shape, dtype=torch.float64) * 0.6
    plain = copy.deepcopy(fast)
    x = (torch.rand(4, 3, 1, 8, 8, dtype=torch.float64) * 2).requires_grad_()
    upstream = torch.randn(4, 3, 16 if pools else 64, 32, dtype=torch.float64)
    runs, nodes = [], []
    apply = bn_lif.BatchNormLIF.apply
    monkeypatch.setattr(bn_lif.BatchNormLIF, "apply", lambda *a: nodes.append(a[0].shape) or apply(*a))
    for sps, off in ((fast, False), (plain, True)):
        x.grad = None
        with lif_kernels.plain_loops() if off else contextlib.nullcontext():
            tokens = sps(x)
        assert len(nodes) == 5  # the four stages and the RPE ran the node, the modules' run none
        (tokens * upstream).sum().backward()
        lifs = {n: m.v for n, m in sps.named_modules() if isinstance(m, TorchLIF)}
        runs.append((tokens.detach(), x.grad.clone(), lifs, {n: p.grad for n, p in sps.named_parameters()}))
    (tokens, gx, lifs, grads), (tokens_ref, gx_ref, lifs_ref, grads_ref) = runs
    assert torch.equal(tokens, tokens_ref) and 0 < float(tokens.mean()) < 1
    torch.testing.assert_close(gx, gx_ref, rtol=1e-9, atol=1e-12)
    for name, v in lifs_ref.items():
        assert lifs[name].shape == v.shape, name
        torch.testing.assert_close(lifs[name], v, rtol=1e-12, atol=1e-12, msg=name)
    for name, g in grads_ref.items():
        torch.testing.assert_close(grads[name], g, rtol=1e-9, atol=1e-12, msg=name)
    for (name, a), b in zip(plain.state_dict().items(), fast.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12, msg=name)  # running statistics, step counts


def test_conv_layout_trains_the_same_through_the_nodes():
    """layout="conv" (the official ImageNet code: 1x1 convolutions, the MLP's BatchNorm2d) through the compiled nodes
    against its modules: the same loss, gradients and running statistics to rounding."""
    torch.manual_seed(0)
    cfg = preset_config("digits-tiny", attention="ssa", neuron_backend="torch", layout="conv", embed_dim=32)
    fast = build_model(cfg).double().train()
    for m in fast.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data = torch.rand(m.weight.shape, dtype=torch.float64) + 0.5
            m.bias.data = torch.rand(m.bias.shape, dtype=torch.float64) * 0.6
    plain = copy.deepcopy(fast)
    x, y = torch.rand(4, 1, 8, 8, dtype=torch.float64) * 2, torch.tensor([0, 3, 5, 9])
    loss = F.cross_entropy(fast(x), y)
    loss.backward()
    with lif_kernels.plain_loops():
        loss_ref = F.cross_entropy(plain(x), y)
        loss_ref.backward()
    torch.testing.assert_close(loss, loss_ref, rtol=1e-12, atol=1e-12)
    for (name, p), q in zip(plain.named_parameters(), fast.parameters(), strict=True):
        if p.grad is not None:
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-9, atol=1e-12, msg=name)
    for (name, a), b in zip(plain.state_dict().items(), fast.state_dict().values(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12, msg=name)


def test_batch_norm_and_lif_run_apart_where_one_node_would_change_what_is_computed_or_seen():
    y = torch.randn(4, 2, 5, 6, dtype=torch.float64, requires_grad=True)
    bns, lifs = _bn_lif_modules(1, 6, torch.float64, seed=2)
    assert bn_lif.fusable(bns, lifs, y)
    bns[0].eval()  # inference normalises with the running statistics
    assert not bn_lif.fusable(bns, lifs, y)
    bns[0].train()
    assert not bn_lif.fusable(bns, lifs, y.detach())  # no gradient wanted: the inference loop
    handle = lifs[0].register_forward_hook(lambda *_: None)  # a monitor watches the LIF
    assert not bn_lif.fusable(bns, lifs, y)
    handle.remove()
    lifs[0].v = torch.zeros(2, 5, 6, dtype=torch.float64)  # a state carried from an earlier call
    assert not bn_lif.fusable(bns, lifs, y)
    assert not bn_lif.fusable([torch.nn.Identity()], lifs, y)  # a BatchNorm folded away
    assert bn_lif.fusable([torch.nn.BatchNorm2d(6).double()], [TorchLIF()], y)  # per channel, as BatchNorm1d
    lifs[0].reset()
    one_value = torch.randn(1, 1, 1, 6, dtype=torch.float64, requires_grad=True)
    assert not bn_lif.fusable(bns, lifs, one_value)  # torch's BatchNorm says why such a batch cannot be normalised
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        bn_lif.batch_norm_lif(bns, lifs, one_value)
