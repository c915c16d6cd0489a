"""The token-mixing cores of the four attention variants (DESIGN.md section 2), without neurons.

All functions take spike tensors split into heads, ``[..., H, N, d_h]`` (N tokens in raster order), and
return the pre-neuron attention input ``[..., H, N, d_h]``. The scale ``s`` and the local term are
applied by the caller (``SSA`` in models.py).

Variant    core (per time step, per head)                          state held at inference
ssa        Q (K^T V)                                               K^T V: d_h x d_h
lrf_causal q_n S_n,  S_n = sum_{j<=n} k_j^T v_j                    S_n: d_h x d_h (running sum)
lrf_dyn    q_n * g_n, g_n = C^T X_n,  X_n = A X_{n-1} + Gamma u_n,  X_n: k x d_h (dendritic potentials)
           u_n = k_n * v_n (the coincidence of key and value spikes)

Each sequential form has a parallel twin used for training; tests check they agree.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn


def ssa_core(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Spikformer SSA without scale: Q (K^T V), associativity as in the official ImageNet code."""
    return q @ (k.transpose(-2, -1) @ v)


def causal_core_parallel(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Seed 004 Eq. 11: token n sees sum_{j<n} k_j^T v_j plus its own k_n^T v_n (a causal mask on QK^T)."""
    n = q.shape[-2]
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    scores = (q @ k.transpose(-2, -1)).masked_fill(~mask, 0.0)
    return scores @ v


def causal_core_running(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The same as causal_core_parallel, as a running sum S_n (one d_h x d_h matrix per head)."""
    state = q.new_zeros(*q.shape[:-2], q.shape[-1], v.shape[-1])
    out = []
    for n in range(q.shape[-2]):
        state = state + k[..., n, :, None] * v[..., n, None, :]
        out.append((q[..., n, None, :] @ state).squeeze(-2))
    return torch.stack(out, dim=-2)


class Dendrites(nn.Module):
    """Per-head multi-compartment (dendritic) linear neuron run along the token axis (seed 004 Eq. 12-15).

    For each head h and each channel c of the head, k dendrites hold X_n[:, c] in R^k:

        X_n = A_h X_{n-1} + Gamma_h u_n[c],   X_0 = 0,     g_n[c] = C_h^T X_n[:, c]

    A_h is k x k tridiagonal: diagonal a_i = 1 - 1/tau_i, off-diagonals beta_i (coupling of adjacent
    dendrites, symmetric). The parametrisation keeps A stable (Gershgorin: |a_i| + |beta_{i-1}| +
    |beta_i| < 1), so the kernel decays and the dendritic state stays bounded in fixed point.
    Because A, Gamma, C do not depend on n, g = K * u is a causal convolution with
    K_m = C^T A^m Gamma: ``forward_parallel`` (a Toeplitz matmul) trains, ``forward_recurrent`` is what
    the runtime executes.
    """

    def __init__(self, num_heads: int, num_dendrites: int = 8):
        super().__init__()
        h, k = num_heads, num_dendrites
        self.num_heads, self.num_dendrites = h, k
        # decay a_i = sigmoid(decay_logit): tau_i = 1/(1-a_i); spread initial time constants 1.5 .. 20 tokens
        tau0 = torch.logspace(torch.log10(torch.tensor(1.5)), torch.log10(torch.tensor(20.0)), k)
        a0 = 1 - 1 / tau0
        self.decay_logit = nn.Parameter(torch.log(a0 / (1 - a0)).repeat(h, 1))
        self.coupling_raw = nn.Parameter(torch.zeros(h, max(k - 1, 0)))
        self.gamma = nn.Parameter(torch.ones(h, k) / k)
        self.readout = nn.Parameter(torch.ones(h, k))
        self.frozen: tuple[torch.Tensor, torch.Tensor] | None = None  # (kernel taps [H, N], A): see freeze

    def freeze(self, max_tokens: int) -> None:
        """Compute A and the kernel for up to ``max_tokens`` tokens once and use them from now on. Both depend on
        the parameters only: an export copy holds them as constants (the TorchScript ONNX exporter has no
        symbolic for ``diag_embed``). A frozen module no longer trains its parameters."""
        with torch.no_grad():
            self.frozen = (self.kernel(max_tokens).detach(), self.transition().detach())

    def decay(self) -> torch.Tensor:
        return torch.sigmoid(self.decay_logit)

    def coupling(self) -> torch.Tensor:
        a = self.decay()
        bound = (1 - torch.maximum(a[:, :-1], a[:, 1:])) / 2
        return bound * torch.tanh(self.coupling_raw)

    def transition(self) -> torch.Tensor:
        """A: [H, k, k] tridiagonal."""
        if self.frozen is not None:
            return self.frozen[1]
        beta = self.coupling()
        return torch.diag_embed(self.decay()) + torch.diag_embed(beta, offset=1) + torch.diag_embed(beta, offset=-1)

    def kernel(self, n: int) -> torch.Tensor:
        """K_m = C^T A^m Gamma for m = 0..n-1: [H, n]. Powers by doubling: log2(n) batched matmuls
        instead of n small ones (n = 196 tokens on ImageNet)."""
        if self.frozen is not None:
            return self.frozen[0][:, :n]
        power = self.transition()
        columns = self.gamma.unsqueeze(-1)  # [H, k, 1]: A^0 Gamma
        while columns.shape[-1] < n:
            columns = torch.cat([columns, power @ columns], dim=-1)
            power = power @ power
        return (self.readout.unsqueeze(-1) * columns[..., :n]).sum(-2)

    def forward_parallel(self, u: torch.Tensor) -> torch.Tensor:
        """u: [..., H, N, d_h] -> g: [..., H, N, d_h] via a lower-triangular Toeplitz matmul."""
        n = u.shape[-2]
        taps = self.kernel(n)  # [H, N]
        idx = torch.arange(n, device=u.device)
        lag = idx[:, None] - idx[None, :]  # n - j
        toeplitz = taps[:, lag.clamp(min=0)] * (lag >= 0)  # [H, N, N]
        if torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
            return toeplitz @ u  # the graph ONNX export records
        # one [N, N] x [N, everything else] GEMM per head: the broadcast matmul above copies the Toeplitz matrix
        # once per (time step, image) and runs that many small GEMMs (1.6x the time forward + backward on a CPU,
        # benchmarks/bench_train_layers.py)
        lead, (h, _, dh) = u.shape[:-3], u.shape[-3:]
        by_head = u.reshape(-1, h, n, dh).permute(1, 2, 0, 3).reshape(h, n, -1)  # [H, N, rest * d_h]
        out = torch.bmm(toeplitz, by_head).reshape(h, n, -1, dh).permute(2, 0, 1, 3)
        return out.reshape(*lead, h, n, dh)

    def forward_recurrent(self, u: torch.Tensor) -> torch.Tensor:
        """The same as forward_parallel, token by token, holding only X: [..., H, k, d_h]."""
        a = self.transition()  # [H, k, k]
        state = u.new_zeros(*u.shape[:-2], self.num_dendrites, u.shape[-1])
        out = []
        for n in range(u.shape[-2]):
            state = a @ state + self.gamma[..., :, None] * u[..., n, None, :]
            out.append((self.readout[..., :, None] * state).sum(-2))
        return torch.stack(out, dim=-2)


# The LRF of a CPU training step runs as one [C, N, N] matrix per channel (``LocalReceptiveField.matrices``) where
# the grid has at most this many tokens: 2.1x faster forward + backward than the depthwise convolutions on an 8x8
# grid (oneDNN's depthwise backward is slow there), 3.3x slower on 14x14, where the matrices are mostly zeros.
DENSE_MAX_TOKENS = 64


@functools.lru_cache(maxsize=8)
def tap_matrices(grid: tuple[int, int], dilations: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """``[9 len(dilations), N, N]`` of 0/1: entry (k, n, m) is 1 where tap k (the 3x3 taps of each dilation in
    turn, row-major, as ``conv.weight.flatten(1)``) carries token m to token n on the grid (zero padding).
    Shared: never modify in place."""
    rows, cols = grid
    r, c = torch.arange(rows).repeat_interleave(cols), torch.arange(cols).repeat(rows)
    taps = torch.zeros(9 * len(dilations), rows * cols, rows * cols, dtype=dtype)
    for k, (dil, i, j) in enumerate((d, i, j) for d in dilations for i in range(3) for j in range(3)):
        rr, cc = r + (i - 1) * dil, c + (j - 1) * dil
        ok = (rr >= 0) & (rr < rows) & (cc >= 0) & (cc < cols)
        taps[k, torch.nonzero(ok).squeeze(1), rr[ok] * cols + cc[ok]] = 1
    return taps


class LocalReceptiveField(nn.Module):
    """LRF term of seed 004 Eq. 8: two 3x3 depthwise convolutions, dilation 3 and 5, on V laid out on
    the token grid, summed. Added to the attention neuron's input unscaled (Eq. 8; Eq. 14 would scale it
    by s, reference/papers.md item 1: a learned kernel absorbs the factor either way)."""

    def __init__(self, dim: int, grid: tuple[int, int], dilations: tuple[int, ...] = (3, 5)):
        super().__init__()
        self.grid = grid
        self.dilations = tuple(dilations)
        convs = [nn.Conv2d(dim, dim, 3, padding=d, dilation=d, groups=dim, bias=False) for d in self.dilations]
        for conv in convs:
            nn.init.normal_(conv.weight, std=0.1)
        self.convs = nn.ModuleList(convs)

    def matrices(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """L: ``[C, N, N]`` with out[n, c] = sum_m L[c, n, m] v[m, c], differentiable in the kernels; in the
        kernels' dtype unless given."""
        kernels = [conv.weight for conv in self.convs if isinstance(conv, nn.Conv2d)]  # [C, 1, 3, 3] each
        weights = torch.cat([k.flatten(1) for k in kernels], dim=1)  # [C, 9 per dilation]
        dtype = dtype or weights.dtype
        taps = tap_matrices(tuple(self.grid), self.dilations, dtype).to(weights.device)
        n = taps.shape[-1]
        return (weights.to(dtype) @ taps.flatten(1)).view(-1, n, n)

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        """v: [T, B, N, C] spikes -> [T, B, N, C]."""
        t, b, n, c = v.shape
        if self._dense(v):  # the same sums in another order: equal to rounding (tests/test_train_fast_path.py)
            tokens_last = v.reshape(t * b, n, c).permute(2, 1, 0).contiguous()  # [C, N, T*B]
            out = _ContiguousGrad.apply(torch.bmm(self.matrices(), tokens_last))
            return out.permute(2, 1, 0).reshape(t, b, n, c)
        h, w = self.grid
        img = v.reshape(t * b, h, w, c).permute(0, 3, 1, 2)
        out = sum(conv(img) for conv in self.convs)
        return out.permute(0, 2, 3, 1).reshape(t, b, n, c)

    def _dense(self, v: torch.Tensor) -> bool:
        """A CPU training step on a small grid (DENSE_MAX_TOKENS); inference, tracing and export keep the
        convolutions (what the conversion reads and ONNX records), CUDA its compiled step."""
        if not (torch.is_grad_enabled() and v.device.type == "cpu" and v.shape[2] <= DENSE_MAX_TOKENS):
            return False
        wants_grad = v.requires_grad or any(p.requires_grad for p in self.parameters())
        return wants_grad and not (torch.jit.is_tracing() or torch.onnx.is_in_onnx_export())


class _ContiguousGrad(torch.autograd.Function):
    """The identity, whose gradient is made contiguous in one copy: given a permuted gradient (or input), torch's
    CPU ``bmm`` copies each of its C matrices on its own, forward and backward (0.56x the time of the LRF's forward +
    backward with both contiguous at digits-tiny's shapes)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.contiguous()
