"""GPU baselines: the op census against independent MAC counts and the measured allocator peak, the
roofline arithmetic, the bench report without CUDA (estimated, labelled), and CUDA measurements."""

from __future__ import annotations

import json

import pytest

from spikeport.baselines import gpu
from spikeport.errors import ConfigError
from spikeport.hw_profiles import parse_profile
from spikeport.train.presets import preset_config

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("attention", ["ssa", "lrf_ssa", "lrf_causal", "lrf_dyn"])
def test_census_flops_equal_info_macs(attention):
    """The estimate's FLOPs are 2 x (T x MACs per step + head) from train/info; for SSA the replayed
    kernels (counted from their aten shapes, another implementation) execute exactly those."""
    from spikeport.train.info import model_info

    cfg = preset_config("digits-tiny", attention=attention)
    info = model_info(cfg, "digits-tiny", None)
    head = next(layer["macs"] for layer in info["layers"] if layer["name"] == "head")
    c = gpu.census(cfg, batch=1)
    assert c.macs == info["macs_per_inference"] == cfg.T * (info["macs"] - head) + head
    assert gpu.estimate(c, "h100", "x", batch=1).flops == 2 * c.macs
    three = gpu.census(cfg, batch=3)
    assert three.macs == 3 * c.macs
    if attention in ("ssa", "lrf_ssa"):  # (the parallel dendritic form builds its kernel once per batch)
        assert sum(c.flops) == 2 * c.macs and sum(three.flops) == 3 * sum(c.flops)


def test_kernel_flops_follow_torch_flop_counter():
    """The census counts each kernel with counting's dense rules; torch's own flop formulas agree."""
    from torch.utils.flop_counter import FlopCounterMode

    from spikeport.train.models import build_model, set_inference_form

    cfg = preset_config("digits-tiny", attention="lrf_dyn", neuron_backend="torch")
    with torch.device("meta"):
        model = build_model(cfg).eval()
        images = torch.empty(2, cfg.in_channels, cfg.img_size, cfg.img_size)
    set_inference_form(model, "recurrent")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(images)
    assert sum(gpu.census(cfg, batch=2, inference_form="recurrent").flops) == counter.get_total_flops()


def test_census_vit_counterpart():
    from spikeport.baselines.gpu_bench import vit_counterpart
    from spikeport.train.info import model_info

    snn = preset_config("spikformer-8-512")
    vit = vit_counterpart(snn)
    assert (vit.arch, vit.patch_size, vit.num_tokens, vit.embed_dim, vit.depth) == ("vit", 16, 196, 512, 8)
    small = vit_counterpart(preset_config("digits-tiny"))
    assert sum(gpu.census(small).flops) == 2 * model_info(small, "vit", None)["macs"]


def test_census_peak_equals_measured_allocator_peak():
    """The meta-device replay of eager lifetimes equals torch's CPU allocator peak of the real forward."""
    from spikeport.baselines.torch_memory import measure
    from spikeport.train.models import build_model

    cfg = preset_config("digits-tiny", attention="lrf_dyn", neuron_backend="torch")
    c = gpu.census(cfg, batch=1, inference_form="recurrent")
    measured = measure(build_model(cfg), inference_form="recurrent")
    assert c.peak_bytes == measured.activation_peak
    assert c.weights_bytes == measured.weights_bytes


def _gpu_profile(launch_us=2.0):
    def e(value, unit):
        return {"value": value, "unit": unit, "source": "test", "confidence": "estimate"}

    return parse_profile(
        {
            "schema_version": 1,
            "name": "toy",
            "kind": "gpu",
            "description": "toy GPU",
            "compute": {"flops_fp32": e(10, "TFLOP/s")},
            "memory": {"bandwidth": e(1, "TB/s")},
            "power": {"tdp": e(300, "W"), "idle": e(50, "W")},
            "timing": {"kernel_launch": e(launch_us, "us")},
        }
    )


