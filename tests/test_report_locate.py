"""`spikeport report` loses nothing silently (issue 36): a run report finds its artifact from the run report's own
folder (and by digest) when run from another working folder, a missing artifact is an error naming the run report
unless --allow-missing, and check-hw, the CPU timings, the GPU estimates and the analytic memory are kept in the
report cache, so a second report on the same runs computes none of them (counted by calls, not timed) and loads no
torch. The runs are a converted digits-tiny SSA (as `make demo` lays it out: demo/build, demo/reports, the artifact
named relative to the project folder) run by the reference and by Lava compared with it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import reseal, spiky_model
from spikeport import api
from spikeport.cli import main

ARTIFACT = "demo/build/digits-ssa/model.spk.h5"
REPORTS = ("demo/reports/ssa-reference.json", "demo/reports/ssa-lava.json")
pytestmark = pytest.mark.lava


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """project/demo/{build,reports}: the conversion written from inside project/, so the run reports name the
    artifact as `make demo` does, relative to the folder the runs ran in."""
    root = tmp_path_factory.mktemp("locate") / "project"
    root.mkdir()
    here = os.getcwd()
    os.chdir(root)
    try:
        conv = api.convert(spiky_model("ssa"), Path(ARTIFACT).parent, calibrate=16, eval_samples=6, dataset="digits")
        assert conv.reference_run is not None and conv.reference_run.artifact == ARTIFACT
        conv.reference_run.to_json(REPORTS[0])
        lava = api.run(ARTIFACT, "lava", compare="reference", samples=3)
        assert lava.identical and lava.artifact == ARTIFACT
        lava.to_json(REPORTS[1])
    finally:
        os.chdir(here)
    return root


def copy_of(project: Path, tmp_path: Path) -> Path:
    out = tmp_path / "copy" / "project"
    shutil.copytree(project, out)
    return out


def report_json(argv: list[str], out: Path) -> dict:
    assert main(["report", *argv, "--no-gpu", "--quiet", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_report_from_another_working_folder(project, tmp_path, monkeypatch):
    """`cd elsewhere && spikeport report ../project/demo/reports/...`: the artifact is found beside the run reports,
    check-hw counts its footprint, and the two runs are one model (the reference's counts, Lava's verdict)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    runs = [os.path.relpath(project / r, elsewhere) for r in REPORTS]
    assert not Path(ARTIFACT).exists()  # not from here
    s = report_json(runs, tmp_path / "s.json")
    for run in s["runs"]:
        assert run["chip"]["cores"] > 0 and run["chip_note"] == ""
        assert Path(run["chip"]["artifact"]) == (project / ARTIFACT).resolve()
        assert run["float_accuracy"] is not None  # the conversion report beside the artifact, found too
        assert f"artifact {ARTIFACT} found relative to the run report's folder: " in " ".join(run["notes"])
    [model] = s["models"]
    assert model["runs"] == runs and model["counts_from"] == runs[0] and model["counted_samples"] == 6
    assert [(x["executor"], x["identical"], x["samples"]) for x in model["exactness"]] == [("lava-fixed_pt", True, 3)]


def test_moved_artifact_is_found_by_its_digest(project, tmp_path, monkeypatch):
    moved = copy_of(project, tmp_path)
    (moved / "demo" / "build" / "digits-ssa").rename(moved / "demo" / "build" / "renamed")
    monkeypatch.chdir(tmp_path)
    s = report_json([str(moved / REPORTS[0])], tmp_path / "s.json")
    assert Path(s["runs"][0]["chip"]["artifact"]) == (moved / "demo" / "build" / "renamed" / "model.spk.h5").resolve()
    assert f"artifact {ARTIFACT} found by digest: " in " ".join(s["runs"][0]["notes"])  # said, with where


