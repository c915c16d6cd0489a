"""Streaming statistics of token features and attention maps, accumulated batch by batch (so ImageNet-size
maps never have to be held for all images at once). Inputs are torch tensors; results are plain numbers.

CosineStats     pairwise cosine similarity of the tokens of each image (seed 002 Fig. 1)
HeadCorrStats   Pearson correlation between the attention maps of the heads (seed 000 Sec. 5.4)
LocalityStats   attention mass by Manhattan distance on the token grid and normalised entropy (seed 004)
"""

from __future__ import annotations

import math

import numpy as np
import torch

COS_BINS = np.linspace(-1.0, 1.0, 101)
LOCAL_RADIUS = 5  # seed 004: mass within Manhattan distance <= 5


class CosineStats:
    """Histogram over all token pairs i < j of the same image. Tokens with an all-zero feature (a spiking
    token that never fired) have no direction: their pairs are left out and counted as ``silent``."""

    def __init__(self) -> None:
        self.hist = np.zeros(len(COS_BINS) - 1, dtype=np.int64)
        self.sum = 0.0
        self.pairs = 0
        self.tokens = 0
        self.silent = 0

    def update(self, feats: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        """feats: [B, N, D]; valid: [B, N] bool, tokens to include (default all; e.g. no padding)."""
        f = feats.double()
        norm = f.norm(dim=-1)
        valid = torch.ones_like(norm, dtype=torch.bool) if valid is None else valid.bool()
        alive = (norm > 0) & valid
        self.tokens += int(valid.sum())
        self.silent += int((valid & ~alive).sum())
        u = f / norm.clamp_min(1e-30)[..., None]
        cos = (u @ u.transpose(-1, -2)).clamp(-1, 1)
        n = feats.shape[1]
        iu = torch.triu_indices(n, n, offset=1)
        vals = cos[:, iu[0], iu[1]]
        keep = alive[:, iu[0]] & alive[:, iu[1]]
        vals = vals[keep].numpy()
        self.hist += np.histogram(vals, bins=COS_BINS)[0]
        self.sum += float(vals.sum())
        self.pairs += int(vals.size)

    def result(self) -> dict:
        centers = (COS_BINS[:-1] + COS_BINS[1:]) / 2
        share = lambda lo: float(self.hist[centers >= lo].sum() / self.pairs) if self.pairs else float("nan")  # noqa: E731
        return {
            "pairs": self.pairs,
            "mean": self.sum / self.pairs if self.pairs else float("nan"),
            "share_ge_0.9": share(0.9),
            "share_ge_0.99": share(0.99),
            "silent_token_share": self.silent / self.tokens if self.tokens else float("nan"),
            "hist": self.hist.tolist(),
            "bin_edges": COS_BINS.round(4).tolist(),
        }


class HeadCorrStats:
    """Correlation between heads h, g of the flattened maps a_h = A[:, h] (all images, queries, keys),
    from running first and second moments (float64)."""

    def __init__(self) -> None:
        self.n = 0
        self.s1: torch.Tensor | None = None
        self.s2: torch.Tensor | None = None

    def update(self, maps: torch.Tensor) -> None:
        """maps: [B, H, N, N]."""
        a = maps.double().transpose(0, 1).reshape(maps.shape[1], -1)  # [H, B*N*N]
        if self.s1 is None or self.s2 is None:  # the first batch gives the number of heads
            self.s1 = torch.zeros(a.shape[0], dtype=torch.float64)
            self.s2 = torch.zeros(a.shape[0], a.shape[0], dtype=torch.float64)
        self.n += a.shape[1]
        self.s1 += a.sum(1)
        self.s2 += a @ a.T

    def matrix(self) -> np.ndarray:
        if self.s1 is None or self.s2 is None:
            raise ValueError("HeadCorrStats: no attention maps were added (update() before matrix())")
        mean = self.s1 / self.n
        cov = self.s2 / self.n - torch.outer(mean, mean)
        std = cov.diagonal().clamp_min(0).sqrt()
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = (cov / torch.outer(std, std)).numpy()
        corr[~np.isfinite(corr)] = np.nan  # a constant head (e.g. one that never fires)
        return corr

    def result(self) -> dict:
        c = self.matrix()
        off = c[~np.eye(len(c), dtype=bool)]
        off = off[np.isfinite(off)]
        return {
            "matrix": c.round(5).tolist(),
            "mean_offdiag": float(off.mean()) if off.size else float("nan"),
            "max_offdiag": float(off.max()) if off.size else float("nan"),
        }


def manhattan(grid: tuple[int, int]) -> torch.Tensor:
    """[N, N] Manhattan distances between tokens in raster order on a rows x cols grid."""
    rows, cols = grid
    r = torch.arange(rows).repeat_interleave(cols)
    c = torch.arange(cols).repeat(rows)
    return (r[:, None] - r[None, :]).abs() + (c[:, None] - c[None, :]).abs()


class LocalityStats:
    """Seed 004 Fig. 2, reference/papers.md (f): each query row of a non-negative token-mixing matrix is
    normalised to sum 1, its mass binned by the Manhattan distance of query and key on the token grid,
    and averaged over rows (queries x heads x images; x layers when merged). Entropy is normalised by
    log N (1 = uniform). Rows that sum to 0 (a query that never spiked) are skipped and counted."""

    def __init__(self, grid: tuple[int, int], radius: int = LOCAL_RADIUS) -> None:
        rows, cols = grid
        self.grid, self.radius = (rows, cols), radius
        self.dist = manhattan(self.grid)
        self.max_d = int(self.dist.max())
        self.mass = torch.zeros(self.max_d + 1, dtype=torch.float64)
        self.entropy = 0.0
        self.rows = 0
        self.empty_rows = 0

    def update(self, maps: torch.Tensor) -> None:
        """maps: [..., N, N] non-negative (query rows, key columns)."""
        w = maps.double().reshape(-1, *maps.shape[-2:])
        w = w.reshape(-1, w.shape[-1])  # rows x N keys
        total = w.sum(-1)
        ok = total > 0
        self.empty_rows += int((~ok).sum())
        n = w.shape[-1]
        query = torch.arange(w.shape[0]) % n
        w, total, query = w[ok], total[ok], query[ok]
        p = w / total[:, None]
        self.rows += int(p.shape[0])
        dist = self.dist[query]  # rows x N
        self.mass += torch.zeros_like(self.mass).index_add_(0, dist.reshape(-1), p.reshape(-1))
        plogp = torch.where(p > 0, p * p.clamp_min(1e-300).log(), torch.zeros_like(p))
        self.entropy += float((-plogp.sum(-1) / math.log(n)).sum()) if n > 1 else 0.0

    def merge(self, other: LocalityStats) -> None:
        self.mass += other.mass
        self.entropy += other.entropy
        self.rows += other.rows
        self.empty_rows += other.empty_rows

    def uniform_share(self) -> float:
        """The share within the radius of a uniform row: the chance level on this grid."""
        return float((self.dist <= self.radius).double().mean())

    def result(self) -> dict:
        profile = (self.mass / max(self.rows, 1)).numpy()
        return {
            "share_within_radius": float(profile[: self.radius + 1].sum()) if self.rows else float("nan"),
            "radius": self.radius,
            "normalised_entropy": self.entropy / self.rows if self.rows else float("nan"),
            "mean_distance": float((profile * np.arange(len(profile))).sum()) if self.rows else float("nan"),
            "uniform_share_within_radius": self.uniform_share(),
            "uniform_mean_distance": float(self.dist.double().mean()),
            "uniform_mass_by_distance": (
                torch.bincount(self.dist.reshape(-1), minlength=self.max_d + 1).double() / self.dist.numel()
            )
            .numpy()
            .round(6)
            .tolist(),
            "rows": self.rows,
            "empty_rows": self.empty_rows,
            "mass_by_distance": profile.round(6).tolist(),
        }
