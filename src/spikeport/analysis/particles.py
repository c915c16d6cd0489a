"""Tokens as interacting particles on the unit sphere S^{d-1} (numpy only).

Three vector fields, each projected to the tangent space ``P_x(v) = v - <x, v>/|x|^2 x``:

``self``   seed 000 Eq. 5 / seed 002:  x_i' = P_{x_i}( sum_j w_ij V x_j ),  w_ij = softmax_j(beta <Q x_i, K x_j>)
``causal`` seed 002 Eq. 3: the same with j <= i only; token 0 sees itself alone and moves by P_x(V x)
``ssa``    seed 000 Eq. 9:  x_i' = P_{x_i}( sigma_tau( sum_j w_ij V x_j ) ),
           sigma_tau(u) = 1 / (1 + exp(-tau (u - v_threshold))) elementwise: the sigmoid surrogate of the LIF
           neuron that fires on the aggregated values (Spikformer's attention neuron, threshold 0.5)

Integration is explicit (Euler, as in the papers' code, or classic RK4) with ``dt``; after every step each
particle is renormalised to the sphere, so round-off never drifts it off (the projection alone keeps it
there only to first order in dt).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from spikeport.atomic import atomic_write
from spikeport.errors import ConfigError, DataError, unknown_choice

DYNAMICS = ("self", "causal", "ssa")
VALUES = ("identity", "neg-eig")  # or a path to a d x d .npy
QKS = ("identity", "random")  # or a path to a .npz with arrays Q and K
METHODS = ("euler", "rk4")


@dataclass
class ParticleConfig:
    dynamics: str = "self"  # one of DYNAMICS
    n: int = 64  # particles (tokens)
    d: int = 3  # ambient dimension: particles live on S^{d-1}
    beta: float = 1.0  # inverse temperature in exp(beta <Q x, K y>)
    tau: float = 2.0  # ssa only: steepness of the sigmoid surrogate sigma_tau
    v_threshold: float = 0.5  # ssa only: sigma_tau's threshold (Spikformer attn_lif: 0.5)
    value: str = "identity"  # V: identity | neg-eig (eigenvalues linspace(-1, -2, d)) | PATH.npy
    qk: str = "identity"  # Q, K: identity (Q^T K = I) | random (N(0, 1/d), seeded) | PATH.npz
    t_end: float = 15.0  # horizon
    dt: float = 0.1  # step of the explicit scheme
    method: str = "euler"  # euler | rk4
    seed: int = 0  # initial positions (uniform on the sphere) and random Q, K

    def __post_init__(self) -> None:
        if self.dynamics not in DYNAMICS:
            raise unknown_choice("dynamics", self.dynamics, DYNAMICS)
        if self.method not in METHODS:
            raise unknown_choice("integration method", self.method, METHODS)
        if self.n < 1 or self.d < 2:
            raise ConfigError(f"need n >= 1 particles and dimension d >= 2 (got n={self.n}, d={self.d})")
        if not (self.dt > 0 and self.t_end > 0):
            raise ConfigError(f"dt and t_end must be positive (got dt={self.dt}, t_end={self.t_end})")
        if self.dynamics == "ssa" and not self.tau > 0:
            raise ConfigError(f"tau must be positive for ssa dynamics (got {self.tau})")

    @property
    def steps(self) -> int:
        return int(round(self.t_end / self.dt))

    def to_dict(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        """A one-line description for figure titles (which dynamics and method produced the figure)."""
        extra = f", tau={self.tau:g}, v_th={self.v_threshold:g}" if self.dynamics == "ssa" else ""
        return (
            f"{self.dynamics} attention, beta={self.beta:g}{extra}, V={Path(self.value).name}, "
            f"QK={Path(self.qk).name}, n={self.n}, d={self.d}, {self.method} dt={self.dt:g}, seed={self.seed}"
        )


@dataclass
class ParticleRun:
    config: ParticleConfig
    t: np.ndarray  # [S] times, t[0] = 0
    x: np.ndarray  # [S, n, d] positions on the sphere
    V: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    wall_time_s: float

    def index_at(self, t: float) -> int:
        if t < -1e-12 or t > self.t[-1] + 1e-9:
            raise ConfigError(f"snapshot time {t:g} is outside the simulated horizon [0, {self.t[-1]:g}]")
        return int(np.argmin(np.abs(self.t - t)))


# --------------------------------------------------------------------------------------------- matrices
def neg_eig_value(d: int) -> np.ndarray:
    """A value matrix whose top eigenvalue is negative and simple: diag(linspace(-1, -2, d)).
    The self term P_x(V x) pulls each token to +-e_1 (the top eigenvector), the others push apart."""
    return np.diag(np.linspace(-1.0, -2.0, d))


def _load_npy(path: str, what: str, shape: tuple[int, int]) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file; expected a {shape[0]}x{shape[1]} {what} matrix (.npy)")
    try:
        arr = np.load(p, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise DataError(f"{p}: not a readable .npy array ({err})") from None
    if arr.shape != shape or not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
        raise DataError(
            f"{p}: expected a finite {shape[0]}x{shape[1]} {what} matrix, found shape {arr.shape} dtype {arr.dtype}"
        )
    return arr.astype(np.float64)


def value_matrix(spec: str, d: int) -> np.ndarray:
    if spec == "identity":
        return np.eye(d)
    if spec == "neg-eig":
        return neg_eig_value(d)
    if spec.endswith(".npy"):
        return _load_npy(spec, "value", (d, d))
    raise unknown_choice("value matrix", spec, (*VALUES, "PATH.npy"))


def query_key(spec: str, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if spec == "identity":
        return np.eye(d), np.eye(d)
    if spec == "random":
        rng = np.random.default_rng([seed, 1])  # a stream apart from the initial positions
        return rng.normal(0, d**-0.5, (d, d)), rng.normal(0, d**-0.5, (d, d))
    if spec.endswith(".npz"):
        p = Path(spec)
        if not p.is_file():
            raise DataError(f"{p}: no such file; expected a .npz with {d}x{d} arrays 'Q' and 'K'")
        with np.load(p, allow_pickle=False) as z:
            missing = [k for k in ("Q", "K") if k not in z]
            if missing or any(z[k].shape != (d, d) for k in ("Q", "K")):
                raise DataError(
                    f"{p}: expected arrays 'Q' and 'K' of shape ({d}, {d}); found { {k: z[k].shape for k in z.files} }"
                )
            return z["Q"].astype(np.float64), z["K"].astype(np.float64)
    raise unknown_choice("query/key matrices", spec, (*QKS, "PATH.npz"))


def uniform_on_sphere(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# --------------------------------------------------------------------------------------------- dynamics
def tangent(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """P_x(v) = v - <x, v> / |x|^2 x, row by row."""
    return v - (np.sum(x * v, axis=1, keepdims=True) / np.sum(x * x, axis=1, keepdims=True)) * x


def attention_weights(x: np.ndarray, Q: np.ndarray, K: np.ndarray, beta: float, causal: bool) -> np.ndarray:
    """w_ij = exp(beta <Q x_i, K x_j>) / Z_i over the visible j (all, or j <= i)."""
    scores = beta * (x @ Q.T) @ (x @ K.T).T
    if causal:
        scores = np.where(np.tri(len(x), dtype=bool), scores, -np.inf)
    scores -= scores.max(axis=1, keepdims=True)
    w = np.exp(scores)
    return w / w.sum(axis=1, keepdims=True)


def sigma_tau(u: np.ndarray, tau: float, v_threshold: float) -> np.ndarray:
    """Sigmoid surrogate of the LIF firing function (seed 000 Eq. 9)."""
    return 0.5 * (1.0 + np.tanh(0.5 * tau * (u - v_threshold)))  # = 1/(1+exp(-tau(u-v))), overflow-free


def velocity(x: np.ndarray, cfg: ParticleConfig, V: np.ndarray, Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    w = attention_weights(x, Q, K, cfg.beta, causal=cfg.dynamics == "causal")
    field = w @ (x @ V.T)
    if cfg.dynamics == "ssa":
        field = sigma_tau(field, cfg.tau, cfg.v_threshold)
    return tangent(x, field)


def _renormalise(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def simulate(cfg: ParticleConfig, x0: np.ndarray | None = None) -> ParticleRun:
    """Integrate the particle system from ``x0`` (default: uniform on the sphere, seeded) to ``t_end``."""
    V = value_matrix(cfg.value, cfg.d)
    Q, K = query_key(cfg.qk, cfg.d, cfg.seed)
    if x0 is None:
        x = uniform_on_sphere(cfg.n, cfg.d, cfg.seed)
    else:
        x = np.asarray(x0, dtype=np.float64)
        if x.shape != (cfg.n, cfg.d) or not np.all(np.linalg.norm(x, axis=1) > 0):
            raise ConfigError(f"initial positions: expected {cfg.n}x{cfg.d} nonzero rows, found {x.shape}")
        x = _renormalise(x)
    f = lambda y: velocity(y, cfg, V, Q, K)  # noqa: E731
    h = cfg.dt
    traj = np.empty((cfg.steps + 1, cfg.n, cfg.d))
    traj[0] = x
    t0 = time.perf_counter()
    for s in range(cfg.steps):
        if cfg.method == "euler":
            x = x + h * f(x)
        else:
            k1 = f(x)
            k2 = f(x + 0.5 * h * k1)
            k3 = f(x + 0.5 * h * k2)
            k4 = f(x + h * k3)
            x = x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        x = _renormalise(x)
        traj[s + 1] = x
    wall = time.perf_counter() - t0
    return ParticleRun(cfg, np.arange(cfg.steps + 1) * h, traj, V, Q, K, wall)


def save_trajectories(run: ParticleRun, path: str | Path) -> Path:
    """trajectories.npz: t [S], x [S, n, d], V, Q, K and the config as JSON (atomic write)."""

    with atomic_write(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(
                fh, t=run.t, x=run.x, V=run.V, Q=run.Q, K=run.K, config=np.array(json.dumps(run.config.to_dict()))
            )
    return Path(path)
