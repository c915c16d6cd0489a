"""Parallel (training) and sequential (inference) forms of lrf_causal and lrf_dyn agree."""

from __future__ import annotations

import pytest
import torch

from spikeport.train.attention import Dendrites, causal_core_parallel, causal_core_running
from spikeport.train.models import build_model, set_inference_form
from spikeport.train.neurons import reset_net
from spikeport.train.presets import preset_config

SIZES = [(1, 3), (7, 4), (16, 8), (64, 16), (49, 32)]  # (N tokens, d_h)


def spikes(*shape, gen, p=0.3):
    return (torch.rand(*shape, generator=gen) < p).double()


@pytest.mark.parametrize("n,d", SIZES)
def test_causal_running_sum_equals_masked_product(n, d):
    gen = torch.Generator().manual_seed(n * 100 + d)
    q, k, v = (spikes(2, 3, 4, n, d, gen=gen) for _ in range(3))  # [T, B, H, N, d_h]
    par, rec = causal_core_parallel(q, k, v), causal_core_running(q, k, v)
    assert par.shape == rec.shape == (2, 3, 4, n, d)
    torch.testing.assert_close(par, rec, rtol=1e-12, atol=1e-12)
    # token 0 sees only itself: q_0 (k_0^T v_0)
    torch.testing.assert_close(par[..., 0, :], (q[..., 0, :] * k[..., 0, :]).sum(-1, keepdim=True) * v[..., 0, :])


@pytest.mark.parametrize("n,d", SIZES)
@pytest.mark.parametrize("dendrites", [1, 2, 8])
def test_dendritic_recursion_equals_toeplitz_convolution(n, d, dendrites):
    torch.manual_seed(n + d + dendrites)
    den = Dendrites(num_heads=3, num_dendrites=dendrites).double()
    with torch.no_grad():  # move away from the symmetric initialisation
        for p in den.parameters():
            p.add_(0.3 * torch.randn_like(p))
    gen = torch.Generator().manual_seed(1)
    u = spikes(2, 2, 3, n, d, gen=gen) * spikes(2, 2, 3, n, d, gen=gen)  # k * v coincidences
    par, rec = den.forward_parallel(u), den.forward_recurrent(u)
    torch.testing.assert_close(par, rec, rtol=1e-10, atol=1e-10)
    assert par.abs().sum() > 0


def test_dendritic_transition_is_stable_and_tridiagonal():
    den = Dendrites(num_heads=2, num_dendrites=8)
    with torch.no_grad():
        den.coupling_raw.fill_(5.0)
    a = den.transition()
    assert torch.equal(a, a.tril(1).triu(-1))
    assert (a.abs().sum(-1) < 1).all()  # Gershgorin: spectral radius < 1


@pytest.mark.parametrize("attention", ["lrf_causal", "lrf_dyn"])
def test_model_parallel_and_recurrent_forms_agree(attention):
    torch.manual_seed(0)
    model = build_model(preset_config("digits-tiny", attention=attention, neuron_backend="torch")).double().eval()
    for m in model.modules():  # make the untrained layers fire
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.weight.data.uniform_(0.5, 3.0)
            m.bias.data.uniform_(-0.5, 1.0)
    x = torch.rand(4, 1, 8, 8, dtype=torch.float64) * 2
    outs = []
    for form in ("parallel", "recurrent"):
        set_inference_form(model, form)
        with torch.no_grad():
            outs.append(model(x))
        reset_net(model)
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-9, atol=1e-9)
    assert outs[0].abs().sum() > 0
