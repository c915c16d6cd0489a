"""Bad input is refused in one line before any work (issue 16, first part): strict root attributes of an
artifact with bounds, only regular files opened, file names that stay in their folder, and every command's
numeric arguments checked by one shared set of argparse types."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import quantized_graph, random_images, reseal, spiky_model
from spikeport.cli import main
from spikeport.errors import ArtifactError, ConfigError
from spikeport.ir import artifact


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("art") / "model.spk.h5"
    artifact.write(quantized_graph(spiky_model("ssa"), random_images(8, seed=1)), path)
    return path


def edited(good, tmp_path, edit, sealed: bool = True) -> str:
    """A copy of ``good`` with ``edit`` applied; ``sealed``: digests recomputed, as by someone who meant the edit."""
    path = tmp_path / "edited.spk.h5"
    path.write_bytes(good.read_bytes())
    with h5py.File(path, "r+") as f:
        edit(f)
    if sealed:
        reseal(path)
    return str(path)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda f: f.attrs.__setitem__("T", 4.9), r"'/@T': is 4\.9 .*expected an integer"),
        (lambda f: f.attrs.__setitem__("T", np.int64(4278190084)), r"'/@T': is 4278190084, expected 1\.\.10000"),
        (lambda f: f.attrs.__setitem__("T", 0), r"'/@T': is 0, expected 1\.\.10000"),
        (lambda f: f.attrs.__setitem__("T", "4"), r"'/@T': is '4' .*expected an integer"),
        (lambda f: f.attrs.__setitem__("schema_version", 1.9), r"'/@schema_version': is 1\.9 .*expected an integer"),
        (lambda f: f["meta"].attrs.__setitem__("json", "{not json"), r"'/meta/@json': is not valid JSON"),
        (lambda f: f["meta"].attrs.__setitem__("json", "[1, 2]"), r"'/meta/@json': is a JSON list"),
    ],
)
def test_root_attributes_are_strict_and_bounded(good, tmp_path, edit, match):
    with pytest.raises(ArtifactError, match=match):
        artifact.read(edited(good, tmp_path, edit))


@pytest.mark.parametrize(
    "edit",
    [
        lambda f: f.attrs.__setitem__("T", 5),  # a one-bit flip of T = 4 changed spikes by 6.7 %
        lambda f: f.attrs.__setitem__("created", "2020-01-01T00:00:00Z"),
        lambda f: f["meta"].attrs.__setitem__("json", f["meta"].attrs["json"].replace('"depth"', '"depti"')),
        lambda f: f.move("nodes/0", "nodes/tmp") or f.move("nodes/1", "nodes/0") or f.move("nodes/tmp", "nodes/1"),
    ],
    ids=["T", "created", "meta", "node-order"],
)
def test_the_root_digest_covers_root_attributes_meta_and_node_order(good, tmp_path, edit):
    path = edited(good, tmp_path, edit, sealed=False)
    for reader in (artifact.read, artifact.read_meta):
        with pytest.raises(ArtifactError, match="'/@digest': mismatch"):
            reader(path)


def test_version_1_artifacts_are_refused_with_the_way_out(good, tmp_path):
    path = edited(good, tmp_path, lambda f: f.attrs.__setitem__("schema_version", 1), sealed=False)
    with pytest.raises(ArtifactError, match=r"is 1 \(written before .*root digest\).*re-run `spikeport convert`"):
        artifact.read(path)


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda f: f.attrs.__setitem__("extra", 1), r"'/extra': unexpected attribute"),
        (lambda f: f.create_group("more"), r"'/more': unexpected member"),
        (lambda f: f["nodes"].create_group("x"), r"'/nodes/x': unexpected member"),
        (lambda f: f["nodes/1"].attrs.__setitem__("shape", np.array([8.0, 8.0, 4.0])), r"@shape.*1-d integer array"),
        (lambda f: f["nodes/1"].attrs.__setitem__("shape", np.array([2**13, 2**13, 4])), r"@shape.*the limit is"),
        (lambda f: f["nodes/1"].attrs.__setitem__("name", np.int64(3)), r"@name': is a int64, expected a string"),
        (
            lambda f: f["nodes/1"].create_dataset("huge", shape=(2**28,), dtype=np.int8),  # unwritten: tiny on disk
            r"'/nodes/1/huge': has 268435456 elements .* the limit is 134217728",
        ),
        (
            lambda f: f["nodes/1"].create_dataset("zipped", data=np.zeros(10, np.int8), compression="gzip"),
            r"gzip-compressed",
        ),
    ],
)
def test_the_structure_is_strict_and_sizes_are_bounded_before_reading(good, tmp_path, edit, match):
    with pytest.raises(ArtifactError, match=match):
        artifact.read(edited(good, tmp_path, edit))


def test_a_fifo_is_refused_not_opened(tmp_path):
    """`run` and `check-hw` hung on a FIFO in place of the artifact (the netx sniffing opened it)."""
    fifo = tmp_path / "model.spk.h5"
    os.mkfifo(fifo)
    for command in (["run", str(fifo)], ["check-hw", str(fifo)]):
        proc = subprocess.run(
            [sys.executable, "-m", "spikeport", *command], capture_output=True, text=True, timeout=120
        )
        err = proc.stderr.strip()
        assert proc.returncode == 2 and "not a regular file" in err and "\n" not in err, (command, err)


def test_convert_name_is_a_file_name(tmp_path):
    import spikeport

    for name in ("../../escaped", "sub/model", "..", ""):
        with pytest.raises(ConfigError, match="expected a file name"):
            spikeport.convert(spiky_model("ssa"), tmp_path / "out", name=name, onnx=False)
    assert not (tmp_path / "escaped.spk.h5").exists()


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "x.spk.h5", "--samples", "-1"], "argument --samples: '-1' is not a positive integer"),
        (["run", "x.spk.h5", "--samples", "0"], "argument --samples: '0' is not a positive integer"),
        (["run", "x.spk.h5", "--batch-size", "-5"], "argument --batch-size: '-5' is not a positive integer"),
        (["convert", "c.pt", "--calibrate", "-5"], "argument --calibrate: '-5' is not an integer >= 0"),
        (["convert", "c.pt", "--eval-samples", "0"], "argument --eval-samples: '0' is not a positive integer"),
        (["train", "--lr", "nan"], "argument --lr: 'nan' is not a finite number > 0"),
        (["train", "--workers", "-1"], "argument --workers: '-1' is not an integer >= 0"),
        (["train", "--epochs", "two"], "argument --epochs: 'two' is not a positive integer"),
        (["memory", "digits-tiny", "--T", "0"], "argument --T: '0' is not a positive integer"),
        (["simulate", "particles", "--dt", "inf"], "argument --dt: 'inf' is not a finite number > 0"),
    ],
)
def test_bad_numbers_are_refused_in_one_line_before_any_work(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and err[-1].endswith(message), err


def test_api_refuses_a_batch_size_below_one(good):
    import spikeport

    with pytest.raises(ConfigError, match="batch_size = 0"):
        spikeport.run(good, batch_size=0)


# ------------------------------------------------------------------------ outputs, transactions, leftovers
def test_a_result_whose_path_fails_at_the_end_is_saved_where_the_error_says(tmp_path):
    from spikeport.atomic import write_or_fallback
    from spikeport.errors import OutputPathError

    target = tmp_path / "gone" / "run.json"
    (tmp_path / "gone").write_text("the folder became a file during the run")
    with pytest.raises(OutputPathError, match=r"could not write the run report .*; it is saved at (\S+)") as info:
        write_or_fallback(target, lambda p: p.write_text('{"done": true}'), "the run report")
    saved = str(info.value).rsplit(" ", 1)[-1]
    assert open(saved).read() == '{"done": true}'
    os.unlink(saved)


def test_a_conversion_is_one_set_and_a_mixed_set_is_detected(tmp_path, capsys):
    import spikeport
    from spikeport.ir.artifact import float_accuracy

    out = tmp_path / "build"
    first = spikeport.convert(spiky_model("ssa"), out, onnx=False, calibrate=0, eval_samples=8)
    files = json.loads((out / "conversion_report.json").read_text())["files"]
    assert files == {"artifact": "model.spk.h5", "artifact_digest": first.graph.digest}
    assert oct((out / "model.spk.h5").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    old_report = (out / "conversion_report.json").read_text()
    spikeport.convert(spiky_model("ssa", seed=3), out, onnx=False, calibrate=0, eval_samples=8)
    (out / "conversion_report.json").write_text(old_report)  # what a SIGKILL between the renames leaves
    assert not [p for p in out.iterdir() if ".tmp" in p.name]
    for argv in (["inspect", str(out / "model.spk.h5")], ["run", str(out / "model.spk.h5"), "--samples", "4"]):
        assert main(argv) == 0
        assert "belongs to another conversion" in capsys.readouterr().err
    report = spikeport.run(out / "model.spk.h5", samples=4)
    assert float_accuracy(report.artifact, report.artifact_digest) is None
    assert float_accuracy(report.artifact, None) is not None  # run reports without a digest: as before


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_killed_writers_and_runs_are_removed_by_the_next_one(tmp_path, monkeypatch):
    import tempfile

    from spikeport import atomic

    dead, alive = _dead_pid(), os.getpid()
    stale = tmp_path / f".model.spk.h5.{atomic._HOST}-{dead}.0123456789abcdef.tmp.h5"
    live = tmp_path / f".model.spk.h5.{atomic._HOST}-{alive}.0123456789abcdef.tmp.h5"
    other_host = tmp_path / f".model.spk.h5.ffffffff-{dead}.0123456789abcdef.tmp.h5"
    for p in (stale, live, other_host):
        p.write_text("half written")
    with atomic.atomic_write(tmp_path / "model.spk.h5") as tmp:
        tmp.write_text("whole")
    assert not stale.exists() and live.exists() and other_host.exists()

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = tmp_path / f"spikeport-lava-{atomic._HOST}-{dead}-abc"
    running = tmp_path / f"spikeport-netx-{atomic._HOST}-{alive}-abc"
    for p in (left, running):
        p.mkdir()
        (p / "0.npy").write_bytes(b"x")
    with atomic.run_temp_dir("lava") as folder:
        assert os.path.isdir(folder) and f"-{alive}-" in folder
    assert not left.exists() and running.exists() and not os.path.exists(folder)


@pytest.mark.lava
def test_sigterm_stops_a_lava_run_in_one_line_and_leaves_nothing(good, tmp_path):
    """What `timeout` and job schedulers send: exit 143, one line, the Lava children, shared memory and the
    run's temporary folder gone."""
    import signal
    import time

    from procs import process_group

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "spikeport", "run", str(good), "--backend", "lava", "--samples", "100"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("spikeport-lava-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert list(tmp_path.glob("spikeport-lava-*")), "the Lava run did not start"
    time.sleep(2.0)  # inside the run, its children up
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "spikeport run: terminated (SIGTERM)", err
    deadline = time.monotonic() + 15
    while process_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_group(proc.pid)
    assert not list(tmp_path.glob("spikeport-*"))


def test_the_writer_refuses_what_the_reader_would(tmp_path):
    import spikeport
    from spikeport.errors import ConversionError

    graph = quantized_graph(spiky_model("ssa"), random_images(8, seed=1))
    graph.T = 20_000
    with pytest.raises(ConversionError, match=r"T = 20000: expected 1\.\.10000"):
        artifact.write(graph, tmp_path / "long.spk.h5")
    assert not list(tmp_path.iterdir())
    with pytest.raises(ConfigError, match=r"steps = 20000: expected 1\.\.10000"):
        spikeport.api.convert_netx(tmp_path / "any.net", tmp_path / "out", steps=20_000)


def test_signals_during_a_conversions_renames_wait_for_its_end_even_with_threads():
    """A signal mask would hold SIGINT in the main thread only: the kernel hands it to another thread, whose C
    handler still interrupts the main thread. The renames must see no KeyboardInterrupt."""
    import signal
    import threading
    import time

    from spikeport.atomic import signals_held

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)  # torch's pool stands here
    worker.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # the handler has run by now; nothing was raised inside the block
                inside_done = True
        assert inside_done
    finally:
        stop.set()
        worker.join()


def test_model_configs_take_numpy_numbers_and_name_a_wrong_type():
    from spikeport.train.models import ModelConfig

    cfg = ModelConfig(embed_dim=np.int64(64), num_heads=4, mlp_ratio=np.float64(4.0), pool_stages=[np.int64(2)])
    assert (type(cfg.embed_dim), type(cfg.mlp_ratio), cfg.pool_stages) == (int, float, (2,))
    with pytest.raises(ConfigError, match=r"'embed_dim' = '64' \(str\): expected int in \[1, 16384\]"):
        ModelConfig(embed_dim="64")


def test_netx_flatten_dense_kernels_may_cover_the_whole_map():
    """netx's flatten -> dense is a conv whose kernel is the input map (DVS128: 128 x 128)."""
    from spikeport.ir.kernels import spec

    kernel = next(a for a in spec("conv").attrs if a.name == "kernel")
    assert kernel.check((128, 128)) is None and kernel.check((3, 3, 3)) and kernel.check((0, 3))