def test_roofline_arithmetic():
    # kernel 1: 1e10 FLOP -> 1e10 / (1e13 x 0.5) = 2 ms; kernel 2: 7e8 B -> 7e8 / (1e12 x 0.7) = 1 ms;
    # kernel 3: tiny -> the 2 us launch floor
    c = gpu.OpCensus([1e10, 0.0, 10.0], [1e3, 7e8, 8.0], peak_bytes=1000, weights_bytes=24, params=6)
    b = gpu.estimate(c, _gpu_profile(), "toy net", batch=2)
    t = 2e-3 + 1e-3 + 2e-6
    assert b.latency_s == pytest.approx(t)
    assert b.throughput_per_s == pytest.approx(2 / t)
    # the utilisation power model: idle 50 W for the whole call, TDP - idle = 250 W while kernels 1 and 2 run at the
    # roofline rate (3 ms of it: the 2 us launch-bound kernel does 10 FLOP in ~2e-12 s, waiting on its launch)
    busy = 3e-3 + max(10 / 5e12, 8 / 7e11)
    assert b.details["busy_s"] == pytest.approx(busy) and b.details["busy_share"] == pytest.approx(busy / t)
    assert b.energy_J == pytest.approx((50 * t + 250 * busy) / 2)
    assert b.energy_dynamic_J == pytest.approx(250 * busy / 2)
    tdp, floor = b.details["energy_tdp_J"], b.details["energy_idle_floor_J"]
    assert tdp == pytest.approx(300 * t / 2) and floor == pytest.approx(50 * t / 2) and floor < b.energy_J < tdp
    assert b.peak_memory_bytes == 1024 and b.kind == "estimated"
    assert b.label.startswith("estimated (roofline from hw profile toy")
    assert b.details["launch_bound_s"] == pytest.approx(3 * 2e-6)
    with pytest.raises(ConfigError, match="not a GPU"):
        gpu.estimate(c, "loihi2", "x", 1)


def test_bench_without_cuda_is_estimated_and_labelled(monkeypatch):
    from spikeport.baselines.gpu_bench import ONNX_TODO, bench_gpu

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    r = bench_gpu("digits-tiny", "lrf_dyn", gpus=("a100", "h100"), energy_seconds=0.1)
    json.dumps(r)
    assert r["schema"] == "spikeport.gpu_bench" and r["cuda"] is False
    est = [x for x in r["results"] if x["kind"] == "estimated"]
    assert {x["device"] for x in est} == {"a100 (profile)", "h100 (profile)"} and len(est) == 4
    assert all(x["label"].startswith("estimated") and x["energy_J"] > 0 for x in est)
    cpu = [x for x in r["results"] if x["device"] == "cpu" and x["executor"] == "torch"]
    assert len(cpu) == 2 and all(x["label"].startswith("measured (CPU") for x in cpu)
    onnx = [x for x in r["results"] if x["executor"] == "onnxruntime"]
    assert len(onnx) == 2 or ONNX_TODO in r["notes"]
    ratio = next(x for x in r["ratios"] if x["device"] == "h100 (profile)")
    assert ratio["flops_snn_over_vit"] > 1  # T = 4 steps of float "spikes" cost more than the ANN


