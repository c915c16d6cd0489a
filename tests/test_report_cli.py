"""`spikeport report`: summary numbers against hand-computed values, the JSON schema, bad input, and
real run reports of converted networks (reference simulator)."""

from __future__ import annotations

import json

import pytest

from spikeport.cli import main
from spikeport.gather.stage import load_run_report, summarize as build
from spikeport.hw_profiles import load_profile
from spikeport.report.format import fmt_bytes, fmt_si
from spikeport.report.inputs import ReportOptions
from spikeport.report.summary import SCHEMA, SCHEMA_VERSION


def build_summary(*args, **kw) -> dict:
    """The summary's JSON object (what `report --json` writes)."""
    return build(*args, **kw).to_dict()


PJ = 1e-12


def tiny_run_report(attention: str = "ssa") -> dict:
    """T = 2 steps, 2 samples (counts are sums over samples, the run-report contract)."""
    from spikeport.train.presets import preset_config

    def layer(name, op, kind, neurons=0, state=0, weights=0, **per_t):
        d = {
            "name": name,
            "op": op,
            "input_kind": kind,
            "neurons": neurons,
            "fan_out": 4,
            "state_bytes": state,
            "weight_bytes": weights,
        }
        for key in ("spikes", "synops", "macs", "neuron_updates", "dendritic_updates"):
            d[key] = per_t.get(key, [0, 0])
        if "synops_valued" in per_t:
            d["synops_valued"] = per_t["synops_valued"]
        return d

    model = preset_config("digits-tiny", attention=attention, T=2).to_dict()
    return {
        "schema": "spikeport.run",
        "schema_version": 1,
        "executor": "reference",
        "model": model,
        "T": 2,
        "samples": 2,
        "accuracy": 0.5,
        "predictions": [1, 2],
        "layers": [
            layer("input", "input", "none"),
            layer("conv0", "conv", "analog", weights=10, macs=[100, 100]),
            layer(
                "lif0", "lif", "activation", neurons=10, state=60, weights=4, spikes=[10, 6], neuron_updates=[20, 20]
            ),
            layer("dense1", "dense", "spikes", synops=[30, 20]),
            layer("attn", "attention", "spikes", state=512, synops=[5, 5], macs=[4, 4]),
            layer("lif1", "lif", "activation", neurons=4, state=24, spikes=[4, 0], neuron_updates=[8, 8]),
            layer("head", "readout", "integer", macs=[6, 6], synops_valued=[3, 3]),
        ],
    }


# Per inference: lif0 8 spikes (rate 8 / (10 x 2) = 0.4), lif1 2 spikes (2 / (4 x 2) = 0.25), all LIF
# 10 / 28; synops 25 + 5 = 30; MACs 100 (first layer) + 4 + 6 = 110; neuron updates 28; readout value 3.


def _write(tmp_path, name, obj) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return str(p)


