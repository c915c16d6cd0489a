"""Particle dynamics on the sphere: invariants, the causal leader, the mean-field limit, the cluster rule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spikeport.analysis.clusters import (
    axial_order,
    cluster_labels,
    count_clusters,
    max_pairwise_distance,
    polar_order,
    trajectory_stats,
)
from spikeport.analysis.particles import (
    ParticleConfig,
    neg_eig_value,
    sigma_tau,
    simulate,
    tangent,
    uniform_on_sphere,
    velocity,
)
from spikeport.errors import ConfigError, DataError


@pytest.mark.parametrize("dynamics", ["self", "causal", "ssa"])
@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_particles_stay_on_the_sphere_and_move_tangentially(dynamics, method):
    cfg = ParticleConfig(
        dynamics=dynamics, method=method, n=20, d=4, beta=3.0, value="neg-eig", qk="random", t_end=3.0, dt=0.05, seed=3
    )
    run = simulate(cfg)
    assert run.x.shape == (61, 20, 4)
    np.testing.assert_allclose(np.linalg.norm(run.x, axis=-1), 1.0, atol=1e-12)
    v = velocity(run.x[10], cfg, run.V, run.Q, run.K)
    np.testing.assert_allclose(np.sum(v * run.x[10], axis=1), 0.0, atol=1e-12)
    assert np.abs(v).max() > 1e-3  # they do move


def test_tangent_projection_handles_non_unit_points():
    x = np.array([[2.0, 0.0, 0.0]])
    np.testing.assert_allclose(tangent(x, np.array([[3.0, 1.0, -1.0]])), [[0.0, 1.0, -1.0]])


@pytest.mark.parametrize("value", ["identity", "neg-eig"])
def test_causal_first_token_ignores_the_others(value):
    cfg = ParticleConfig(dynamics="causal", n=16, d=3, beta=2.0, value=value, t_end=4.0, dt=0.05)
    x0 = uniform_on_sphere(16, 3, seed=1)
    other = x0.copy()
    other[1:] = uniform_on_sphere(15, 3, seed=2)
    a, b = simulate(cfg, x0), simulate(cfg, other)
    np.testing.assert_array_equal(a.x[:, 0], b.x[:, 0])
    assert np.abs(a.x[-1, 1:] - b.x[-1, 1:]).max() > 0.1  # the others did change
    alone = simulate(ParticleConfig(dynamics="self", n=1, d=3, value=value, t_end=4.0, dt=0.05), x0[:1])
    np.testing.assert_allclose(a.x[:, 0], alone.x[:, 0], atol=1e-14)  # = the flow x' = P_x(V x)


def test_causal_first_token_flows_to_the_top_eigenvector_of_v():
    # x' = P_x(V x) is the normalised power-iteration flow: it converges to +-e1, V's top eigenvector
    cfg = ParticleConfig(dynamics="causal", n=8, d=3, value="neg-eig", t_end=40.0, dt=0.1, seed=4)
    run = simulate(cfg)
    assert abs(run.x[-1, 0, 0]) > 0.999
    assert np.linalg.eigvalsh(neg_eig_value(3)).max() == pytest.approx(-1.0)


def test_identity_v_and_beta_to_zero_is_the_mean_field_flow():
    n, d = 40, 3
    x0 = uniform_on_sphere(n, d, seed=5)
    run = simulate(ParticleConfig(dynamics="self", n=n, d=d, beta=1e-9, t_end=2.0, dt=0.01), x0)
    # independent integration of x_i' = P_{x_i}(mean_j x_j), the beta = 0 (uniform attention) limit
    x = x0.copy()
    for _ in range(200):
        m = x.mean(0)
        x = x + 0.01 * (m - (x @ m)[:, None] * x)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(run.x[-1], x, atol=1e-6)


def test_mean_field_limit_is_deterministic_in_the_number_of_particles():
    # an anisotropic initial law (normalised N(e3, I)): its empirical measure's evolution must not depend on
    # the sample as n grows; compare the polar order of two independent samples of 3000 particles
    def polar_curve(seed):
        rng = np.random.default_rng(seed)
        x0 = rng.standard_normal((3000, 3)) + np.array([0, 0, 1.0])
        run = simulate(ParticleConfig(dynamics="self", n=3000, d=3, beta=1e-6, t_end=3.0, dt=0.1), x0)
        return np.array([polar_order(x) for x in run.x])

    a, b = polar_curve(10), polar_curve(11)
    assert a[-1] > a[0] + 0.2  # the measure concentrates
    np.testing.assert_allclose(a, b, atol=0.03)


def test_self_attention_is_permutation_equivariant():
    cfg = ParticleConfig(dynamics="self", n=12, d=3, beta=2.0, qk="random", value="neg-eig", t_end=2.0)
    x0 = uniform_on_sphere(12, 3, seed=6)
    perm = np.random.default_rng(0).permutation(12)
    np.testing.assert_allclose(simulate(cfg, x0[perm]).x[-1], simulate(cfg, x0).x[-1][perm], atol=1e-12)


def test_sigma_tau_is_the_lif_surrogate():
    assert sigma_tau(np.array(0.5), 2.0, 0.5) == pytest.approx(0.5)
    assert sigma_tau(np.array(0.7), 1e4, 0.5) == pytest.approx(1.0)
    assert sigma_tau(np.array(0.3), 1e4, 0.5) == pytest.approx(0.0)
    assert sigma_tau(np.array(0.9), 2.0, 0.5) == pytest.approx(1 / (1 + np.exp(-0.8)))


def test_identity_beta_one_merges_into_one_cluster():
    stats = trajectory_stats(*(lambda r: (r.t, r.x))(simulate(ParticleConfig())))
    assert stats["cluster_counts"][0] > 50 and stats["final"]["clusters"] == 1
    assert stats["final"]["max_pairwise_distance"] < 1e-3


# ------------------------------------------------------------------------------------ the cluster rule
def _blob(center, k, spread, rng):
    c = np.asarray(center, float) / np.linalg.norm(center)
    return c + spread * rng.standard_normal((k, len(c)))


def test_cluster_count_on_constructed_configurations():
    rng = np.random.default_rng(0)
    three = np.vstack([_blob(e, 10, 1e-3, rng) for e in np.eye(3)])
    count, labels = cluster_labels(three)
    assert count == 3 and sorted(np.bincount(labels)) == [10, 10, 10]
    assert count_clusters(np.vstack([_blob([1, 0, 0], 5, 1e-3, rng), _blob([-1, 0, 0], 7, 1e-3, rng)])) == 2
    assert count_clusters(np.eye(4)) == 4  # orthogonal points: all apart
    # 2 degrees apart: linked by the default eps (2.56 deg) but not by eps=1e-4 (0.81 deg)
    pair = np.array([[1.0, 0.0], [np.cos(np.radians(2)), np.sin(np.radians(2))]])
    assert count_clusters(pair) == 1 and count_clusters(pair, eps=1e-4) == 2
    # single linkage chains: 1-degree steps along an arc of 60 degrees form one cluster
    arc = np.radians(np.arange(0, 61))
    assert count_clusters(np.stack([np.cos(arc), np.sin(arc)], 1)) == 1
    assert count_clusters(uniform_on_sphere(16, 3, seed=0)) == 16


def test_distance_and_order_parameters():
    antipodal = np.array([[1.0, 0, 0]] * 5 + [[-1.0, 0, 0]] * 5)
    assert max_pairwise_distance(antipodal) == pytest.approx(2.0)
    assert polar_order(antipodal) == pytest.approx(0.0) and axial_order(antipodal) == pytest.approx(1.0)
    assert axial_order(np.eye(3)) == pytest.approx(1 / 3)
    assert max_pairwise_distance(np.ones((4, 3))) == pytest.approx(0.0, abs=1e-7)


# ------------------------------------------------------------------------------------ bad input, outputs
def test_bad_inputs_raise_typed_errors(tmp_path):
    with pytest.raises(ConfigError, match="dynamics"):
        ParticleConfig(dynamics="softmax")
    with pytest.raises(DataError, match="no such file"):
        simulate(ParticleConfig(value=str(tmp_path / "missing.npy")))
    np.save(tmp_path / "v.npy", np.eye(2))
    with pytest.raises(DataError, match=r"3x3 value matrix"):
        simulate(ParticleConfig(value=str(tmp_path / "v.npy")))
    with pytest.raises(ConfigError, match="value matrix"):
        simulate(ParticleConfig(value="positive"))
    with pytest.raises(ConfigError, match="outside"):
        simulate(ParticleConfig(t_end=1.0)).index_at(2.0)


def test_user_value_matrix_is_used(tmp_path):
    np.save(tmp_path / "v.npy", -np.eye(3))
    run = simulate(ParticleConfig(value=str(tmp_path / "v.npy"), t_end=1.0))
    np.testing.assert_array_equal(run.V, -np.eye(3))


def test_cli_particles_and_sweep_write_their_outputs(tmp_path):
    from spikeport.cli import main

    out = tmp_path / "causal"
    assert (
        main(
            [
                "simulate",
                "particles",
                "--dynamics",
                "causal",
                "--value",
                "neg-eig",
                "--d",
                "2",
                "--n",
                "8",
                "--t-end",
                "1",
                "--snapshots",
                "0,0.5,1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    for name in ("trajectories.npz", "snapshots.png", "clusters.png", "animation.gif", "clusters.json"):
        assert (out / name).stat().st_size > 0, name
    res = json.loads((out / "clusters.json").read_text())
    assert res["schema"] == "spikeport.particles" and res["schema_version"] == 1
    assert res["rule"]["eps"] == 1e-3 and len(res["cluster_counts"]) == len(res["times"]) == 11
    assert set(res["counts_at_snapshots"]) == {"t=0", "t=0.5", "t=1"}
    with np.load(out / "trajectories.npz") as z:
        assert z["x"].shape == (11, 8, 2) and json.loads(str(z["config"]))["dynamics"] == "causal"
    grid = tmp_path / "grid"
    assert (
        main(["simulate", "sweep", "--beta", "0.5,2", "--tau", "1,4", "--n", "8", "--t-end", "1", "--out", str(grid)])
        == 0
    )
    sweep = json.loads((grid / "sweep.json").read_text())
    assert len(sweep["cells"]) == 4 and (grid / "sweep.png").stat().st_size > 0
    assert main(["simulate", "particles", "--snapshots", "0,99", "--t-end", "1", "--out", str(tmp_path / "x")]) == 2
