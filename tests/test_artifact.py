"""The .spk.h5 artifact: round trip, and every malformed file is refused with the field named."""

import json

import h5py
import numpy as np
import pytest

from conftest import quantized_graph, random_images, reseal, spiky_model
from spikeport.errors import ArtifactError
from spikeport.ir import artifact


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    graph = quantized_graph(spiky_model("lrf_dyn"), random_images(8))
    path = artifact.write(graph, tmp_path_factory.mktemp("a") / "model.spk.h5")
    return graph, path


def copy(path, tmp_path, name="x.spk.h5"):
    dst = tmp_path / name
    dst.write_bytes(path.read_bytes())
    return dst


def test_round_trip_is_identical(good):
    graph, path = good
    loaded = artifact.read(path)
    assert loaded.order == graph.order and loaded.T == graph.T
    for name, node in graph.nodes.items():
        other = loaded.nodes[name]
        assert (other.op, other.inputs, other.shape) == (node.op, node.inputs, node.shape)
        assert other.attrs == node.attrs
        for k, v in node.params.items():
            assert np.array_equal(other.params[k], v)


def test_write_is_atomic_and_leaves_no_temp_files(good, tmp_path):
    graph, _ = good
    artifact.write(graph, tmp_path / "m.spk.h5")
    assert [p.name for p in tmp_path.iterdir()] == ["m.spk.h5"]


def test_truncated_file(good, tmp_path):
    p = copy(good[1], tmp_path)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError, match="truncated or corrupted|cannot be read|missing"):
        artifact.read(p)


def test_flipped_bytes_in_weights_are_caught(good, tmp_path):
    p = copy(good[1], tmp_path)
    with h5py.File(p, "r") as f:
        offset = f["nodes/1/weight_mant"].id.get_chunk_info(0).byte_offset  # checksummed chunks
    raw = bytearray(p.read_bytes())
    raw[offset + 3] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(ArtifactError, match="nodes/1"):
        artifact.read(p)


def test_dropped_dataset(good, tmp_path):
    p = copy(good[1], tmp_path)
    with h5py.File(p, "a") as f:
        del f["nodes/1/weight_mant"]
    with pytest.raises(ArtifactError, match="nodes/1"):
        artifact.read(p)


def test_changed_shape_attribute(good, tmp_path):
    p = copy(good[1], tmp_path)
    with h5py.File(p, "a") as f:
        f["nodes/2"].attrs["shape"] = np.array([8, 8, 9])
    with pytest.raises(ArtifactError, match="nodes/2"):
        artifact.read(p)


def test_bumped_schema_version(good, tmp_path):
    p = copy(good[1], tmp_path)
    with h5py.File(p, "a") as f:
        f.attrs["schema_version"] = 99
    with pytest.raises(ArtifactError, match="schema_version.*99"):
        artifact.read(p)


def test_hand_edit_with_consistent_digest_still_checked_against_rules(good, tmp_path):
    # someone edits a threshold AND recomputes the digest: the graph rules still refuse an illegal value
    p = copy(good[1], tmp_path)
    with h5py.File(p, "a") as f:
        grp = next(f["nodes"][k] for k in f["nodes"] if f["nodes"][k].attrs["op"] == "lif")
        attrs = json.loads(grp.attrs["attrs"])
        attrs["vth"] = 2**20
        grp.attrs["attrs"] = json.dumps(attrs)
    reseal(p)
    with pytest.raises(ArtifactError, match="vth"):
        artifact.read(p)


def test_hand_edited_weight_detected_by_digest(good, tmp_path):
    p = copy(good[1], tmp_path)
    with h5py.File(p, "a") as f:
        f["nodes/1/weight_mant"][0, 0, 0, 0] = 1
    with pytest.raises(ArtifactError, match="digest"):
        artifact.read(p)


def test_broken_connectivity(good, tmp_path):
    p = copy(good[1], tmp_path)
    with h5py.File(p, "a") as f:
        f["nodes/1"].attrs["inputs"] = json.dumps(["nonexistent"])
    reseal(p)
    with pytest.raises(ArtifactError, match="nonexistent"):
        artifact.read(p)


def test_not_an_artifact(tmp_path):
    p = tmp_path / "x.h5"
    with h5py.File(p, "w") as f:
        f.attrs["format"] = "something"
    with pytest.raises(ArtifactError, match="format"):
        artifact.read(p)
    q = tmp_path / "text.spk.h5"
    q.write_text("hello")
    with pytest.raises(ArtifactError, match="HDF5"):
        artifact.read(q)
    with pytest.raises(ArtifactError, match="does not exist"):
        artifact.read(tmp_path / "missing.spk.h5")