def test_summary_numbers_by_hand():
    s = build_summary([tiny_run_report()], ["loihi2", "cmos45nm"], [], options=ReportOptions(gpu_baseline=False))
    run = s["runs"][0]
    rows = {r["name"]: r for r in run["layers"]}
    assert rows["lif0"]["spikes"] == 8 and rows["lif0"]["firing_rate"] == pytest.approx(0.4)
    assert rows["lif1"]["firing_rate"] == pytest.approx(0.25) and rows["lif0"]["spikes_per_step"] == [5, 3]
    assert rows["dense1"]["synops"] == 25 and rows["conv0"]["firing_rate"] is None
    t = run["totals"]
    assert (t["spikes"], t["synops"], t["macs"], t["neuron_updates"]) == (10, 30, 110, 28)
    assert t["firing_rate"] == pytest.approx(10 / 28)
    sm = run["state_memory"]
    assert (sm["attention_state_bytes"], sm["neuron_state_bytes"], sm["state_bytes"], sm["weight_bytes"]) == (
        512,
        84,
        596,
        14,
    )
    assert run["counts_by"].startswith("reference: the reference integer simulator")
    e = {(x["profile"], x["method"]): x for x in run["energy"]}
    assert set(e) == {("loihi2", "native"), ("cmos45nm", "native"), ("cmos45nm", "memory"), ("cmos45nm", "literature")}
    assert e["cmos45nm", "literature"]["energy_J"] == pytest.approx((100 * 4.6 + (30 + 3) * 0.9) * PJ)
    assert e["cmos45nm", "native"]["energy_J"] == pytest.approx((100 * 4.6 + 33 * 0.9 + 10 * 4.6) * PJ)
    p = load_profile("loihi2")

    def si(key):
        return p.si("energy", key)

    loihi = 110 * si("synop_graded") + (30 + 3) * si("synop") + 28 * si("neuron_update") + 10 * si("spike_local")
    assert e["loihi2", "native"]["energy_J"] == pytest.approx(loihi)
    assert e["loihi2", "native"]["label"] == "estimated (op counts x cost table loihi2)"
    assert e["loihi2", "native"]["per_layer_J"]["conv0"] == pytest.approx(100 * si("synop_graded"))
    assert all(x["left_out"] for x in run["energy"])
    # the loihi2 estimate's static part, as Intel splits a measurement: static power x T x the profile's (PilotNet)
    # time step, beside the dynamic op-count energy
    assert run["static_energy_J"] == {"loihi2": pytest.approx(0.232 * 2 * 153e-6)}
    assert any(n.startswith("loihi2: static part") and "dynamic" in n for n in run["notes"])
    loihi2 = next(e for e in run["energy"] if e["profile"] == "loihi2")
    assert loihi2["total_J"] == pytest.approx(loihi2["energy_J"] + 0.232 * 2 * 153e-6)
    assert any(n.startswith("loihi2: static part") for n in run["notes"])
    # the model (one run): its loihi2 figure is dynamic + static, the report's accounting says so
    [model] = s["models"]
    [chip] = [e for e in model["energy"] if e["profile"] == "loihi2"]
    assert chip["energy_J"] == pytest.approx(loihi + 0.232 * 2 * 153e-6) and chip["static_included"]
    assert s["accounting"]["static_included"] and s["accounting"]["chip"] == "loihi2"
    assert "Loihi 1 value (Davies et al., IEEE Micro 2018" in s["accounting"]["per_op_energies"]


def test_memory_and_gpu_ratio_from_bench_json():
    """A `bench gpu --json` result (here written by hand, as measured on a CUDA box) is matched by attention
    and T, keeps its 'measured' label, and the ratio is GPU J / estimate J."""
    bench = {
        "schema": "spikeport.gpu_bench",
        "schema_version": 1,
        "target": "runs/x",
        "attention": "lrf_dyn",
        "T": 2,
        "networks": {"SNN lrf_dyn T=2": "float SNN"},
        "results": [
            {
                "name": "SNN lrf_dyn T=2",
                "executor": "torch",
                "device": "cuda (H100)",
                "kind": "measured",
                "label": "measured (CUDA events; NVML)",
                "batch": 1,
                "dtype": "fp32",
                "latency_s": 2e-3,
                "energy_J": 0.25,
                "energy_dynamic_J": 0.1,
            }
        ],
    }
    runs = [tiny_run_report("ssa"), tiny_run_report("lrf_dyn")]
    runs[1]["layers"][4].update(op="dendritic", state_bytes=384)
    s = build_summary(runs, ["cmos45nm"], [], options=ReportOptions(gpu_bench=(bench,), vit=False))
    ssa, dyn = s["runs"]
    assert all(b["source"] != "spikeport bench gpu (runs/x)" for b in ssa["gpu"])  # attention differs
    assert [b["kind"] for b in dyn["gpu"]] == ["measured"] and dyn["gpu"][0]["label"].startswith("measured (")
    lit = next(c for c in dyn["comparison"] if c["method"] == "literature")
    assert lit["gpu_over_estimate"] == pytest.approx(0.25 / ((100 * 4.6 + 33 * 0.9) * PJ))
    m = s["memory"]
    assert m["runs_ratio"]["ratio"]["attention_state_bytes"] == pytest.approx(384 / 512)
    assert [r["attention"] for r in m["analytic"]["results"]] == ["ssa", "lrf_dyn"]
    # one GPU figure per model and mode, the measurement; cmos45nm (the only profile) has no static power, so the
    # accounting leaves it out on both sides: the GPU's energy less idle power, 0.1 J, over the CMOS estimate
    assert s["accounting"]["chip"] == "cmos45nm" and not s["accounting"]["static_included"]
    dyn_model = next(x for x in s["models"] if x["name"] == "lrf_dyn")
    [gpu] = dyn_model["gpu"]
    assert (gpu["kind"], gpu["mode"], gpu["energy_J"], gpu["low_J"]) == ("measured", "latency", 0.1, None)
    cmos = next(e for e in dyn_model["energy"] if e["profile"] == "cmos45nm")
    assert gpu["over_chip"] == pytest.approx(0.1 / cmos["energy_J"]) and not cmos["static_included"]
    assert "static power left out" in s["headline"][0] and "static power on neither side" in " ".join(s["headline"])


