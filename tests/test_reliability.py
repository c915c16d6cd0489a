"""Bad input is refused in one line before any work (issue 16, first part): strict root attributes of an
artifact with bounds, only regular files opened, file names that stay in their folder, and every command's
numeric arguments checked by one shared set of argparse types."""

from __future__ import annotations

import errno
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
from spikeport.runtime.lava import leftovers


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
    from spikeport import api

    for name in ("../../escaped", "sub/model", "..", ""):
        with pytest.raises(ConfigError, match="expected a file name"):
            api.convert(spiky_model("ssa"), tmp_path / "out", name=name, onnx=False)
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
    from spikeport import api
    from spikeport.ir.artifact import float_accuracy

    out = tmp_path / "build"
    first = api.convert(spiky_model("ssa"), out, onnx=False, calibrate=0, eval_samples=8)
    files = json.loads((out / "conversion_report.json").read_text())["files"]
    assert files == {"artifact": "model.spk.h5", "artifact_digest": first.graph.digest}
    assert oct((out / "model.spk.h5").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    old_report = (out / "conversion_report.json").read_text()
    api.convert(spiky_model("ssa", seed=3), out, onnx=False, calibrate=0, eval_samples=8)
    (out / "conversion_report.json").write_text(old_report)  # what a SIGKILL between the renames leaves
    assert not [p for p in out.iterdir() if ".tmp" in p.name]
    for argv in (["inspect", str(out / "model.spk.h5")], ["run", str(out / "model.spk.h5"), "--samples", "4"]):
        assert main(argv) == 0
        assert "belongs to another conversion" in capsys.readouterr().err
    report = api.run(out / "model.spk.h5", samples=4)
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
    stale = tmp_path / f".model.spk.h5.{atomic.HOST_TAG}-{dead}.0123456789abcdef.tmp.h5"
    live = tmp_path / f".model.spk.h5.{atomic.HOST_TAG}-{alive}.0123456789abcdef.tmp.h5"
    other_host = tmp_path / f".model.spk.h5.ffffffff-{dead}.0123456789abcdef.tmp.h5"
    for p in (stale, live, other_host):
        p.write_text("half written")
    with atomic.atomic_write(tmp_path / "model.spk.h5") as tmp:
        tmp.write_text("whole")
    assert not stale.exists() and live.exists() and other_host.exists()

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    left = tmp_path / f"spikeport-lava-{atomic.HOST_TAG}-{dead}-abc"
    running = tmp_path / f"spikeport-netx-{atomic.HOST_TAG}-{alive}-abc"
    for p in (left, running):
        p.mkdir()
        (p / "0.npy").write_bytes(b"x")
    with leftovers.run_temp_dir("lava") as folder:
        assert os.path.isdir(folder) and f"-{alive}-" in folder
    assert not left.exists() and running.exists() and not os.path.exists(folder)


@pytest.mark.lava
@pytest.mark.under_load
def test_sigterm_stops_a_lava_run_in_one_line_and_leaves_nothing(good, tmp_path):
    """What `timeout` and job schedulers send: exit 143, one line, the Lava children, shared memory and the
    run's temporary folder gone."""
    import signal
    import time

    from procs import process_group

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(  # as a background job: SIGINT ignored (under_load), SIGTERM still stops it
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
    from spikeport import api
    from spikeport.errors import ConversionError

    graph = quantized_graph(spiky_model("ssa"), random_images(8, seed=1))
    graph.T = 20_000
    with pytest.raises(ConversionError, match=r"T = 20000: expected 1\.\.10000"):
        artifact.write(graph, tmp_path / "long.spk.h5")
    assert not list(tmp_path.iterdir())
    with pytest.raises(ConfigError, match=r"steps = 20000: expected 1\.\.10000"):
        api.convert_netx(tmp_path / "any.net", tmp_path / "out", steps=20_000)


@pytest.mark.under_load
def test_signals_during_a_conversions_renames_wait_for_its_end_even_with_threads():
    """A signal mask would hold SIGINT in the main thread only: the kernel hands it to another thread, whose C
    handler still interrupts the main thread. The renames must see no KeyboardInterrupt. (Under load, this process
    inherits SIGINT ignored, as a background job does: the handler here is Python's own Ctrl-C, as in a terminal.)"""
    import signal
    import threading
    import time

    from spikeport.atomic import signals_held

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)  # torch's pool stands here
    worker.start()
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with signals_held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # the handler has run by now; nothing was raised inside the block
                inside_done = True
        assert inside_done
    finally:
        signal.signal(signal.SIGINT, before)
        stop.set()
        worker.join()


def test_model_configs_take_numpy_numbers_and_name_a_wrong_type():
    from spikeport.train.model_config import ModelConfig

    cfg = ModelConfig(embed_dim=np.int64(64), num_heads=4, mlp_ratio=np.float64(4.0), pool_stages=[np.int64(2)])
    assert (type(cfg.embed_dim), type(cfg.mlp_ratio), cfg.pool_stages) == (int, float, (2,))
    with pytest.raises(ConfigError, match=r"'embed_dim' = '64' \(str\): expected int in \[1, 16384\]"):
        ModelConfig(embed_dim="64")


def test_netx_flatten_dense_kernels_may_cover_the_whole_map():
    """netx's flatten -> dense is a conv whose kernel is the input map (DVS128: 128 x 128)."""
    from spikeport.ir.kernels import spec

    kernel = next(a for a in spec("conv").attrs if a.name == "kernel")
    assert kernel.check((128, 128)) is None and kernel.check((3, 3, 3)) and kernel.check((0, 3))


# ------------------------------------------------------------------- write failures (issue 26, requirement 3)
WRITE_LIMIT = 512  # bytes a file may grow to (RLIMIT_FSIZE) in the commands under test: every output is larger

# One process runs every writing command under RLIMIT_FSIZE (torch, h5py and matplotlib imported first, their
# caches written before the limit), as `ulimit -f` would; Python ignores SIGXFSZ, so a write past the limit fails
# with EFBIG. HDF5 once ended such a process with SIGSEGV: the driver surviving is part of the test.
DRIVER = r"""
import contextlib, io, json, resource, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot, h5py, torch  # noqa: imported (and their caches written) before the limit
from spikeport.cli import main

cases, limit = json.loads(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
results = {}
for name, argv in cases.items():
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code
        except BaseException as error:  # what the test looks for
            status = f"TRACEBACK {type(error).__name__}: {str(error)[:300]}"
    results[name] = [status, err.getvalue()]
sys.stdout.write(json.dumps(results))
"""


def _netx_file(path):
    from test_fuzz import netx_file, netx_spike_inputs

    return netx_file(path), netx_spike_inputs(path.with_suffix(".npy"), (6, 6, 2))


@pytest.fixture(scope="module")
def under_write_limit(good, tmp_path_factory):
    """{command: (status, stderr, the folder it wrote in, its files before)} of every writing command run under
    RLIMIT_FSIZE = WRITE_LIMIT, each over old files that must be left as they were."""
    from spikeport.train.checkpoint import FORMAT, VERSION, save_atomic

    root = tmp_path_factory.mktemp("limited")
    model = spiky_model("ssa")
    ckpt = root / "checkpoint.pt"
    save_atomic(
        {
            "format": FORMAT,
            "version": VERSION,
            "model": model.state_dict(),
            "epoch": 1,
            "model_config": model.cfg.to_dict(),
            "train_config": {"dataset": "digits"},
        },
        ckpt,
    )
    run_json = root / "run.json"
    assert main(["run", str(good), "--samples", "4", "--json", str(run_json)]) == 0
    netx, inputs = _netx_file(root / "net.net")
    (root / "tiny.yaml").write_text(
        "model: {embed_dim: 16, depth: 1, num_heads: 2, T: 2, neuron_backend: torch}\nbatch_size: 64\naugment: none\n"
    )
    cases = {
        "run --json": ["run", str(good), "--samples", "4", "--json", "{out}/run.json"],
        "run netx --json": ["run", str(netx), "--inputs", str(inputs), "--json", "{out}/run.json"],
        "report --json": ["report", str(run_json), "--no-gpu", "--quiet", "--json", "{out}/summary.json"],
        "report --html": ["report", str(run_json), "--no-gpu", "--quiet", "--html", "{out}/summary.html"],
        "convert": ["convert", str(ckpt), "--out", "{out}", "--calibrate", "0", "--eval-samples", "4", "--no-onnx"],
        "convert with ONNX": ["convert", str(ckpt), "--out", "{out}", "--calibrate", "0", "--eval-samples", "4"],
        "convert netx": ["convert", str(netx), "--out", "{out}"],
        "export --netx": ["export", str(good), "--netx", "{out}/model.net"],
        "export --nir": ["export", str(ckpt), "--nir", "{out}/model.nir"],
        "train": ["train", "--config", str(root / "tiny.yaml"), "--epochs", "1", "--out", "{out}", "--quiet"],
        "analyze": ["analyze", str(ckpt), "--out", "{out}", "--samples", "4"],
        "simulate": ["simulate", "particles", "--out", "{out}", "--n", "8", "--t-end", "0.5", "--no-animation"],
    }
    before = {}
    for name in cases:
        out = root / "out" / name.replace(" ", "_").replace("-", "")
        out.mkdir(parents=True)
        for old in ("run.json", "summary.json", "summary.html", "model.spk.h5", "conversion_report.json", "model.net"):
            (out / old).write_text(f"old {old}")
        cases[name] = [a.replace("{out}", str(out)) for a in cases[name]]
        before[name] = (out, {p.name: p.read_bytes() for p in out.iterdir()})
    tmp = root / "tmp"
    tmp.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(cases), str(WRITE_LIMIT)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TMPDIR": str(tmp), "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, f"the driver died ({proc.returncode}): {proc.stderr[-3000:]}"
    results = json.loads(proc.stdout)
    return {name: (*results[name], *before[name]) for name in cases}, tmp


WRITERS = (
    "run --json",
    "run netx --json",
    "report --json",
    "report --html",
    "convert",
    "convert with ONNX",
    "convert netx",
    "export --netx",
    "export --nir",
    "train",
    "analyze",
    "simulate",
)


@pytest.mark.parametrize("command", WRITERS)
def test_a_write_that_fails_is_one_line_and_leaves_no_partial_file(under_write_limit, command):
    """Under `ulimit -f`: exit 2 and one line naming the file; the old files as they were; nothing half-written
    (a new file is smaller than the limit: written whole), in the output folder or in the temporary folder."""
    results, tmp = under_write_limit
    status, err, out, old = results[command]
    errors = [line for line in err.splitlines() if "error" in line]  # a progress bar may have been drawn before
    assert status == 2 and len(errors) == 1 and "(File too large)" in errors[0], (status, err[-2000:])
    assert "Traceback" not in err
    now = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {name: now.get(name) for name in old} == old
    new = {name: len(data) for name, data in now.items() if name not in old}
    assert all(size < WRITE_LIMIT and ".tmp" not in name for name, size in new.items()), new
    # nothing of spikeport's: no fallback file or folder, no temporary folder left (torch's caches are torch's)
    assert not [p.name for p in tmp.iterdir() if p.name.startswith(("spikeport-", "tmp"))]


def test_a_redirected_stdout_that_fails_is_one_line(good, tmp_path):
    """`spikeport inspect --json > file` under `ulimit -f`: the error is one line, not a traceback at exit."""
    import resource

    limit = 1024
    with open(tmp_path / "inspect.json", "w") as stdout:
        proc = subprocess.run(
            [sys.executable, "-m", "spikeport", "inspect", str(good), "--json"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
        )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "File too large" in lines[0], proc.stderr[-2000:]


def test_a_fallback_that_fails_too_saves_nothing_and_says_so(tmp_path, monkeypatch):
    import tempfile

    from spikeport.atomic import write_or_fallback, write_text
    from spikeport.errors import OutputPathError

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    target = tmp_path / "gone" / "run.json"
    (tmp_path / "gone").write_text("the folder became a file")

    def write(path):
        if path.parent == folder:
            folder.chmod(0o500)  # the temporary folder fails as well
            try:
                return write_text(path, "x" * 10_000)
            finally:
                folder.chmod(0o700)
        return write_text(path, "x")

    if os.geteuid() == 0:  # root writes into a read-only folder: fail the fallback by a file in its place instead
        folder.rmdir()
        folder.write_text("not a folder")
    with pytest.raises(
        OutputPathError, match=r"could not write the run report .* nor save it in .*: nothing was saved"
    ):
        write_or_fallback(target, write, "the run report")
    left_behind = list(folder.iterdir()) if folder.is_dir() else []
    assert not left_behind


def test_a_signal_right_after_the_temp_file_is_created_leaves_nothing(tmp_path, monkeypatch):
    """A SIGTERM between os.open and the temporary file's registration once left a 0-byte temp (1 in 24 real
    SIGTERMs during convert): the name is registered before the file exists."""
    from spikeport import atomic

    real_open = os.open

    def open_then_interrupt(path, flags, mode=0o777):
        fd = real_open(path, flags, mode)
        os.close(fd)
        raise KeyboardInterrupt  # delivered the moment the file exists

    monkeypatch.setattr(atomic.os, "open", open_then_interrupt)
    for write in (
        lambda: atomic.write_text(tmp_path / "a.json", "x"),
        lambda: atomic.atomic_write_all([tmp_path / "b.spk.h5", tmp_path / "b.json"]).__enter__(),
    ):
        with pytest.raises(KeyboardInterrupt):
            write()
        assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())


def test_a_set_whose_second_rename_fails_gets_its_first_file_back(tmp_path, monkeypatch):
    """atomic_write_all replaces all of its files or none: should a rename fail after the first, the targets
    already replaced get their old files back."""
    from spikeport import atomic
    from spikeport.errors import WriteError

    a, b, c = tmp_path / "model.spk.h5", tmp_path / "model.onnx", tmp_path / "conversion_report.json"
    a.write_text("old artifact")
    c.write_text("old report")
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise PermissionError(1, "Operation not permitted", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", replace)
    with pytest.raises(WriteError, match=r"conversion_report\.json: could not be written .*none of the set"):
        with atomic.atomic_write_all([a, b, c]) as temps:
            for tmp in temps:
                tmp.write_text("new")
    assert (a.read_text(), b.exists(), c.read_text()) == ("old artifact", False, "old report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conversion_report.json", "model.spk.h5"]

    def no_links(src, dst, **kw):  # FAT, some network file systems
        raise OSError(errno.EPERM, "Operation not permitted", str(src))

    calls.clear()
    monkeypatch.setattr(atomic.os, "link", no_links)
    with pytest.raises(WriteError, match=r"model\.spk\.h5 of the set already replaced \(no hard link here"):
        with atomic.atomic_write_all([a, b, c]) as temps:
            for tmp in temps:
                tmp.write_text("new")
    assert (a.read_text(), b.exists(), c.read_text()) == ("new", False, "old report")  # said, not hidden
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conversion_report.json", "model.spk.h5"]


def _immutable(path) -> bool:
    """Make ``path`` immutable (chattr +i: root with CAP_LINUX_IMMUTABLE on ext4/xfs/btrfs); False where not."""
    import shutil

    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0


@pytest.fixture
def immutable_files():
    made = []
    yield made
    for path in made:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)


def test_an_immutable_target_is_one_line_and_replaces_nothing(good, tmp_path, immutable_files):
    """The report alone immutable: the new artifact once replaced the old one beside the old report, and the message
    said nothing was written. Now nothing is replaced; `export --netx` onto an immutable file is one line too."""
    out = tmp_path / "build"
    assert main(["convert", str(_netx_file(tmp_path / "n.net")[0]), "--out", str(out)]) == 0
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    if not _immutable(out / "conversion_report.json"):
        pytest.skip("chattr +i is not possible here (needs root and CAP_LINUX_IMMUTABLE)")
    immutable_files.append(out / "conversion_report.json")
    netx_path, _ = _netx_file(tmp_path / "other.net")
    with h5py.File(netx_path, "r+") as f:
        f["layer/4/weight"][0, 0] = 7  # another network, another artifact
    status = main(["convert", str(netx_path), "--out", str(out)])
    assert status == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    target = tmp_path / "export.net"
    target.write_text("old")
    assert _immutable(target)
    immutable_files.append(target)
    proc = subprocess.run(
        [sys.executable, "-m", "spikeport", "export", str(good), "--netx", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Operation not permitted" in lines[0], proc.stderr
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_run_report_limits_are_the_artifact_limits():
    """run_report sits below the IR and keeps its own copy of the limits it checks."""
    from spikeport import run_report
    from spikeport.ir import limits

    assert (run_report.MAX_T, run_report.MAX_SAMPLES) == (limits.MAX_T, limits.MAX_SAMPLES)


# ------------------------------------------------------------------------------------------- round 3 (issue 35)
def _flat_input_block_net(path, delay=None):
    """An Input block (CUBA, iDecay 4096: lava-dl drives it through its bias) of 16 flat inputs -> dense 12 with
    ``delay`` (None: no dataset) -> dense 10: mnist.net in small."""
    rng = np.random.default_rng(3)

    def neuron(g, vth=80):
        n = g.create_group("neuron")
        n.create_dataset("type", data=b"CUBA")
        for key, value in (("iDecay", 4096), ("vDecay", 123), ("vThMant", vth), ("refDelay", 1)):
            n.create_dataset(key, data=np.int64(value))

    with h5py.File(path, "w") as f:
        layers = f.create_group("layer")
        for i, (kind, shape, weight) in enumerate(
            (("input", 16, None), ("dense", 12, (12, 16)), ("dense", 10, (10, 12)))
        ):
            g = layers.create_group(str(i))
            g.create_dataset("type", (1,), "S10", [kind.encode()])
            g.create_dataset("shape", data=np.array([shape]))
            neuron(g)
            if weight is not None:
                g.create_dataset("weight", data=rng.integers(-20, 80, weight).astype(np.float32))
        if delay is not None:
            layers["1"].create_dataset("delay", data=np.asarray(delay, np.float32))
        sim = f.create_group("simulation")
        sim.create_dataset("Ts", data=np.int64(1))
        sim.create_dataset("tSample", data=np.int64(8))
    return path


def test_netx_bias_drive_takes_delays_on_a_flat_input(tmp_path):
    """Regression: `convert mnist.net` with per-synapse delays on its first dense layer was refused ("axonal delays
    on a dense layer over a map (H, W, C)"): the default bias drive made the flat input a (1, 1, 784) map. The dense
    layer over (1, 1, C) is a dense; with all delays 0 it computes what the file without delays computes."""
    from spikeport import api

    rng = np.random.default_rng(0)
    delayed = _flat_input_block_net(tmp_path / "delayed.net", rng.integers(0, 3, (12, 16)))
    zero = _flat_input_block_net(tmp_path / "zero.net", np.zeros((12, 16)))
    plain = _flat_input_block_net(tmp_path / "plain.net")
    images = tmp_path / "x.npy"
    np.save(images, rng.integers(0, 120, (3, 16)).astype(np.int32))
    reports = {}
    for net in (delayed, zero, plain):
        done = api.convert_netx(net, tmp_path / net.stem)
        assert done.report["input_drive"] == "bias" and done.graph.nodes["layer1.dense"].op == (
            "conv" if net is plain else "dense"
        )
        reports[net.stem] = api.run(done.artifact_path, inputs=images, steps=8)
    spikes = {name: [row.spikes for row in r.layers if row.op == "lif"] for name, r in reports.items()}
    assert spikes["zero"] == spikes["plain"] and sum(spikes["plain"][1]) > 0
    assert spikes["delayed"][0] == spikes["plain"][0] and spikes["delayed"][1:] != spikes["plain"][1:]


@pytest.mark.lava
def test_netx_bias_drive_with_delays_on_a_flat_input_is_bit_exact_on_lava(tmp_path):
    from spikeport import api

    rng = np.random.default_rng(0)
    net = _flat_input_block_net(tmp_path / "delayed.net", rng.integers(0, 3, (12, 16)))
    np.save(tmp_path / "x.npy", rng.integers(0, 120, (1, 16)).astype(np.int32))
    done = api.convert_netx(net, tmp_path / "out")
    report = api.run(done.artifact_path, inputs=tmp_path / "x.npy", steps=8, backend="lava", compare="reference")
    assert report.identical and sum(report.layer("layer1.neuron").spikes) > 0


def _limited(resource_name: str, value: int):
    import resource

    limit = getattr(resource, resource_name)
    return lambda: resource.setrlimit(limit, (value, value))


@pytest.mark.lava
def test_a_lava_run_out_of_file_descriptors_is_one_line_about_shared_memory(good, tmp_path):
    """`ulimit -n 16`, stdout and stderr pipes: the line blamed "the output (stdout)", and the resource tracker
    printed a KeyError traceback after it (a segment failing half-made unregisters a name it never registered)."""
    proc = subprocess.run(
        [sys.executable, "-m", "spikeport", "run", str(good), "--backend", "lava", "--samples", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        preexec_fn=_limited("RLIMIT_NOFILE", 16),
    )
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("lava ")]  # its progress lines
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-3000:]
    assert "shared memory in /dev/shm" in errors[0] and "`ulimit -n`, is 16" in errors[0], errors
    assert "stdout" not in errors[0] and "Traceback" not in proc.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(("spikeport-", "pymp-"))]


SHM_LIMIT = """
import resource, sys
import numpy as np
from spikeport.runtime.lava.compat import import_lava
from spikeport.runtime.lava.session import LavaSession
from spikeport.errors import LavaRunError
import_lava()
from lava.magma.core.run_configs import Loihi2SimCfg
from lava.proc.io.source import RingBuffer
from lava.proc.lif.process import LIF
source, lif = RingBuffer(data=np.zeros((20000, 4), int)), LIF(shape=(20000,))
source.s_out.connect(lif.a_in)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))  # a channel of 4 messages of 20000 values is larger
try:
    with LavaSession(lif, Loihi2SimCfg(select_tag="fixed_pt")) as session:
        session.run(2)
except LavaRunError as err:
    print("ERROR", err)
"""


@pytest.mark.lava
def test_a_lava_run_under_a_file_size_limit_names_shared_memory_or_its_recordings(good, tmp_path):
    """`ulimit -f`: a channel's segment that cannot grow said "the output (stdout): File too large"; the run's
    recordings (numpy memmaps, which name no file) said the same."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", SHM_LIMIT], capture_output=True, text=True, timeout=300, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "ERROR Lava could not create its shared memory in /dev/shm" in proc.stdout, proc.stdout + proc.stderr
    assert "File too large: the file-size limit, `ulimit -f`, is 64 KiB" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "spikeport", "run", str(good), "--backend", "lava", "--samples", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        preexec_fn=_limited("RLIMIT_FSIZE", 8192),
    )
    errors = [line for line in proc.stderr.splitlines() if not line.startswith("lava ")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-3000:]
    assert "(the run's temporary recordings): could not be written (File too large" in errors[0], errors
    assert "stdout" not in errors[0]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(("spikeport-", "pymp-"))]


def test_torch_that_cannot_load_is_one_line_naming_the_limit():
    """`ulimit -v 300000`: torch's ImportError ("failed to map segment") was a traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "spikeport", "info", "digits-tiny"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited("RLIMIT_AS", 300_000 * 1024),
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert ("could not load torch" in lines[0] or "out of memory" in lines[0]) and "`ulimit -v`" in lines[0], lines


@pytest.mark.lava
def test_the_leftovers_of_a_killed_lava_run_are_removed_by_the_next_run(good, tmp_path, monkeypatch):
    """SIGKILL to the whole process group (a job scheduler, `kill -9 -PGID`): the resource tracker dies too, so
    nothing unlinks the run's /dev/shm segments, and multiprocessing's `pymp-*` folder stays in TMPDIR. The next
    run removes them with the run's folder, whose record names them."""
    import signal
    import tempfile
    import time

    from procs import process_group
    from spikeport import api
    from spikeport.runtime.lava.leftovers import LEFTOVERS_FILE

    proc = subprocess.Popen(
        [sys.executable, "-m", "spikeport", "run", str(good), "--backend", "lava", "--samples", "400"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        start_new_session=True,
    )
    deadline, record = time.monotonic() + 120, []
    while not record and time.monotonic() < deadline and proc.poll() is None:
        record = list(tmp_path.glob(f"spikeport-lava-*/{LEFTOVERS_FILE}"))
        time.sleep(0.1)
    assert record, "the Lava run did not start"
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 15
    while process_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = json.loads(record[0].read_text())
    segments = [s for s in left["shm"] if os.path.exists(f"/dev/shm/{s}")]
    pymp = [p.name for p in tmp_path.iterdir() if p.name.startswith("pymp-")]
    assert segments and pymp and len(list(tmp_path.glob("spikeport-*"))) >= 2, (segments, list(tmp_path.iterdir()))

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    api.run(good, backend="lava", samples=1)
    assert not [s for s in segments if os.path.exists(f"/dev/shm/{s}")]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(("spikeport-", "pymp-"))]


def test_a_dead_runs_record_removes_only_shared_memory_and_multiprocessing_folders(tmp_path, monkeypatch):
    """The record is read from a folder anyone could have made: names of other kinds are left alone."""
    import tempfile

    from spikeport import atomic

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / f"spikeport-lava-{atomic.HOST_TAG}-{_dead_pid()}-abc"
    folder.mkdir()
    (tmp_path / "pymp-abcd1234").mkdir()
    keep = tmp_path / "keep"
    keep.mkdir()
    segment = f"psm_{os.urandom(4).hex()}"
    open(f"/dev/shm/{segment}", "w").close()
    try:
        leftovers.note_run_leftovers(folder, [segment, "../etc/passwd"], [str(tmp_path / "pymp-abcd1234"), str(keep)])
        removed = leftovers.remove_dead_runs()
        assert not os.path.exists(f"/dev/shm/{segment}") and not (tmp_path / "pymp-abcd1234").exists()
        assert keep.exists() and not folder.exists() and str(folder) in removed
    finally:
        if os.path.exists(f"/dev/shm/{segment}"):
            os.unlink(f"/dev/shm/{segment}")


def _cli(argv, **kw):
    proc = subprocess.run(
        [sys.executable, "-m", "spikeport", *map(str, argv)], capture_output=True, text=True, timeout=300, **kw
    )
    return proc.returncode, proc.stderr.strip().splitlines()


def test_netx_messages_name_the_file_and_the_field(tmp_path):
    """A huge tSample on convert said "steps = 1000000000" (no file, no field); a truncated .net was explained as
    "an HDF5 file ... not a torch checkpoint" (convert took it for a checkpoint)."""
    net, _ = _netx_file(tmp_path / "n.net")
    big = tmp_path / "big.net"
    big.write_bytes(net.read_bytes())
    with h5py.File(big, "r+") as f:
        del f["simulation/tSample"]
        f["simulation/tSample"] = np.int64(10**9)
    status, lines = _cli(["convert", big, "--out", tmp_path / "out"])
    assert status == 2 and len(lines) == 1, lines
    assert f"{big}: field 'simulation/tSample': is 1000000000, expected 1..10000" in lines[0]
    assert _cli(["convert", big, "--out", tmp_path / "out", "--steps", "8"])[0] == 0
    cut = tmp_path / "cut.net"
    cut.write_bytes(net.read_bytes()[: net.stat().st_size // 2])
    for command in (["convert", cut, "--out", tmp_path / "out2"], ["run", cut], ["check-hw", cut]):
        status, lines = _cli(command)
        assert status == 2 and len(lines) == 1 and "is not a readable HDF5 file (truncated" in lines[0], lines


def test_a_fifo_in_place_of_a_conversion_output_is_refused_before_the_conversion(tmp_path):
    """`convert --out OUT` with a FIFO at OUT/model.spk.h5 was refused only once the conversion was done."""
    from spikeport.train.checkpoint import FORMAT, VERSION, save_atomic

    model = spiky_model("ssa")
    ckpt = tmp_path / "c.pt"
    save_atomic({"format": FORMAT, "version": VERSION, "model": model.state_dict(), "epoch": 1,
                 "model_config": model.cfg.to_dict(), "train_config": {"dataset": "digits"}}, ckpt)  # fmt: skip
    net, _ = _netx_file(tmp_path / "n.net")
    for source, name in ((ckpt, "model.spk.h5"), (ckpt, "conversion_report.json"), (net, "model.spk.h5")):
        out = tmp_path / f"out-{source.suffix[1:]}-{name}"
        out.mkdir()
        os.mkfifo(out / name)
        status, lines = _cli(["convert", source, "--out", out])  # no --quiet: a progress line would be a 2nd line
        assert status == 2 and len(lines) == 1, lines
        assert f"conversion output {out / name}: exists and is not a regular file (a FIFO" in lines[0]


def test_a_profile_path_that_is_a_folder_or_a_fifo_says_so(good, tmp_path):
    """Both said "hardware profile file not found"."""
    folder, fifo = tmp_path / "chip", tmp_path / "chip.yaml"
    folder.mkdir()
    os.mkfifo(fifo)
    for path, reason in ((folder, "a folder, expected a hardware profile file"), (fifo, "not a regular file (a FIFO")):
        status, lines = _cli(["check-hw", good, "--profile", path])
        assert status == 2 and len(lines) == 1 and f"{path}: {reason}" in lines[0], lines


def test_a_run_whose_activations_overflow_says_so_at_the_end(good, tmp_path):
    """A weight exponent 10 steps too large overflows thousands of LIF inputs: only the run report said so."""
    edited_path = edited(good, tmp_path, _raise_first_conv_exponent)
    status, lines = _cli(["run", edited_path, "--samples", "8", "--quiet", "--json", tmp_path / "r.json"])
    warning = [line for line in lines if "warning" in line]
    assert status == 0 and len(warning) == 1, lines
    overflows = sum(
        sum(layer.get("act_overflows", [0])) for layer in json.loads((tmp_path / "r.json").read_text())["layers"]
    )
    assert overflows > 1000 and f"warning: {overflows:,} LIF inputs overflowed" in warning[0], warning
    assert "patch_embed.proj_lif" in warning[0]
    status, lines = _cli(["run", good, "--samples", "8", "--quiet"])
    assert status == 0 and not [line for line in lines if "warning" in line], lines


def _raise_first_conv_exponent(f):
    for i in range(len(f["nodes"])):
        node = f["nodes"][str(i)]
        if node.attrs["op"] == "conv":
            attrs = json.loads(node.attrs["attrs"])
            attrs["weight_exp"] += 10
            node.attrs["attrs"] = json.dumps(attrs)
            return


def test_report_writes_its_json_when_its_page_cannot_be_written(good, tmp_path, immutable_files):
    """Regression: `report A.json --json R.json --html P.html` with P that cannot be written (here immutable) said
    one line about the page, exit 2, and R was neither written nor saved: the CLI handed only the page to the API,
    whose failure skipped the JSON."""
    run_json = tmp_path / "run.json"
    assert main(["run", str(good), "--samples", "4", "--json", str(run_json)]) == 0
    page, summary = tmp_path / "page.html", tmp_path / "summary.json"
    page.write_text("old page")
    if not _immutable(page):
        pytest.skip("chattr +i is not possible here (needs root and CAP_LINUX_IMMUTABLE)")
    immutable_files.append(page)
    status, lines = _cli(
        ["report", run_json, "--no-gpu", "--quiet", "--json", summary, "--html", page],
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    errors = [line for line in lines if "error" in line]
    assert status == 2 and len(errors) == 1 and str(page) in errors[0], lines
    assert json.loads(summary.read_text())["runs"][0]["samples"] == 4 and page.read_text() == "old page"


def test_report_reads_a_run_report_once_and_copies_it_once(good, tmp_path, monkeypatch):
    """`report` on a run report of 18 000 layers took 73 s (43 s before the gathering stage): the report was
    validated twice (as the file was read, and again in gather through a copy), and copied whole twice more to
    check its model config. Now: read and validated once (the op registry with it), and never copied (the energy
    estimates read the record). The calls pass through to the real methods; the test counts them."""
    from spikeport import api
    from spikeport.run_report import RunReport

    run_json = tmp_path / "run.json"
    assert main(["run", str(good), "--samples", "2", "--json", str(run_json)]) == 0
    calls = {"from_dict": 0, "validate": 0, "to_dict": 0}
    from_dict, validate, to_dict = RunReport.from_dict.__func__, RunReport.validate, RunReport.to_dict

    def counted_from_dict(cls, *args, **kwargs):
        calls["from_dict"] += 1
        return from_dict(cls, *args, **kwargs)

    def counted_validate(self, *args, **kwargs):
        calls["validate"] += 1
        return validate(self, *args, **kwargs)

    def counted_to_dict(self):
        calls["to_dict"] += 1
        return to_dict(self)

    monkeypatch.setattr(RunReport, "from_dict", classmethod(counted_from_dict))
    monkeypatch.setattr(RunReport, "validate", counted_validate)
    monkeypatch.setattr(RunReport, "to_dict", counted_to_dict)
    api.report([run_json], gpu_baseline=False, chip=False)
    assert calls == {"from_dict": 0, "validate": 1, "to_dict": 0}, calls


def test_a_run_report_made_in_memory_is_held_to_the_rules_of_a_file(good, tmp_path):
    """One validator (``RunReport.validate``): a record handed to ``api.report`` is refused naming the same field as
    the same run report written to a file and read back (it was checked through a JSON round trip)."""
    from spikeport import api
    from spikeport.errors import ReportError
    from spikeport.run_report import RunReport

    run_json = tmp_path / "run.json"
    assert main(["run", str(good), "--samples", "2", "--json", str(run_json)]) == 0
    lif = 2  # patch_embed.proj_lif
    edits = {
        "layers[2].op": lambda r: setattr(r.layers[lif], "op", "softmax"),
        "layers[2].spikes": lambda r: r.layers[lif].counts.update(spikes=[10**9] * r.T),
        "layers[2].synops": lambda r: r.layers[lif].counts.update(synops=[1, 1]),
        "layers[2].fan_out": lambda r: setattr(r.layers[lif], "fan_out", -1.0),
        "samples": lambda r: setattr(r, "samples", 0),
        "T": lambda r: setattr(r, "T", 0),
        "predictions": lambda r: r.predictions.append(0),
    }
    for field, edit in edits.items():
        record = RunReport.from_json(run_json)
        edit(record)
        with pytest.raises(ReportError) as in_memory:
            api.report([record], gpu_baseline=False, chip=False, cache=False)
        written = tmp_path / "edited.json"
        record.to_json(written)
        with pytest.raises(ReportError) as from_file:
            api.report([written], gpu_baseline=False, chip=False, cache=False)
        assert in_memory.value.field == from_file.value.field == field, (field, in_memory.value, from_file.value)


# ------------------------------------------------------------------------- issue 42: no interrupt lost (item 6)
PHASES = """
    import os, signal, sys, threading
    from spikeport.runtime.lava.compat import import_lava
    from spikeport.runtime.lava import session as S
    import_lava()
    from lava.magma.core.process.process import AbstractProcess
    from lava.magma.core.run_configs import Loihi2SimCfg
    from lava_testprocs.boom import boom_network

    def ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)

    forks = [0]
    def at_fork():  # in Lava's forks: where a raised KeyboardInterrupt is printed and dropped ("Exception ignored")
        forks[0] += 1
        if phase == "fork" and forks[0] == 3 and S._PDEATHSIG_OWNER["pid"]:
            ctrl_c()
    os.register_at_fork(after_in_parent=at_fork)
    compile_, stop_, folders_ = AbstractProcess.compile, S.LavaSession._graceful_stop, S._manager_folders
    stopping_now = [False]
    def compiling(self, *args, **kwargs):
        if phase == "compile":
            ctrl_c()
        return compile_(self, *args, **kwargs)
    def stopping(self, *args):  # a second Ctrl-C as the first one's teardown begins
        stopping_now[0] = phase == "teardown"
        if stopping_now[0]:
            ctrl_c()
        return stop_(self, *args)
    def manager_folders(mi):  # and a third one half-way: children joined, shared memory not yet released
        if stopping_now[0]:
            ctrl_c()
        return folders_(mi)
    AbstractProcess.compile, S.LavaSession._graceful_stop = compiling, stopping
    S._manager_folders = manager_folders

    for phase in ("compile", "fork", "run", "teardown"):
        *_, lif = boom_network(sleep_s=0.005)
        session = S.LavaSession(lif, Loihi2SimCfg(select_tag="fixed_pt"))
        if phase in ("run", "teardown"):
            threading.Timer(1.0, ctrl_c).start()
        try:
            with session:
                session.run(10**7)
            print(phase, "NOT INTERRUPTED", flush=True)
        except KeyboardInterrupt:
            left = session.find_leftovers()
            print(phase, "INTERRUPTED", "children", left.children, "segments", left.segments, flush=True)
"""


@pytest.mark.lava
@pytest.mark.under_load
def test_ctrl_c_stops_a_lava_network_in_every_phase_and_leaves_nothing():
    """A Ctrl-C as the network compiles, as Lava forks its children (inside an at-fork hook, where Python drops a
    raised KeyboardInterrupt), while it runs and during the teardown of an earlier Ctrl-C: each ends in
    KeyboardInterrupt with no child and no segment of the session left, in one process, beside busy cores."""
    import signal
    import textwrap
    import time

    from procs import process_group, with_ctrl_c
    from spikeport.runtime.lava.session import shm_segments

    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": tests + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        with_ctrl_c([sys.executable, "-u", "-c", textwrap.dedent(PHASES)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=600)  # a bound on a hang: 4 small networks take ~20 s on a busy machine
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("an interrupted network did not stop") from None
    lines = [line for line in out.splitlines() if line.split(" ")[0] in ("compile", "fork", "run", "teardown")]
    assert [line.split(" ")[:2] for line in lines] == [
        [phase, "INTERRUPTED"] for phase in ("compile", "fork", "run", "teardown")
    ], out
    assert all(line.endswith("children [] segments []") for line in lines), out
    assert proc.returncode == 0 and "Traceback" not in out and "Exception ignored" not in out, out
    deadline = time.monotonic() + 10
    while process_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_group(proc.pid)
    assert not {s for s in shm_segments() if s.startswith("psm_")} & set(out.split())


@pytest.mark.lava
@pytest.mark.under_load
def test_ctrl_c_to_a_partitioned_lava_run_exits_130_and_leaves_nothing(good, tmp_path):
    """A terminal's Ctrl-C (SIGINT to the process group) while the second part of a partitioned run is up: exit 130,
    one line, no process of the group, nothing of spikeport's in the temporary folder."""
    import signal
    import time

    from procs import process_group, with_ctrl_c

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    argv = [sys.executable, "-m", "spikeport", "run", str(good), "--backend", "lava", "--partition", "2"]
    proc = subprocess.Popen(
        with_ctrl_c([*argv, "--samples", "80"]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    lines: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:  # the stage lines: the second part's network is built once the first has run
        lines.append(line)
        if line.startswith("lava part 2/2 start:"):
            break
    assert proc.poll() is None, "".join(lines)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)  # a bound on a hang
    err = "".join(lines) + err
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "spikeport run: interrupted", err
    assert "Traceback" not in err, err
    deadline = time.monotonic() + 15
    while process_group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not process_group(proc.pid)
    assert not list(tmp_path.glob("spikeport-*")) and not list(tmp_path.glob("pymp-*"))


# --------------------------------------------------------------- issue 42: the report cache as untrusted input (1)
def _reseal_entry(path, edit) -> None:
    """Edit a cache entry's value and recompute its digest, as someone who meant the edit would."""
    from spikeport.gather.cache import entry_digest

    entry = json.loads(path.read_text())
    entry["value"] = edit(entry["value"])
    entry["digest"] = entry_digest(entry["key"], entry["value"])
    path.write_text(json.dumps(entry))


def test_a_poisoned_report_cache_is_worked_out_again_and_named(good, tmp_path):
    """Every entry a report keeps, each damaged another way (a figure edited, a re-sealed config of another model, a
    FIFO, a link to /dev/zero, a 3 GB sparse file): the next report is the first one's, computes exactly those
    again, names each file once, and replaces them with intact entries that a third report reads back."""
    from spikeport import api

    run_json = tmp_path / "run.json"
    assert main(["run", str(good), "--samples", "4", "--json", str(run_json)]) == 0
    cache = tmp_path / "cache"
    options = dict(gpu_baseline=False, cpu_baseline=False, cache=cache)
    first = api.report([run_json], **options).to_dict()
    entries = {p.name.split("-")[0]: p for p in cache.iterdir()}
    assert set(entries) == {"chip", "claim", "config", "cores", "memory"}

    chip = json.loads(entries["chip"].read_text())
    chip["value"]["cores"] = 4242.4242  # printed as the model's cores, once
    entries["chip"].write_text(json.dumps(chip))
    _reseal_entry(entries["config"], lambda v: dict(v, embed_dim=4096))  # another model's memory and GPU figures
    entries["memory"].unlink()
    os.mkfifo(entries["memory"])  # hung `report` forever
    entries["claim"].unlink()
    entries["claim"].symlink_to("/dev/zero")  # read until memory ran out
    with open(entries["cores"], "r+b") as f:
        f.truncate(3 << 30)  # sparse: 3 GB declared, nothing stored

    notes: list[str] = []
    second = api.report([run_json], progress=notes.append, **options).to_dict()
    assert second == first
    named = {kind: [n for n in notes if path.name in n] for kind, path in entries.items()}
    assert all(len(found) == 1 for found in named.values()), notes
    assert "digest does not match" in named["chip"][0] and "value.embed_dim: 4096" in named["config"][0]
    assert "FIFO" in named["memory"][0] and "symbolic link (to /dev/zero)" in named["claim"][0]
    assert f"{3 << 30} bytes" in named["cores"][0]
    assert all(p.is_file() and not p.is_symlink() and p.stat().st_size < 1 << 20 for p in entries.values())

    notes.clear()
    assert api.report([run_json], progress=notes.append, **options).to_dict() == first
    assert not [n for n in notes if "report cache" in n], notes


CACHE_CASES = {  # what a damaged or hostile chip entry holds -> a word of the note that refuses it
    "truncated": (lambda e: json.dumps(e)[:-30], "not JSON"),
    "NaN": (lambda e: json.dumps(e).replace('"cores": 100', '"cores": NaN'), "NaN"),
    "a list": (lambda e: "[1, 2]", "not a cache entry"),
    "no digest": (lambda e: json.dumps({"key": e["key"], "value": e["value"]}), "not a cache entry"),
    "figure edited": (lambda e: json.dumps(dict(e, value=dict(e["value"], cores=4242))), "digest"),
    "another key": (lambda e: json.dumps(dict(e, key=dict(e["key"], profile="x"))), "another key"),
    "deep": (lambda e: "[" * 100_000 + "]" * 100_000, "not JSON"),
}
RESEALED = {  # re-sealed values: intact entries that are no chip footprint
    "value a string": (lambda v: "x", "expected a ChipFootprint object"),
    "value an object": (lambda v: {}, "value.profile: missing"),
    "value a list": (lambda v: [v], "expected a ChipFootprint object"),
    "cores 4242.4242": (lambda v: dict(v, cores=4242.4242), "value.cores: expected int"),
    "cores negative": (lambda v: dict(v, cores=-4), "value.cores: -4 is negative"),
    "cores a bool": (lambda v: dict(v, cores=True), "value.cores: expected int"),
    "chips a string": (lambda v: dict(v, chips="two"), "value.chips: expected int | None"),
    "a field more": (lambda v: dict(v, energy_j=1.0), "value.energy_j: ChipFootprint has no such field"),
    "verdict a number": (lambda v: dict(v, verdict=1), "value.verdict: expected str"),
}


def _chip_value() -> dict:
    return {
        "profile": "loihi2", "artifact": "m.spk.h5", "cores": 100, "chips": 1, "neurons": 372288,
        "synapses": 40255488, "stored_weights": 728208, "synapse_bytes": 859932, "weight_bits": 8,
        "state_bytes_on_chip": 3676864, "state_bytes_on_host": 0, "host_computing": [], "ok": True, "verdict": "OK",
    }  # fmt: skip


def test_report_cache_entries_fail_closed(tmp_path):
    """Each damaged, forged or foreign chip entry is a miss (never an error, never a figure) with one note naming
    the file; the value worked out again replaces it, and is read back."""
    from spikeport.gather.cache import MAX_ENTRY_BYTES, ReportCache
    from spikeport.gather.kept import typed
    from spikeport.report.inputs import ChipFootprint

    key, value = {"artifact": "a" * 64, "profile": "p"}, _chip_value()

    def read(v):
        return typed(ChipFootprint, v)

    def attempt(name: str, damage) -> list[str]:
        folder = tmp_path / name.replace(" ", "-")
        writer = ReportCache(folder)
        writer.put("chip", key, value)
        (path,) = folder.iterdir()
        damage(path)
        notes: list[str] = []
        reader = ReportCache(folder, notes.append)
        assert reader.get("chip", key, read) is None and reader.misses == {"chip": 1}, name
        assert len(notes) == 1 and str(path) in notes[0] and list(reader.rejected) == [path.name], (name, notes)
        reader.put("chip", key, value)
        assert ReportCache(folder).get("chip", key, read) == ChipFootprint(**value), name  # replaced, intact
        return notes

    rejected = 0
    for name, (damage, word) in CACHE_CASES.items():
        notes = attempt(name, lambda p, d=damage: p.write_text(d(json.loads(p.read_text()))))
        assert word in notes[0], (name, notes)
        rejected += 1
    for name, (edit, word) in RESEALED.items():
        notes = attempt(name, lambda p, e=edit: _reseal_entry(p, e))
        assert word in notes[0], (name, notes)
        rejected += 1
    outside = tmp_path / "elsewhere.json"
    system = {  # files that are no entry: each refused from what the open returned, before a byte is read
        "FIFO": (lambda p: (p.unlink(), os.mkfifo(p)), "a FIFO, socket or device"),
        "folder": (lambda p: (p.unlink(), p.mkdir()), "a folder"),
        "link out of the folder": (
            lambda p: (outside.write_text(p.read_text()), p.unlink(), p.symlink_to(outside)),
            "symbolic link",
        ),
        "link to /dev/zero": (lambda p: (p.unlink(), p.symlink_to("/dev/zero")), "symbolic link (to /dev/zero)"),
        "sparse 3 GB": (lambda p: os.truncate(p, 3 << 30), f"more than an entry ({MAX_ENTRY_BYTES})"),
        "unreadable": (lambda p: p.chmod(0), "cannot be read"),
    }
    for name, (damage, word) in system.items():
        if name == "unreadable" and os.geteuid() == 0:
            continue  # root reads any file
        if name == "folder":  # a folder where an entry goes cannot be replaced by a rename: said once, not used
            folder = tmp_path / "folder-case"
            ReportCache(folder).put("chip", key, value)
            (path,) = folder.iterdir()
            damage(path)
            notes = []
            reader = ReportCache(folder, notes.append)
            assert reader.get("chip", key, read) is None and word in notes[0], notes
            rejected += 1
            continue
        notes = attempt(name, damage)
        assert word in notes[0], (name, notes)
        rejected += 1
    assert rejected >= 21


CONCURRENT = """
import json, os, random, sys
from spikeport.gather.cache import ReportCache
folder, who, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(who)
def value(k):  # what every process works out for key k: the same, as a report's figures are
    return {"k": k, "figures": [k * i for i in range(200)]}
wrong = 0
for _ in range(rounds):
    k = rng.randrange(4)
    cache = ReportCache(folder)
    got = cache.get("x", {"k": k})
    if got is None:
        cache.put("x", {"k": k}, value(k))
    elif got != value(k):
        wrong += 1
    if who == 0 and rng.random() < 0.3:  # a hostile writer among them: a torn, edited entry in place
        names = sorted(os.listdir(folder))
        try:  # a name listed may be a writer's temporary file, renamed away before this opens it
            with open(os.path.join(folder, rng.choice(names)), "r+b") as f:
                f.seek(rng.randrange(40, 400))
                f.write(b"9")
        except (FileNotFoundError, IndexError):
            pass
print("WRONG", wrong)
"""


def test_reports_sharing_a_cache_read_only_whole_and_intact_entries(tmp_path):
    """Four processes reading and replacing the same entries at once, one of them also editing entries in place:
    every value read is the one worked out (a torn or edited entry is a miss), never an error."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(tmp_path / "cache"), str(who), "300"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for who in range(4)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert all(out.strip().splitlines()[-1] == "WRONG 0" for out in outs), outs


# ------------------------------------------------------------- issue 42: the loihi2 drive is honest (item 5)
@pytest.mark.lava
def test_run_loihi2_takes_the_bias_drive_only_where_the_chip_holds_it(tmp_path, capsys):
    """`run --backend loihi2` on samples whose biases need 15 bits (Loihi 2's bias_mant holds 13; Lava's CPU LIF
    int16, so the simulation passed them): the adapter drive, as `bundle` chooses for the same samples, said once.
    Biases that fit keep the bias drive; a bias drive chosen past 13 bits runs with a note that the chip could not."""
    from spikeport.runtime.loihi2.drive import ChipDrive
    from spikeport.runtime.loihi2.plan_run import choose_drive

    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    art = artifact.write(graph, tmp_path / "m.spk.h5")
    report = tmp_path / "hw.json"
    assert main(["run", str(art), "--backend", "loihi2", "--samples", "2", "--quiet", "--json", str(report)]) == 0
    err = capsys.readouterr().err
    hw = json.loads(report.read_text())["hardware"]
    assert hw["drive"] == "adapter" and hw["outputs_identical"] is True and hw.get("bias_bits") is None
    notes = [line for line in err.splitlines() if "input drive" in line]
    assert notes == [f"spikeport run: note: input drive adapter: {hw['drive_reason']}"], err
    assert "need 15 signed bits; Loihi 2's LIF holds 13" in notes[0]
    assert main(["bundle", str(art), "--out", str(tmp_path / "b"), "--samples", "2", "--quiet"]) == 0
    assert json.loads((tmp_path / "b" / "bundle.json").read_text())["drive"] == hw["drive"]

    from spikeport.data.images import artifact_test_images

    x, _ = artifact_test_images(graph.meta, "digits", None, 2)
    drive, why, note = choose_drive(graph, x, "bias")
    assert (drive, why) == (ChipDrive.BIAS, "chosen") and "the chip could not run it as simulated here" in note
    from spikeport.runtime.loihi2.bias_drive import stem

    _, lif = stem(graph)
    lif.params["bias_mant"] = np.zeros_like(lif.params["bias_mant"])  # the stem's own bias 0, blank images: 1 bit
    assert choose_drive(graph, np.zeros_like(x), None) == (
        ChipDrive.BIAS, "the samples' biases fit 13 bits (Intel's PilotNet-LIF pattern)", ""
    )  # fmt: skip


# ---------------------------------------------------------------------- issue 42: torchrun leftovers (item 7)
@pytest.mark.slow
def test_torchrun_leaves_no_folder_and_each_rank_says_its_error_on_its_own_line(good, tmp_path):
    """A job under torchrun leaves nothing in TMPDIR (torch's launcher makes a torchelastic_* folder a job and never
    removes it: a test run left 21), and a bad argument's one line comes from each rank on a line of its own (the
    ranks share an unbuffered stderr; print's two writes ran the lines together)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (os.path.join(root, "src"), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path, "TMPDIR": str(tmp)}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m"]
    for argv, status in ((["run", str(good), "--samples", "0"], 2), (["run", str(good), "--samples", "4"], 0)):
        proc = subprocess.run(
            [*torchrun, "spikeport", *argv], capture_output=True, text=True, timeout=600, env=env
        )  # fmt: skip
        ours = [line for line in proc.stderr.splitlines() if "spikeport run" in line]
        if status:  # a rank that fails first ends the job: torchrun may kill the other before it says anything
            assert proc.returncode != 0 and 1 <= len(ours) <= 2, proc.stderr[-3000:]
            assert all(line.count("spikeport run") == 1 and line.endswith("a positive integer") for line in ours), ours
        else:
            assert proc.returncode == 0 and proc.stdout.count("accuracy ") == 1, proc.stderr[-3000:]
        assert not list(tmp.iterdir()), list(tmp.rglob("*"))
