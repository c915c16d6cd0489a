"""NIR export: the LIF mapping, the parts and the report, the file round trip, and norse parity."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import ATTENTIONS, random_images
from spikeport.errors import ConversionError
from test_export_onnx import active_model, vit_model


@pytest.fixture(autouse=True)
def one_thread():
    """2 cores shared by `pytest -n 2` workers: more threads than cores makes these small ops 10x slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def lif_graph(tau: float, v_threshold: float, n: int, dt: float, naive_threshold: bool = False):
    import nir

    from spikeport.exports.nir import lif_node

    lif = lif_node(tau, v_threshold, (n,), dt)
    if naive_threshold:
        lif.v_threshold = np.full((n,), v_threshold, np.float32)
    return nir.NIRGraph.from_list(lif)


def currents(tau: float, v_threshold: float, steps: int = 12, n: int = 4000, seed: int = 0) -> torch.Tensor:
    """Random input currents, plus columns whose membrane hits the threshold exactly at t=0
    (x = tau * v_th from v = 0 gives h = v_th), where '>=' and '>' disagree."""
    x = torch.randn(steps, 1, n, generator=torch.Generator().manual_seed(seed)) * 1.5 + 0.8
    x[0, 0, : n // 8] = tau * v_threshold
    return x


@pytest.mark.parametrize(
    "tau,v_threshold,dt", [(2.0, 1.0, 1e-3), (2.0, 0.5, 1e-3), (4.0, 1.0, 1.0), (2.0, 1.0, 2.5e-4)]
)
def test_lif_mapping_is_bit_exact(tau, v_threshold, dt):
    """norse's Euler step of the exported NIR LIF == SpikingJelly's discrete LIF: spikes and membranes."""
    from spikingjelly.activation_based import functional as sjf

    from spikeport.exports.nir import euler_step_exact
    from spikeport.exports.nir_check import load_part_with_norse, run_norse
    from spikeport.train.neurons import TorchLIF, make_lif

    x = currents(tau, v_threshold)
    norse_lif = load_part_with_norse(lif_graph(tau, v_threshold, x.shape[-1], dt), dt)
    z, _ = run_norse(norse_lif, x)
    with torch.no_grad():
        ref_torch = TorchLIF(tau, v_threshold)
        s_torch = ref_torch(x)
        sj = make_lif(v_threshold, tau, "spikingjelly")
        s_sj = sj(x)
    assert euler_step_exact(tau, dt)
    assert s_torch[0, 0, :500].all()  # the exact-threshold hits fire in SpikingJelly
    assert torch.equal(z, s_torch) and torch.equal(z, s_sj)
    # membranes: run norse step by step and compare the final state bit for bit
    state, v = None, None
    with torch.no_grad():
        for xt in x:
            _, state = norse_lif(xt, state)
    v = next(s for k, s in state.state.items() if k.startswith("lif"))[0].v
    assert torch.equal(v, ref_torch.v)
    sjf.reset_net(sj)


def test_naive_threshold_misses_spikes_exactly_at_threshold():
    """Why v_threshold is the float32 predecessor: NIR (and norse) fire on v > v_threshold."""
    from spikeport.exports.nir_check import load_part_with_norse, run_norse
    from spikeport.train.neurons import TorchLIF

    x = currents(2.0, 1.0)
    z_naive, _ = run_norse(load_part_with_norse(lif_graph(2.0, 1.0, x.shape[-1], 1e-3, naive_threshold=True)), x)
    with torch.no_grad():
        ref = TorchLIF(2.0, 1.0)(x)
    assert not z_naive[0, 0, :500].any() and ref[0, 0, :500].all()


def test_euler_exactness_is_reported_per_tau():
    from spikeport.exports.nir import euler_step_exact, nir_threshold

    assert euler_step_exact(2.0, 1e-3) and euler_step_exact(0.5, 1.0)
    assert not euler_step_exact(3.0, 1e-3)  # 1/3 is not a float: ~1 ulp per step
    assert nir_threshold(1.0) < np.float32(1.0) and np.nextafter(nir_threshold(1.0), np.float32(2)) == 1.0


def test_parts_and_report_for_digits_tiny():
    import nir

    from spikeport.exports.nir import build_nir

    export = build_nir(active_model("lrf_dyn"))
    assert list(export.parts) == ["patch_embed", "block_0_mlp", "block_1_mlp", "head"]
    stem = export.parts["patch_embed"].graph
    assert sum(isinstance(n, nir.Conv2d) for n in stem.nodes.values()) == 5
    assert sum(isinstance(n, nir.LIF) for n in stem.nodes.values()) == 5
    assert ("proj_lif3", "output") in stem.edges and ("rpe_lif", "output") in stem.edges  # the RPE residual
    mlp = export.parts["block_0_mlp"].graph
    assert isinstance(mlp.nodes["fc1_linear"], nir.Affine) and ("input", "output") in mlp.edges
    lif = mlp.nodes["fc1_lif"]
    np.testing.assert_array_equal(lif.tau, np.float32(2e-3))
    assert (lif.r == 1).all() and (lif.v_leak == 0).all() and (lif.v_reset == 0).all()
    head = export.parts["head"].graph.nodes["head"]
    assert head.weight.shape == (10, 64 * 64)  # tokens flattened (N * D)
    left = {d["node"]: d for d in export.report["not_expressed"]}
    assert set(left) == {"block.0.attn", "block.1.attn"}
    assert "dendritic" in left["block.0.attn"]["op"] and "product" in left["block.0.attn"]["reason"]
    assert "block.0.attn.dendrites" in left["block.0.attn"]["ir_nodes"]
    assert export.report["lif_mapping"]["bit_exact_euler"] == {"2.0": True}
    json.dumps(export.report)  # JSON-serialisable as is


def test_maxpool_splits_the_stem_and_is_listed():
    from spikeport.exports.nir import build_nir
    from spikeport.exports.nir_check import check_parts

    model = active_model("ssa", img_size=16, pool_stages=(2, 3))
    export = build_nir(model)
    assert [p for p in export.parts if p.startswith("patch_embed")] == [
        "patch_embed_s0",
        "patch_embed_s1",
        "patch_embed_s2",
    ]
    assert export.parts["patch_embed_s1"].input_from == "patch_embed.maxpool2"
    pools = [d for d in export.report["not_expressed"] if d["op"] == "maxpool"]
    assert [d["node"] for d in pools] == ["patch_embed.maxpool2", "patch_embed.maxpool3"]
    parity = check_parts(model, export, random_images(4, shape=(1, 16, 16)))
    assert parity["bn_folded"]["spikes_identical"], parity["bn_folded"]


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_norse_reproduces_the_torch_spikes(attention, tmp_path):
    """Every part, loaded by norse.torch.from_nir: identical spikes to the BN-folded torch model; against
    the model as trained, only rounding-level flips (BN folded into W reassociates the float sum)."""
    from spikeport.exports.nir import export_nir

    model = active_model(attention, backend="spikingjelly")
    export = export_nir(model, tmp_path / "model.nir", check_images=random_images(8, seed=3))
    parity = export.report["parity"]
    folded, trained = parity["bn_folded"], parity["float_model"]
    assert folded["spikes_identical"], folded
    assert folded["lif_outputs_compared"] > 1_000_000
    assert trained["spike_mismatches"] <= 1e-4 * trained["lif_outputs_compared"], trained
    for p in (folded, trained):
        assert p["parts"]["head"]["argmax_agreement"] == 1.0 and p["parts"]["head"]["logits_max_abs_diff"] < 1e-4
    stored = json.loads((tmp_path / "model.nir.json").read_text())
    assert stored["parity"]["bn_folded"]["spikes_identical"] and stored["schema"] == "spikeport.nir_export"


def test_file_round_trip_and_norse_on_the_read_back_graph(tmp_path):
    from dataclasses import replace

    import nir

    from spikeport.exports.nir import export_nir
    from spikeport.exports.nir_check import bn_folded_copy, compare, load_part_with_norse, run_norse

    model = active_model("lrf_causal")
    path = tmp_path / "model.nir"
    path.write_bytes(b"old")  # replaced atomically
    export = export_nir(model, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.nir", "model.nir.json"]
    graph = nir.read(path)
    assert set(export.parts) <= set(graph.nodes)
    assert float(graph.metadata["dt"]) == 1e-3 and int(graph.metadata["T"]) == 4
    mlp = graph.nodes["block_1_mlp"]
    assert isinstance(mlp.nodes["fc2_lif"], nir.LIF)
    np.testing.assert_array_equal(
        mlp.nodes["fc1_linear"].weight, export.parts["block_1_mlp"].graph.nodes["fc1_linear"].weight
    )
    # every part as read back from the file, loaded by norse: the same spikes as the BN-folded torch model
    read_back = replace(export, parts={k: replace(p, graph=graph.nodes[k]) for k, p in export.parts.items()})
    parity = compare(bn_folded_copy(model, export), read_back, random_images(4, seed=5))
    assert parity["spikes_identical"] and parity["lif_outputs_compared"] > 100_000

    # the MLP sub-block alone, fed random integer spike counts (0..2, as after a residual add) over T steps
    x = torch.randint(0, 3, (4, 5, 64, 64), generator=torch.Generator().manual_seed(1)).float()
    out, spikes = run_norse(load_part_with_norse(mlp, 1e-3), x)
    folded = bn_folded_copy(model, export).block[1].mlp
    with torch.no_grad():
        ref = x + folded(x)
    assert torch.equal(out, ref) and spikes["fc2_lif"].sum() > 0


def test_refuses_models_nir_cannot_take(tmp_path):
    from spikeport.exports.nir import build_nir, export_nir

    with pytest.raises(ConversionError, match="ViT"):
        export_nir(vit_model(), tmp_path / "v.nir")
    with pytest.raises(ConversionError, match="dt"):
        build_nir(active_model("ssa"), dt=0.0)
    assert not list(tmp_path.iterdir())


def test_export_command_writes_nir_from_a_checkpoint_and_says_what_to_load(tmp_path, capsys):
    """`export --nir` was refused and the README never mentioned NIR; norse loaded the whole file and then failed
    on call: the command writes the parts, checks them in norse, and the file and the output say to load one."""
    import nir

    from conftest import spiky_model
    from spikeport.cli import main
    from spikeport.train import checkpoint as ck

    model = spiky_model("ssa")
    path = ck.save_atomic(
        {
            "format": ck.FORMAT,
            "version": ck.VERSION,
            "model": model.state_dict(),
            "epoch": 0,
            "model_config": model.cfg.to_dict(),
        },
        tmp_path / "checkpoint.pt",
    )
    assert main(["export", str(path), "--nir", str(tmp_path / "m.nir")]) == 0
    out = capsys.readouterr().out
    assert "0 spike mismatches" in out and "nodes[PART]" in out and "block_0_mlp" in out
    graph = nir.read(tmp_path / "m.nir")
    assert "does not run as one network" in graph.metadata["load"]
    assert set(graph.nodes) >= {"patch_embed", "block_0_mlp", "head"}