def test_accounting_names_a_calibrated_profile_and_static_on_neither_side():
    """The headline says where the chip's per-op energies come from: a calibrated profile by its calibration; a chip
    profile without static power puts static power on neither side (the GPU's energy less idle power)."""
    from dataclasses import replace

    loihi2 = load_profile("loihi2")
    calibration = {"base": "loihi2", "scale": 0.786, "fitted": "2026-01-02", "runs": [{"source": "pilot.json"}]}
    calibrated = replace(loihi2, name="loihi2-calibrated", calibration=calibration)
    s = build([tiny_run_report()], [calibrated], ["h100"], options=ReportOptions(vit=False))
    assert s.accounting is not None and s.accounting.calibrated and s.accounting.static_included
    said = " ".join(s.headline)
    assert "loihi2-calibrated's per-op energies are loihi2's x 0.786, calibrated on 1 measured run (pilot.json)" in said
    [model] = s.models
    for g in model.gpu:  # the board's energy by the power model, between its idle floor and TDP x time, over the chip's
        assert g.low_J < g.energy_J < g.high_J and g.over_chip == pytest.approx(g.energy_J / model.energy[0].energy_J)
    no_static = replace(loihi2, name="no-static", sections={k: v for k, v in loihi2.sections.items() if k != "power"})
    s = build([tiny_run_report()], [no_static], ["h100"], options=ReportOptions(vit=False))
    assert s.accounting is not None and not s.accounting.static_included
    [model] = s.models
    [chip] = model.energy
    assert chip.static_J is None and chip.energy_J == chip.dynamic_J
    baselines = {b.mode: b for b in s.runs[0].gpu if b.network == "snn"}
    for g in model.gpu:
        assert g.energy_J == pytest.approx(baselines[g.mode].energy_dynamic_J)  # (TDP - idle) x time
        assert g.over_chip == pytest.approx(g.energy_J / chip.energy_J)
    assert "static power on neither side" in " ".join(s.headline)


def _check_schema(s: dict) -> None:
    assert (s["schema"], s["schema_version"]) == (SCHEMA, SCHEMA_VERSION) == ("spikeport.report", 1)
    for key in ("per", "generator", "options", "runs", "memory", "profiles", "caveats"):
        assert key in s, key
    for run in s["runs"]:
        for key in (
            "source",
            "executor",
            "counts_by",
            "samples",
            "accuracy",
            "totals",
            "layers",
            "energy",
            "state_memory",
            "gpu",
            "comparison",
        ):
            assert key in run, key
        for e in run["energy"]:
            assert e["kind"] in ("estimated", "measured") and e["label"].startswith(e["kind"] + " (")
            assert isinstance(e["energy_J"], float) and isinstance(e["left_out"], list)
        for b in run["gpu"]:
            assert b["kind"] in ("estimated", "measured") and b["label"].startswith(b["kind"] + " (")
            assert b["network"] in ("snn", "vit")
        for c in run["comparison"]:
            assert c["gpu_over_estimate"] == pytest.approx(c["gpu_energy_J"] / c["energy_J"])
            if c["gpu_kind"] == "estimated":  # TDP x time, floor idle x time
                assert 0 < c["gpu_floor_over_estimate"] < c["gpu_over_estimate"]