def test_cli_json_and_bad_target(capsys):
    from spikeport.cli import main

    assert main(["bench", "gpu", "digits-tiny", "--no-onnx", "--no-vit", "--no-cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"] and out["batch"] == 1
    assert main(["bench", "gpu", "no-such-model"]) == 2
    assert "neither a preset" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: CUDA events, max_memory_allocated")
def test_bench_measured_on_cuda():
    from spikeport.baselines.gpu_bench import bench_gpu

    r = bench_gpu("digits-tiny", "ssa", include_onnx=False, cpu_anchor=False, energy_seconds=1.0)
    cuda = [x for x in r["results"] if x["device"].startswith("cuda")]
    assert len(cuda) == 2 and all(x["kind"] == "measured" and x["latency_s"] > 0 for x in cuda)
    assert all(x["peak_memory_bytes"] > 0 for x in cuda)
    try:
        import pynvml  # noqa: F401
    except ImportError:
        assert all(x["energy_label"] is None or x["energy_label"].startswith("estimated (TDP") for x in cuda)
    else:  # the driver's counter: measured, and the label the report shows says so
        assert all(x["energy_label"].startswith("measured (NVML") and x["energy_J"] > 0 for x in cuda)
        assert all("energy measured (NVML" in x["label"] for x in cuda)
        assert all(x["details"]["energy"]["duration_s"] >= 1.0 for x in cuda)


def test_gpu_energy_without_nvml_is_estimated_from_the_matching_profile(monkeypatch):
    """No pynvml (or a board without the counter): TDP of the profile the device's name names x the measured
    latency, labelled 'estimated'; a device no profile names gets no energy, with the reason."""
    import sys

    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    got = gpu.nvml_energy(lambda: None, 0.1, 1, idle_seconds=0.0)
    assert got["per_sample_J"] if "per_sample_J" in got else "pynvml is not installed" in got["why"]
    assert gpu.gpu_profile_for("NVIDIA H100 80GB HBM3").name == "h100"
    assert gpu.gpu_profile_for("NVIDIA A100-SXM4-40GB").name == "a100"
    assert gpu.gpu_profile_for("NVIDIA GeForce RTX 4090") is None
    est = gpu.tdp_energy("NVIDIA H100 80GB HBM3", 0.002, 4, (), got["why"])
    assert est["label"].startswith("estimated, upper bound (TDP of hw profile h100 x measured latency: pynvml is not")
    assert est["per_sample_J"] == pytest.approx(700 * 0.002 / 4) and est["per_sample_dynamic_J"] < est["per_sample_J"]
    assert "no GPU profile matches" in gpu.tdp_energy("RTX 4090", 0.002, 4, (), "x")["notes"][0]


def test_bench_modes_latency_and_the_best_batch_of_a_sweep():
    """`bench gpu --modes`: batch 1 (latency) and, per network and device, the batch of the sweep with the least
    energy per inference (throughput), each tagged; a report's GPU baseline reads them as the two modes."""
    from spikeport.baselines.gpu_bench import bench_gpu_modes
    from spikeport.errors import ConfigError
    from spikeport.gather.gpu import _from_bench
    from spikeport.train.presets import preset_config

    r = bench_gpu_modes("digits-tiny", (1, 16, 64), include_vit=False, include_onnx=False, cpu_anchor=False)
    by_mode = {x["mode"]: x for x in r["results"]}
    assert set(by_mode) == {"latency", "throughput"} and r["batches"] == [1, 16, 64]
    assert by_mode["latency"]["batch"] == 1 and by_mode["throughput"]["batch"] in (16, 64)
    sweep = {int(b): res[0]["energy_J"] for b, res in r["sweep"].items()}
    assert by_mode["throughput"]["energy_J"] == min(e for b, e in sweep.items() if b > 1) < sweep[1]
    found, _ = _from_bench(preset_config("digits-tiny", attention="ssa"), [r], include_vit=False)
    assert sorted(b.mode for b in found) == ["latency", "throughput"]
    with pytest.raises(ConfigError, match="need 1"):
        bench_gpu_modes("digits-tiny", (16, 64))


def test_bench_modes_exports_once_and_reports_each_batch_as_it_finishes(monkeypatch):
    """The sweep exports the ONNX file once, with a dynamic batch axis, times it at every batch, says which batch it
    is at, and hands over the result after every batch (complete only after the last), so that a file written from
    it keeps what was measured."""
    from spikeport.baselines import gpu_bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    exports, seen, lines = [], [], []
    real = gpu_bench.export_networks
    monkeypatch.setattr(gpu_bench, "export_networks", lambda *a: exports.append(1) or real(*a))
    r = gpu_bench.bench_gpu_modes(
        "digits-tiny", (1, 16), include_vit=False, cpu_anchor=False, progress=lines.append, on_result=seen.append
    )
    assert exports == [1] and [s["batches"] for s in seen] == [[1], [1, 16]]
    assert [s["complete"] for s in seen] == [False, True] and seen[-1] == r
    ort = [x for x in r["results"] if x["executor"] == "onnxruntime"]
    assert {x["mode"] for x in ort} == {"latency", "throughput"}
    assert all(x["details"]["onnx_batch"] == "dynamic" for x in ort)
    assert "batch 1 (1 of 2)" in lines and "batch 16 (2 of 2)" in lines


def test_the_cpu_anchor_skips_a_batch_past_its_time_budget():
    from spikeport.baselines.gpu_bench import BenchOptions, _CpuBudget

    budget = _CpuBudget(BenchOptions(cpu_call_budget_s=10.0))
    assert budget.skip("SNN", "torch", 16, None) is None
    budget.record("SNN", "torch", 16, 3.0)
    assert budget.skip("SNN", "torch", 32, None) is None  # ~6 s
    why = budget.skip("SNN", "torch", 64, None)  # ~12 s
    assert why and "batch 64" in why and "one call at batch 16 took 3 s" in why


def test_the_report_keeps_every_figure_of_a_baseline_in_its_order():
    """The report's baseline records (report.inputs, which may not import baselines) are baselines.gpu.Baseline's
    JSON, tagged: every figure in its order, then the tags; a figure added to one and not the other would drop out
    of the report. A bench file's result lacking figures reads them as None; an estimate keeps its idle floor."""
    from dataclasses import fields

    from spikeport.report.inputs import CpuBaseline, GpuBaseline

    assert GpuBaseline.FIGURES == CpuBaseline.FIGURES == tuple(f.name for f in fields(gpu.Baseline))
    est = gpu.estimate(gpu.census(preset_config("digits-tiny", attention="ssa"), 256), "h100", "SNN ssa (float)", 256)
    b = GpuBaseline.of(est.to_dict(), "snn", "estimated here")
    assert b.to_dict() == {**est.to_dict(), "network": "snn", "source": "estimated here", "mode": "throughput"}
    assert list(b.to_dict())[-3:] == ["network", "source", "mode"]
    assert b.idle_floor_J == pytest.approx(est.details["energy_idle_floor_J"]) and 0 < b.idle_floor_J < b.energy_J
    assert (b.short_name, b.device_name) == ("SNN ssa", "h100")
    cpu = CpuBaseline.of(
        {"name": "SNN", "device": "cpu", "kind": "measured", "label": "measured (x)", "batch": 1}, "snn", "export"
    )
    assert list(cpu.to_dict())[-3:] == ["network", "mode", "source"] and cpu.mode == "latency"
    assert cpu.energy_J is None and cpu.idle_floor_J is None and cpu.to_dict()["details"] == {}


def test_power_model_follows_what_the_call_does():
    """A launch-bound call (batch 1 of a small network) costs about idle power x time, a saturated one about TDP x
    time: the GPU / chip ratio no longer grows with the launch overhead of batch 1."""
    launch_bound = gpu.OpCensus([10.0] * 100, [8.0] * 100, peak_bytes=0, weights_bytes=0, params=0)
    saturated = gpu.OpCensus([1e12] * 100, [1e3] * 100, peak_bytes=0, weights_bytes=0, params=0)
    idle, tdp = 50, 300
    lb = gpu.estimate(launch_bound, _gpu_profile(), "net", batch=1)
    sat = gpu.estimate(saturated, _gpu_profile(), "net", batch=1)
    assert lb.energy_J == pytest.approx(idle * lb.latency_s, rel=1e-3) and lb.details["busy_share"] < 1e-3
    assert sat.energy_J == pytest.approx(tdp * sat.latency_s, rel=1e-3) and sat.details["busy_share"] > 0.999
    assert "utilisation power model" in lb.energy_label and "idle 50 W" in lb.energy_label
