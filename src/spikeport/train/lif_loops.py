"""The compiled loops of a CPU training step (numba): the multi-step LIF's and BatchNorm + LIF's, with one place for
the LIF's equations. Imported on first use by ``lif_kernels`` and ``bn_lif`` (importing numba takes a second or two),
which own the tensors, the autograd nodes and the fallbacks.

Every function is defined at module level: numba's on-disk cache (``cache=True``, beside this file) then serves the
next process. A loop defined inside a function, closing over ``charge``, missed the cache in every process (the
closure's pickle carries a per-process id) and was compiled again: ~3 s of CPU per training process.
"""

from __future__ import annotations

import numba
import numpy as np

# one neuron's time step, MultiStepLIF's equations in the tensor's dtype (the loops below inline them):
#   charge(x, v, tau, v_threshold) -> (H, S, V'): H = V + (X - V) / tau, S = H >= v_th, V' = H (1 - S)
#   bptt(grad_s, sig, z, grad_v, tau, alpha) -> (dL/dX, dL/dV of the step before), sig = sigmoid(z),
#   z = alpha (H - v_th): dL/dH = dL/dS alpha sig (1 - sig) + dL/dV' (1 - S)


@numba.njit(cache=True, inline="always")
def charge(x, v, tau, v_threshold):  # type: ignore[no-untyped-def]
    one, zero = type(v)(1.0), type(v)(0.0)
    h = v + (x - v) / tau
    s = one if h >= v_threshold else zero
    return h, s, h * (one - s)


@numba.njit(cache=True, inline="always")
def bptt(grad_s, sig, z, grad_v, tau, alpha):  # type: ignore[no-untyped-def]
    one, zero = type(z)(1.0), type(z)(0.0)
    rest = one if z < zero else zero  # 1 - S[t]: no reset gradient where it fired
    grad_h = grad_s * (alpha * sig * (one - sig)) + grad_v * rest
    return grad_h / tau, grad_h * (one - one / tau)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def lif_forward(x_seq, v, tau, v_threshold, alpha, spikes, z_seq):  # type: ignore[no-untyped-def]
    """spikes and z = alpha (H[t] - v_th) (what the backward needs) of x_seq [T, n]; v [n]: the membrane, updated in
    place to the final V."""
    for t in range(x_seq.shape[0]):
        for i in range(x_seq.shape[1]):
            h, spikes[t, i], v[i] = charge(x_seq[t, i], v[i], tau, v_threshold)
            z_seq[t, i] = alpha * (h - v_threshold)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def lif_backward(z_seq, sig, grad_spikes, grad_v, tau, alpha, grad_x):  # type: ignore[no-untyped-def]
    """dL/dX into grad_x [T, n] by BPTT in reverse; grad_v [n]: dL/dV of the last step in, of the first out.
    sig = sigmoid(z), computed by torch (vectorised)."""
    for t in range(z_seq.shape[0] - 1, -1, -1):
        for i in range(z_seq.shape[1]):
            grad_x[t, i], grad_v[i] = bptt(grad_spikes[t, i], sig[t, i], z_seq[t, i], grad_v[i], tau, alpha)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def lif_infer(x_seq, v, tau, v_threshold, spikes):  # type: ignore[no-untyped-def]
    """lif_forward's spikes and final membrane alone: inference keeps nothing for a backward."""
    for t in range(x_seq.shape[0]):
        for i in range(x_seq.shape[1]):
            _, spikes[t, i], v[i] = charge(x_seq[t, i], v[i], tau, v_threshold)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def bn_lif_forward(y, gamma, beta, eps, tau, v_threshold, alpha, spikes, z, mean, var, v):  # type: ignore[no-untyped-def]
    """y [T, M, C] -> spikes and z = alpha (H - v_th) [T, M, C]; mean, biased var [C] (float64) of y over T and M;
    v [M, C] (zeros in): the final membrane."""
    steps, rows, chans = y.shape
    shift = y[0, 0].astype(np.float64)  # a sum of (y - shift) loses nothing to a large mean
    total, squares = np.zeros(chans), np.zeros(chans)
    for t in range(steps):
        for m in range(rows):
            for c in range(chans):
                d = np.float64(y[t, m, c]) - shift[c]
                total[c] += d
                squares[c] += d * d
    n = steps * rows
    scale, offset = np.empty(chans, y.dtype), np.empty(chans, y.dtype)
    for c in range(chans):
        mean[c] = shift[c] + total[c] / n
        var[c] = max(squares[c] / n - (total[c] / n) ** 2, 0.0)
        k = gamma[c] / np.sqrt(var[c] + eps)
        scale[c], offset[c] = k, beta[c] - mean[c] * k
    for t in range(steps):
        for m in range(rows):
            for c in range(chans):
                h, spikes[t, m, c], v[m, c] = charge(y[t, m, c] * scale[c] + offset[c], v[m, c], tau, v_threshold)
                z[t, m, c] = alpha * (h - v_threshold)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def bn_lif_backward(z, sig, grad_spikes, grad_v, y, mean, invstd, gamma, tau, alpha, grad_y, grad_gamma, grad_beta):  # type: ignore[no-untyped-def]
    """dL/dy into grad_y [T, M, C] (dL/dBN first, then BN's backward in place), dL/dgamma and dL/dbeta [C];
    grad_v [M, C]: dL/dV of the last step in. sig = sigmoid(z), computed by torch (vectorised)."""
    steps, rows, chans = y.shape
    mu, istd = mean.astype(y.dtype), invstd.astype(y.dtype)
    total, dot = np.zeros(chans), np.zeros(chans)
    for t in range(steps - 1, -1, -1):
        for m in range(rows):
            for c in range(chans):
                g, grad_v[m, c] = bptt(grad_spikes[t, m, c], sig[t, m, c], z[t, m, c], grad_v[m, c], tau, alpha)
                grad_y[t, m, c] = g
                total[c] += g
                dot[c] += g * ((y[t, m, c] - mu[c]) * istd[c])
    n = steps * rows
    gain, centre, slope = np.empty(chans, y.dtype), np.empty(chans, y.dtype), np.empty(chans, y.dtype)
    for c in range(chans):
        grad_beta[c], grad_gamma[c] = total[c], dot[c]
        k = gamma[c] * invstd[c]
        gain[c], centre[c], slope[c] = k, k * total[c] / n, k * dot[c] / n * invstd[c]
    for t in range(steps):
        for m in range(rows):
            for c in range(chans):
                grad_y[t, m, c] = gain[c] * grad_y[t, m, c] - centre[c] - slope[c] * (y[t, m, c] - mu[c])