def test_cli_json_schema_and_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")  # wide enough that no heading wraps
    run = _write(tmp_path, "run.json", tiny_run_report())
    out = tmp_path / "out" / "summary.json"
    flags = ["--profile", "loihi2", "--gpu", "v100", "--no-vit"]
    assert main(["report", run, *flags]) == 0  # the answer per model; each run's detail behind --detail
    text = capsys.readouterr().out
    assert "the answer, per model and per inference" in text and "per layer, per inference" not in text
    assert "--detail" in text and "docs/glossary.md" in text
    assert main(["report", run, *flags, "--detail", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "counts by reference" in text and "estimated (op counts x cost table loihi2)" in text
    assert "v100" in text and "GPU / estimate" in text
    assert text.index("the answer, per model") < text.index("per layer, per inference")  # the answer first
    s = json.loads(out.read_text())
    _check_schema(s)
    assert s["options"]["profiles"] == ["loihi2"] and s["options"]["gpus"] == ["v100"]
    latency, throughput = s["runs"][0]["gpu"]  # both modes, each tagged
    assert (latency["mode"], latency["batch"], throughput["mode"], throughput["batch"]) == (
        "latency",
        1,
        "throughput",
        256,
    )
    for b in (latency, throughput):
        if b["kind"] == "estimated":  # no CUDA (CI): estimated from the v100 profile
            assert "v100" in b["label"] and b["device"] == "v100 (profile)"
    # a large batch amortises the weights and the launches: less energy per inference than batch 1
    assert throughput["energy_J"] < latency["energy_J"]
    assert {c["gpu_mode"] for c in s["runs"][0]["comparison"]} == {"latency", "throughput"}
    assert [p.name for p in out.parent.iterdir()] == ["summary.json"]  # atomic: no temp file left


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("spikeport report: error:")
    return err


def test_bad_input_one_line_errors(tmp_path, capsys):
    good = _write(tmp_path, "run.json", tiny_run_report())
    missing = str(tmp_path / "nope.json")
    assert missing in _error(capsys, ["report", missing])
    other = _write(tmp_path, "other.json", {"schema": "spikeport.conversion", "layers": []})
    err = _error(capsys, ["report", other])
    assert other in err and "'schema'" in err and "not a spikeport run report" in err
    notjson = tmp_path / "broken.json"
    notjson.write_text("{nope")
    assert str(notjson) in _error(capsys, ["report", str(notjson)])
    bad_layer = tiny_run_report()
    bad_layer["layers"][3]["synops"] = "many"
    err = _error(capsys, ["report", _write(tmp_path, "bad_layer.json", bad_layer)])
    assert "layers[3].synops" in err and "dense1" in err
    err = _error(capsys, ["report", good, "--profile", "loihi9"])
    assert "loihi9" in err and "loihi2" in err  # names it and lists the shipped ones
    chip = tmp_path / "my_chip.yaml"
    chip.write_text(
        "schema_version: 1\nname: my_chip\nkind: neuromorphic\ndescription: test chip\nenergy:\n"
        "  synop: {value: 2.5, unit: pJ, source: paper, confidence: published}\n"
        "  synapse_op: {value: 1, unit: pJ, source: paper, confidence: published}\n"
    )
    err = _error(capsys, ["report", good, "--profile", str(chip)])
    assert str(chip) in err and "energy.synapse_op" in err
    err = _error(capsys, ["report", good, "--gpu", "loihi2"])
    assert "loihi2" in err and "not a GPU" in err


def test_user_profile_file(tmp_path):
    chip = tmp_path / "my_chip.yaml"
    chip.write_text(
        "schema_version: 1\nname: my_chip\nkind: neuromorphic\ndescription: test chip\nenergy:\n"
        "  synop: {value: 2.0, unit: pJ, source: paper, confidence: published}\n"
    )
    s = build_summary(
        [load_run_report(_write(tmp_path, "r.json", tiny_run_report()))],
        [str(chip)],
        [],
        options=ReportOptions(gpu_baseline=False),
    )
    [e] = s["runs"][0]["energy"]
    assert e["energy_J"] == pytest.approx(33 * 2.0 * PJ)  # only synops (30 spikes + 3 by value) priced
    assert any("first_layer_macs" in x and "'my_chip' has no cost" in x for x in e["left_out"])
    assert fmt_si(e["energy_J"], "J") == "66 pJ" and fmt_bytes(596) == "596 B"


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """Run reports of converted digits-tiny networks (ssa, lrf_dyn) from the reference simulator."""
    import numpy as np

    from conftest import quantized_graph, random_images, spiky_model
    from spikeport.runtime.executor import to_channels_last
    from spikeport.runtime.sim.reference import ReferenceSimulator

    folder = tmp_path_factory.mktemp("runs")
    paths = []
    for att in ("ssa", "lrf_dyn"):
        graph = quantized_graph(spiky_model(att), random_images(16, seed=1))
        images = to_channels_last(random_images(6, seed=2).numpy())
        report = ReferenceSimulator(graph).run(images, np.arange(6) % 10).to_dict()
        paths.append(_write(folder, f"run_{att}.json", report))
    return paths


def test_real_run_reports(real_runs, tmp_path, capsys):
    out = tmp_path / "summary.json"
    assert main(["report", *real_runs, "--json", str(out), "--quiet"]) == 0
    s = json.loads(out.read_text())
    _check_schema(s)
    for path, run in zip(real_runs, s["runs"], strict=True):
        raw = json.loads(open(path).read())
        assert run["executor"] == "reference" and run["samples"] == 6
        for key in ("spikes", "synops", "macs", "dendritic_updates"):
            assert run["totals"][key] == pytest.approx(raw["totals"][key] / 6)
        assert run["totals"]["spikes"] > 0
        assert {b["network"] for b in run["gpu"]} == {"snn", "vit"}
    # the chip-native dendritic lowering has no dendritic compartments: coincidence and product neurons
    assert s["runs"][1]["totals"]["dendritic_updates"] == 0 == s["runs"][0]["totals"]["dendritic_updates"]
    m = s["memory"]
    assert [c["agrees"] for c in m["check"]] == [True, True]  # counted K^T V / X == analytic at Loihi precision
    assert m["from_runs"][0]["attention_state_kind"][0].startswith("coincidence pairs (chip-native")
    assert m["from_runs"][1]["attention_state_kind"][0].startswith("dendritic token kernel")
    # digits-tiny (64 tokens): neither chip-native lowering holds attention state between steps
    assert (m["runs_ratio"]["ssa"]["attention_state_bytes"], m["runs_ratio"]["lrf_dyn"]["attention_state_bytes"]) == (
        0,
        0,
    )


def test_lava_run_notes():
    """A streamed Lava run: static power over its reset interval; host-side nodes are named."""
    run = dict(tiny_run_report(), executor="lava-fixed_pt", lava={"reset_interval": 4, "host_only": ["input", "attn"]})
    s = build_summary([run], ["loihi2"], [], options=ReportOptions(gpu_baseline=False))
    r = s["runs"][0]
    assert r["counts_by"].startswith("lava-fixed_pt: the Lava CPU simulator")
    assert r["static_energy_J"]["loihi2"] == pytest.approx(0.232 * 4 * 153e-6)
    assert any("attn run on the host" in n and "input" not in n for n in r["notes"])
    # the host crossings, priced apart: every one of the 4 steps waits for a host round trip (PilotNet SDNN's
    # IO-bound 1/16.9 s per step in the loihi2 profile) at the chip's static power
    io = r["host_io"]["loihi2"]
    assert io["crossing_steps"] == 4
    assert io["seconds"] == pytest.approx(4 * 59e-3) and io["joules"] == pytest.approx(4 * 59e-3 * 0.232)
    assert any(n.startswith("host crossings on loihi2 (estimated") and "pilotnet_sdnn" in n for n in r["notes"])
    on_chip = dict(run, lava={"reset_interval": 4, "host_only": ["input"]})
    assert (
        build_summary([on_chip], ["loihi2"], [], options=ReportOptions(gpu_baseline=False))["runs"][0]["host_io"] == {}
    )


def test_runs_of_one_artifact_are_one_model():
    """The reference and a hardware-plan run of the same artifact (same root digest) are one column: the reference's
    counts (more samples) price it, the hardware run gives its verdict against the expected outputs on its samples,
    and its measured energy (Intel's split) joins the model's rows; a run of another artifact is another model."""
    digest = "ab" * 32
    ref = dict(tiny_run_report(), artifact="build/ssa/model.spk.h5", artifact_digest=digest)
    hw = dict(
        tiny_run_report(),
        executor="loihi2",
        samples=1,
        predictions=[1],
        artifact="model.spk.h5",
        artifact_digest=digest,
        hardware={
            "run_config": "Loihi2HwCfg",
            "embedded_io": "lava.proc.embedded_io",
            "drive": "bias",
            "plan": {},
            "counts_from": "the reference's counts on the same samples",
            "outputs_identical": True,
            "samples": 1,
        },
        energy_measured={"label": "measured on Loihi 2", "total_J": 3e-4, "dynamic_J": 2e-4, "static_J": 1e-4},
    )
    for layer in hw["layers"]:  # one sample: half the counts of the two-sample reference
        for key in ("spikes", "synops", "macs", "neuron_updates", "dendritic_updates"):
            layer[key] = [v // 2 for v in layer[key]]
    other = dict(tiny_run_report("lrf_dyn"), artifact_digest="cd" * 32)
    other["layers"][4].update(op="dendritic")
    sources = ["hw.json", "ref.json", "dyn.json"]
    s = build([hw, ref, other], ["loihi2"], [], sources=sources, options=ReportOptions(gpu_baseline=False))
    ssa, dyn = s.models
    assert (ssa.name, ssa.runs, ssa.counts_from, ssa.counted_samples) == ("ssa", ["ref.json", "hw.json"], "ref.json", 2)
    [check] = ssa.exactness
    assert (check.executor, check.identical, check.samples) == ("loihi2", True, 1)
    assert check.against == "the reference's expected outputs"
    measured = [e for e in ssa.energy if e.kind == "measured"]
    assert [(e.energy_J, e.dynamic_J, e.static_J) for e in measured] == [pytest.approx((3e-4, 2e-4, 1e-4))]
    assert "(hw.json)" in measured[0].label and "ssa measured: 300 uJ (measured on Loihi 2" in s.headline[0]
    assert dyn.runs == ["dyn.json"] and dyn.exactness == [] and s.ratios[0].name == "lrf_dyn / ssa on loihi2"
    assert any("each run averages its own samples" in n and "hw.json" in n for n in ssa.notes)


def test_two_conversions_of_one_variant_are_two_models():
    """Runs of two artifacts of the same variant (two root digests) are two columns, named by their folders."""
    a = dict(tiny_run_report(), artifact="build/first/model.spk.h5", artifact_digest="ab" * 32)
    b = dict(tiny_run_report(), artifact="build/second/model.spk.h5", artifact_digest="cd" * 32)
    s = build([a, b], ["loihi2"], [], sources=["a.json", "b.json"], options=ReportOptions(gpu_baseline=False))
    assert [m.name for m in s.models] == ["ssa (first)", "ssa (second)"]
    assert [r.name for r in s.ratios] == ["ssa (second) / ssa (first) on loihi2"]
    assert s.ratios[0].ratio.value == pytest.approx(1.0)  # the same counts: the same energy


def test_a_model_that_barely_fires_is_flagged_beside_its_gpu_ratio():
    """The GPU ratio grows as a model gets worse (an untrained model barely fires and costs the chip nothing): a model
    under BARELY_FIRES is flagged beside its ratio in the headline and in its notes; one that fires is not."""
    from spikeport.report.model import BARELY_FIRES

    quiet = tiny_run_report()
    for layer in quiet["layers"]:  # 1 spike in 56 neuron-steps of 2 samples: 1.8 %
        if layer["op"] == "lif":
            layer["spikes"] = [1, 0] if layer["name"] == "lif0" else [0, 0]
    s = build([quiet], ["loihi2"], ["h100"], options=ReportOptions(vit=False))
    [model] = s.models
    assert model.firing_rate == pytest.approx(1 / 56) and model.firing_rate < BARELY_FIRES and model.barely_fires
    gpu_line = next(line for line in s.headline if line.startswith("The GPU in throughput mode"))
    assert "= " in gpu_line and "(BARELY FIRES: 1.79% of its neuron-steps; read with its accuracy)" in gpu_line
    assert any("fires on 1.79% of its LIF neuron-steps" in n for n in model.notes)
    fires = build([tiny_run_report()], ["loihi2"], ["h100"], options=ReportOptions(vit=False))
    assert not fires.models[0].barely_fires and "BARELY" not in " ".join(fires.headline)


def test_energy_plot_draws_parts_as_shares_and_zeros_as_zeros():
    """The models' plot: the chip's dynamic and static parts stacked on a linear axis with the static share written
    (a 51 % share reads as half, not as a log-scale sliver); the memory plot writes a zero instead of a bar at 10^0."""
    from spikeport.report import plots

    s = build([tiny_run_report()], ["loihi2"], ["h100"], options=ReportOptions(vit=False))
    [model] = s.models
    [chip] = [e for e in model.energy if e.profile == "loihi2"]
    svg = plots.models_svg(s.models, s.accounting, "t")
    share = f"static {chip.static_J / chip.energy_J:.0%}"
    assert "linear scale" in svg and share in svg and "log scale" in svg
    assert s.memory.analytic is not None
    zero = [c for r in s.memory.analytic.results for c, v in r.analytic_loihi["totals"].items() if v == 0]
    assert zero  # the chip-native lowerings hold no attention core: written '0 B', no bar down to 10^0
    assert " 0 B" in plots.memory_svg(s.memory, "m")
