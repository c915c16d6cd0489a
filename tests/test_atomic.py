"""spikeport.atomic.atomic_write: unique temp names, ordinary file mode, nothing left behind on failure."""

from __future__ import annotations

import os
import stat

import pytest

from spikeport.atomic import atomic_write
from spikeport.errors import WriteError


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_writes_the_target_and_leaves_only_it(tmp_path):
    target = tmp_path / "sub" / "report.json"  # the parent folder is created
    with atomic_write(target) as tmp:
        assert tmp.parent == target.parent and tmp.exists() and not target.exists()
        assert tmp.name.startswith(".report.json.") and tmp.suffix == ".json"
        tmp.write_text('{"a": 1}')
    assert target.read_text() == '{"a": 1}'
    assert os.listdir(target.parent) == ["report.json"]


def test_temp_names_are_unique(tmp_path):
    target = tmp_path / "model.spk.h5"
    with atomic_write(target) as a, atomic_write(target) as b:
        assert a != b and a.exists() and b.exists()
        a.write_bytes(b"first")
        b.write_bytes(b"second")
    assert target.read_bytes() == b"first"  # the outer block ends last and wins
    assert os.listdir(tmp_path) == ["model.spk.h5"]


def test_mode_is_0644_under_umask_022(tmp_path, umask_022):
    target = tmp_path / "out.bin"
    with atomic_write(target) as tmp:
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o644
        tmp.write_bytes(b"x")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_mode_follows_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        with atomic_write(tmp_path / "private.txt") as tmp:
            tmp.write_text("secret")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "private.txt").stat().st_mode) == 0o600


def test_exception_removes_the_temp_file_and_keeps_the_old_target(tmp_path):
    target = tmp_path / "checkpoint.pt"
    target.write_bytes(b"old contents")
    seen = []
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(target) as tmp:
            seen.append(tmp)
            tmp.write_bytes(b"half-writ")
            raise RuntimeError("disk full")
    assert not seen[0].exists()
    assert target.read_bytes() == b"old contents"
    assert os.listdir(tmp_path) == ["checkpoint.pt"]


def test_keyboard_interrupt_also_cleans_up(tmp_path):
    target = tmp_path / "metrics.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(target) as tmp:
            tmp.write_text("partial")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_a_writer_that_removed_the_temp_file_fails_cleanly(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with pytest.raises(WriteError, match=r"a\.txt: could not be written \(No such file or directory\)"):
        with atomic_write(target) as tmp:
            tmp.unlink()  # nothing to rename: the old file stays
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["a.txt"]
