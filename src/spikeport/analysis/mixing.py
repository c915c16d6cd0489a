"""Token-mixing matrices of the attention variants: which key token feeds which query token, and how much.

For Spikformer the spikes ``q, k`` of one layer (``SSA.record``) give, per head h and time step t, the
linear map from the V spikes to the attention neuron's input (models.SSA.mix), as an N x N matrix:

    ssa, lrf_ssa   A_h[t] = s Q_h K_h^T
    lrf_causal     A_h[t] = s tril(Q_h K_h^T)                       (token n sees keys j <= n)
    lrf_dyn        A_h[t] = s (Q_h K_h^T) * Toeplitz(K_{n-m})       (channel-summed dendritic kernel)

averaged over the time steps (seed 000 Sec. 5.4). lrf_* add the local term, two depthwise dilated 3x3
convolutions on the V grid; as a matrix per channel c: ``L_c[n, m]`` = the kernel tap that carries token m
to token n (zero padding). The *effective* mixing of an lrf layer is defined here as

    E_h = |A_h| + mean_{c in head h} |L_c|

(global scores plus the mean magnitude of the head's local kernels; magnitudes because a negative tap moves
as much information as a positive one). Locality statistics use |A_h| (the attention alone) and E_h.
"""

from __future__ import annotations

import torch

from spikeport.train.attention import LocalReceptiveField
from spikeport.train.models import SSA


def local_mixing(lrf: LocalReceptiveField) -> torch.Tensor:
    """L: [C, N, N] with out[n, c] = sum_m L[c, n, m] v[m, c]  (the LocalReceptiveField as matrices)."""
    with torch.no_grad():
        return lrf.matrices(torch.float64)


def local_mixing_per_head(lrf: LocalReceptiveField, num_heads: int) -> torch.Tensor:
    """mean_{c in head} |L_c|: [H, N, N] (head h holds channels h*d_h .. (h+1)*d_h - 1, as SSA.heads)."""
    mat = local_mixing(lrf).abs()
    c, n, _ = mat.shape
    return mat.reshape(num_heads, c // num_heads, n, n).mean(1)


def mixing_per_step(attn: SSA, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Signed global term A_h[t]: [T, B, H, N, N] from the q, k spikes [T, B, N, C] of the SSA module ``attn``.
    ssa / lrf_ssa / lrf_causal: ``attn.mix(q, k, v)`` = A @ V_h per head (+ the local term); lrf_dyn mixes
    each channel separately (s q_n[c] K_{n-m} k_m[c]) and A is the sum of those maps over the head's channels."""
    qh, kh = attn.heads(q.double()), attn.heads(k.double())  # [T, B, H, N, d_h]
    scores = qh @ kh.transpose(-2, -1)
    n = scores.shape[-1]
    core = attn.spec.core
    if core == "causal":
        scores = scores * torch.ones(n, n, dtype=scores.dtype).tril()
    elif core == "dendritic":
        assert attn.dendrites is not None  # SSA builds its Dendrites exactly when the core is dendritic
        with torch.no_grad():
            taps = attn.dendrites.kernel(n).double()  # [H, N]
        idx = torch.arange(n)
        lag = idx[:, None] - idx[None, :]
        toeplitz = taps[:, lag.clamp(min=0)] * (lag >= 0)  # [H, N, N]
        scores = scores * toeplitz
    return scores * attn.cfg.scale


def global_mixing(attn: SSA, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Time-averaged global term |mean_t A_h[t]|: [B, H, N, N]."""
    return mixing_per_step(attn, q, k).mean(0).abs()
