"""Cluster counts of points on the sphere, and the other statistics of a particle trajectory.

The rule (stated in every JSON that reports a count): two particles are linked when their cosine
similarity is >= 1 - eps; clusters are the connected components of that graph (single linkage).
Default eps = 1e-3, i.e. an angle of about 2.56 degrees. Uniformly spread particles (64 on S^2: nearest
neighbours ~25 degrees apart) are never chained together by this rule, while the clusters of the
attention dynamics contract exponentially fast, so counts are insensitive to eps within 1e-4 .. 1e-2
once clusters have formed (the JSON also carries the largest pairwise distance, which needs no threshold).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

DEFAULT_EPS = 1e-3


def cluster_rule(eps: float = DEFAULT_EPS) -> dict:
    return {
        "method": "single-linkage on cosine similarity",
        "link": f"cos(x_i, x_j) >= 1 - eps, eps = {eps:g} (angle <= {np.degrees(np.arccos(1 - eps)):.3g} deg)",
        "eps": eps,
    }


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def cluster_labels(x: np.ndarray, eps: float = DEFAULT_EPS) -> tuple[int, np.ndarray]:
    """(number of clusters, label per point) for points ``[n, d]`` (any nonzero norm)."""
    u = _unit(np.asarray(x, dtype=np.float64))
    linked = (u @ u.T) >= 1.0 - eps
    count, labels = connected_components(linked, directed=False)
    return int(count), labels


def count_clusters(x: np.ndarray, eps: float = DEFAULT_EPS) -> int:
    return cluster_labels(x, eps)[0]


def max_pairwise_distance(x: np.ndarray) -> float:
    """Largest Euclidean (chord) distance between two points, in [0, 2] on the unit sphere."""
    u = _unit(np.asarray(x, dtype=np.float64))
    cos = np.clip(u @ u.T, -1.0, 1.0)
    return float(np.sqrt(max(0.0, 2.0 - 2.0 * cos.min())))


def polar_order(x: np.ndarray) -> float:
    """|mean of the unit vectors|: 1 for a single cluster, ~0 for uniform or balanced antipodal clusters."""
    return float(np.linalg.norm(_unit(x).mean(0)))


def axial_order(x: np.ndarray) -> float:
    """Top eigenvalue of (1/n) sum x x^T: 1 when all points lie on one axis (one cluster, or clusters on
    opposite sides), 1/d for an isotropic spread. With polar_order ~0 it flags antipodal clusters."""
    u = _unit(x)
    return float(np.linalg.eigvalsh(u.T @ u / len(u))[-1])


def trajectory_stats(t: np.ndarray, x: np.ndarray, eps: float = DEFAULT_EPS) -> dict:
    """Per recorded time: number of clusters, largest pairwise distance, polar and axial order; plus the
    first token's role (for causal attention, the candidate leader): mean cosine of the other tokens to
    token 0 and the share of tokens in token 0's cluster."""
    counts, diam, polar, axial, lead_cos, lead_share = [], [], [], [], [], []
    for xs in x:
        count, labels = cluster_labels(xs, eps)
        counts.append(count)
        diam.append(max_pairwise_distance(xs))
        polar.append(polar_order(xs))
        axial.append(axial_order(xs))
        u = _unit(xs)
        lead_cos.append(float((u[1:] @ u[0]).mean()) if len(u) > 1 else 1.0)
        lead_share.append(float(np.mean(labels == labels[0])))
    final_count, final_labels = cluster_labels(x[-1], eps)
    sizes = np.bincount(final_labels)
    order = np.argsort(-sizes, kind="stable")
    centers = [_unit(x[-1][final_labels == c].mean(0)) for c in order]
    return {
        "rule": cluster_rule(eps),
        "times": np.round(t, 10).tolist(),
        "cluster_counts": counts,
        "max_pairwise_distance": diam,
        "polar_order": polar,
        "axial_order": axial,
        "first_token": {
            "mean_cos_to_others": lead_cos,
            "share_in_its_cluster": lead_share,
            "displacement_from_start": float(np.linalg.norm(x[-1, 0] - x[0, 0])),
            "final_cos_to_its_start": float(_unit(x[-1, 0]) @ _unit(x[0, 0])),
        },
        "final": {
            "t": float(t[-1]),
            "clusters": final_count,
            "sizes": sizes[order].tolist(),
            "centers": [c.tolist() for c in centers],
            "cos_between_two_largest": float(centers[0] @ centers[1]) if final_count > 1 else None,
            "max_pairwise_distance": diam[-1],
            "polar_order": polar[-1],
            "axial_order": axial[-1],
        },
    }


def counts_at(stats: dict, times: list[float]) -> dict[str, int]:
    """Cluster counts at the recorded times nearest to ``times`` (keys formatted as 't=..')."""
    t = np.asarray(stats["times"])
    return {f"t={tt:g}": int(stats["cluster_counts"][int(np.argmin(np.abs(t - tt)))]) for tt in times}
