"""Bad input is refused in one line before any work (issue 16, first part): strict root attributes of an
artifact with bounds, only regular files opened, file names that stay in their folder, and every command's
numeric arguments checked by one shared set of argparse types."""

from __future__ import annotations

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