def test_missing_artifact_is_an_error_naming_the_file_unless_allowed(project, tmp_path, monkeypatch, capsys):
    gone = copy_of(project, tmp_path)
    (gone / ARTIFACT).unlink()
    monkeypatch.chdir(tmp_path)
    run = str(gone / REPORTS[0])
    assert main(["report", run, "--no-gpu", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"spikeport report: error: {run}: field 'artifact': ")
    assert f"{ARTIFACT} not found" in err and "--allow-missing" in err
    s = report_json([run, "--allow-missing"], tmp_path / "s.json")  # said in a note, the rest reported
    assert s["runs"][0]["chip"] is None and f"{ARTIFACT} not found" in s["runs"][0]["chip_note"]
    assert s["runs"][0]["chip_note"] in s["headline"][-1]
    assert report_json([run, "--no-chip"], tmp_path / "t.json")["runs"][0]["chip_note"] == "not asked for (--no-chip)"


def test_another_conversion_at_the_path_is_named(project, tmp_path, monkeypatch, capsys):
    other = copy_of(project, tmp_path)
    import h5py

    with h5py.File(other / ARTIFACT, "r+") as f:  # another conversion of the same network, at another time
        f.attrs["created"] = "2000-01-01T00:00:00"
    reseal(other / ARTIFACT)
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(other / REPORTS[0]), "--no-gpu", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "is another conversion than the one that ran" in err and "no artifact with the run's digest" in err


# ---- the report cache ------------------------------------------------------------------------------------------

COUNTED = {  # the work a report caches: module, function
    "check-hw": ("spikeport.gather.chip", "check_hw"),
    "ONNX Runtime": ("spikeport.exports.onnx", "ort_latency"),
    "GPU estimate": ("spikeport.gather.gpu", "_compute"),
    "analytic memory": ("spikeport.gather.memory", "analytic"),
    "config check": ("spikeport.gather.models", "_checked"),
}


def count_calls(monkeypatch) -> dict[str, int]:
    """Wrap each function of COUNTED (the real one runs) and count its calls."""
    import importlib

    calls = dict.fromkeys(COUNTED, 0)
    for what, (module, name) in COUNTED.items():
        mod = importlib.import_module(module)
        real = getattr(mod, name)

        def counted(*args, _real=real, _what=what, **kw):
            calls[_what] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(mod, name, counted)
    return calls


def test_second_report_on_the_same_runs_computes_nothing(project, tmp_path, monkeypatch):
    runs = [project / r for r in REPORTS]
    cache = tmp_path / "cache"
    calls = count_calls(monkeypatch)
    first = api.report(runs, cache=cache)
    assert calls["check-hw"] == 1 and calls["ONNX Runtime"] == 2  # one artifact; latency and throughput mode
    assert calls["GPU estimate"] == 1 and calls["analytic memory"] == 1 and calls["config check"] >= 1
    assert {p.name.split("-")[0] for p in cache.iterdir()} == {
        "chip",
        "claim",
        "config",
        "cores",
        "cpu",
        "gpu",
        "memory",
    }
    calls.update(dict.fromkeys(calls, 0))
    second = api.report(runs, cache=cache)
    assert calls == dict.fromkeys(COUNTED, 0)  # all of it read back
    a, b = first.to_dict(), second.to_dict()
    for run_a, run_b in zip(a["runs"], b["runs"], strict=True):
        assert run_a["chip"] == run_b["chip"] and run_a["gpu"] == run_b["gpu"]
        assert [c["latency_s"] for c in run_a["cpu"]] == [c["latency_s"] for c in run_b["cpu"]]
        assert any("kept in the report cache" in n for c in run_b["cpu"] for n in c["notes"])  # said where it is from
    assert a["memory"] == b["memory"] and a["headline"] == b["headline"]
    calls.update(dict.fromkeys(calls, 0))
    api.report(runs, cache=False)  # --no-cache: worked out again
    assert calls["check-hw"] == 1 and calls["ONNX Runtime"] == 2


def test_second_report_loads_no_torch(project, tmp_path):
    """What a second `report` on the same runs costs: nothing but reading run reports, the cache and the profiles,
    and the page; neither torch nor ONNX Runtime is imported."""
    cache = tmp_path / "cache"
    script = (
        "import sys; from spikeport import api; "
        f"api.report({[str(project / r) for r in REPORTS]!r}, cache={str(cache)!r}, html={str(tmp_path / 'r.html')!r})"
        "; print(sorted(m for m in ('torch', 'onnxruntime') if m in sys.modules))"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env, timeout=600)
    again = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env)
    assert again.stdout.strip().splitlines()[-1] == "[]", again.stdout
