"""The deployment artifact: one versioned, self-describing HDF5 file (``<name>.spk.h5``).

Layout (documented field by field in docs/artifact.md):

    /                 attrs: format="spikeport-artifact", schema_version, T, spikeport_version, created, digest
    /meta             attr json: model config, quantization plan and errors, provenance
    /nodes/<i>        one group per node, i = 0..n-1 in topological order
        attrs         name, op, inputs (json list), shape (int array), attrs (json object), digest
        <param>       integer datasets (fletcher32 checksummed), e.g. weight_mant, bias_mant

Integrity: each node carries the SHA-256 of its own content (so a damaged node is named), and the root
``digest`` covers everything else that is in the file: the root attributes, the ``/meta`` JSON as stored, and the
node digests in their order. A flipped bit anywhere is refused, not read as another model.

Writes are atomic (spikeport.atomic). Reading validates, in this order: the file is a regular file that opens as
HDF5, format and schema version, the file's structure (no member or attribute that this version does not write),
strict types and bounds (``ir.limits``) of every attribute, each dataset's size *before* it is read, the node
digests, the root digest, then the graph rules of the kernel records (op, attrs, integer ranges, shapes,
connectivity). Every failure is one ArtifactError naming the field; an HDF5 library error on a damaged file is
one too.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from spikeport._version import __version__
from spikeport.atomic import atomic_write, atomic_write_all, check_output_file, hdf5_image
from spikeport.errors import ArtifactError, ConversionError, OutputPathError
from spikeport.ir import limits
from spikeport.ir.graph import Graph, Node
from spikeport.ir.hdf5 import HDF5_ERRORS, open_hdf5
from spikeport.ir.kernels import spec
from spikeport.ir.ops import validate

FORMAT = "spikeport-artifact"
# 2: the root digest over root attributes, /meta and the node digests (version 1 left those unprotected)
SCHEMA_VERSION = 2
ROOT_ATTRS = ("format", "schema_version", "T", "spikeport_version", "created", "digest")
NODE_ATTRS = ("name", "op", "inputs", "shape", "attrs", "digest")
# the /meta keys that spikeport reads back, with their JSON types (other keys are the user's provenance)
META_TYPES: dict[str, tuple[type, ...]] = {
    "dataset": (str, type(None)),
    "data_dir": (str, type(None)),
    "checkpoint": (str,),
    "model_config": (dict,),
    "layout": (str,),
    "quantization": (dict,),
    "quantization_plan": (dict,),
    "calibration": (dict,),
    "tau_folded": (bool,),
    "qat": (bool,),
    "qat_kept_epoch": (int, type(None)),
    "source": (str,),
    "netx_file": (str,),
    "input_drive": (str,),
    "nir_file": (str,),  # an import of a NIR graph: its file, library, step, input shape and samples
    "nir_library": (str,),
    "dt": (float, int),
    "nir_input_shape": (list,),
    "nir_inputs": (str,),
    "nir_labels": (str,),
}


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def node_digest(node: Node) -> str:
    h = hashlib.sha256()
    h.update(
        json.dumps(
            [
                node.name,
                node.op,
                node.inputs,
                list(node.shape),
                {k: _jsonable(v) for k, v in sorted(node.attrs.items())},
            ],
            sort_keys=True,
        ).encode()
    )
    for key in sorted(node.params):
        arr = np.ascontiguousarray(node.params[key])
        h.update(key.encode() + str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes())
    return h.hexdigest()


def file_digest(root: dict[str, Any], meta_json: str, node_digests: list[str]) -> str:
    """The root digest: the root attributes but ``digest`` itself, the stored ``/meta`` JSON, the node digests."""
    fields = [_jsonable(root[key]) for key in ROOT_ATTRS if key != "digest"]
    return hashlib.sha256(json.dumps([fields, meta_json, node_digests]).encode()).hexdigest()


def write(graph: Graph, path: str | os.PathLike[str]) -> Path:
    """Write a quantized graph atomically; returns the path (``graph.digest`` is the file's root digest)."""
    path = Path(path)
    with atomic_write(path) as tmp:
        write_file(graph, tmp)
    return path


def write_file(graph: Graph, path: Path) -> str:
    """Write a quantized graph into ``path`` as it is (callers make it atomic: ``write``, or
    ``atomic_write_all`` for a set of files); returns the root digest, also set as ``graph.digest``."""
    image, digest = artifact_image(graph)
    Path(path).write_bytes(image)
    return digest


def artifact_image(graph: Graph) -> tuple[memoryview, str]:
    """The bytes of a quantized graph's artifact and its root digest (also set as ``graph.digest``). The HDF5 file
    is built in memory (``atomic.hdf5_image``): written straight to a disk that fills up, the library crashes."""
    if not graph.quantized:
        raise ConversionError("only quantized graphs are written as deployment artifacts")
    validate(graph)
    limits.check_graph(graph)  # never write what read() would refuse
    _check_declared_params(graph)
    root: dict[str, Any] = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "T": graph.T,
        "spikeport_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    meta_json = json.dumps(graph.meta, default=_jsonable)
    _parse_meta(Path("<graph>"), meta_json)
    digests = [node_digest(graph.nodes[name]) for name in graph.order]
    root["digest"] = file_digest(root, meta_json, digests)

    def fill(f: h5py.File) -> None:
        f.attrs.update(root)
        f.create_group("meta").attrs["json"] = meta_json
        nodes = f.create_group("nodes")
        for i, (name, digest) in enumerate(zip(graph.order, digests, strict=True)):
            node = graph.nodes[name]
            grp = nodes.create_group(str(i))
            grp.attrs.update(
                {
                    "name": node.name,
                    "op": node.op,
                    "inputs": json.dumps(node.inputs),
                    "shape": np.asarray(node.shape, np.int64),
                    "attrs": json.dumps({k: _jsonable(v) for k, v in node.attrs.items()}),
                    "digest": digest,
                }
            )
            for key, arr in node.params.items():
                grp.create_dataset(key, data=np.asarray(arr), fletcher32=True)

    image = hdf5_image(fill)
    graph.digest = root["digest"]
    return image, graph.digest


def _check_declared_params(graph: Graph, path: Path | None = None) -> None:
    """Every integer parameter of a node is one its op's record declares: an undeclared dataset would be counted
    (weight bytes, check-hw's synaptic memory) although no executor reads it."""
    for i, name in enumerate(graph.order):
        node = graph.nodes[name]
        declared = {p.qname for p in spec(node.op).params if p.qname is not None}
        extra = sorted(set(node.params) - declared)
        if extra:
            problem = (
                f"parameter '{extra[0]}' of node '{name}' ({node.op}) is not one its op declares "
                f"({', '.join(sorted(declared)) or 'none'})"
            )
            if path is None:
                raise ConversionError(problem)
            raise ArtifactError(path, f"/nodes/{i}/{extra[0]}", problem)


REPORT_NAME = "conversion_report.json"


def write_conversion(
    graph: Graph, out: Path, name: str, report: dict[str, Any], onnx: bytes | None = None
) -> list[Path]:
    """What a conversion writes, as one transaction (``atomic.atomic_write_all``): ``<name>.spk.h5``,
    ``<name>.onnx`` when given and ``conversion_report.json``, whose ``files`` block names the artifact with its
    root digest and the ONNX file with its SHA-256, so a set mixed by a SIGKILL between the renames is detected
    (``stale_report``). When ``out`` cannot be written after all, the set goes to a new temporary folder and an
    OutputPathError says where. Returns the paths: artifact, [ONNX,] report."""
    existed = out.exists()
    try:
        return _write_set(graph, out, name, report, onnx)
    except OutputPathError as err:
        reason = getattr(err, "reason", None) or str(err)
    if not existed:
        with contextlib.suppress(OSError):
            out.rmdir()  # the folder this conversion made, empty: nothing of it stays
    fallback = Path(tempfile.mkdtemp(prefix=f"spikeport-convert-{name}-"))
    try:
        _write_set(graph, fallback, name, report, onnx)
    except OutputPathError as err:
        shutil.rmtree(fallback, ignore_errors=True)  # complete or absent
        again = getattr(err, "reason", None) or str(err)
        raise OutputPathError(
            f"could not write the conversion into {out} ({reason}; nothing there was replaced), nor into a "
            f"temporary folder ({again}): nothing was saved"
        ) from None
    raise OutputPathError(
        f"could not write the conversion into {out} ({reason}; nothing there was replaced); it is saved in {fallback}"
    )


def check_conversion_targets(out: Path, name: str, onnx: bool = False) -> None:
    """The files a conversion will write into ``out`` can be written (checked before the conversion's work: a FIFO or
    a folder in place of ``<name>.spk.h5`` was found only when the converted set was written)."""
    for file in (f"{name}.spk.h5", *([f"{name}.onnx"] if onnx else []), REPORT_NAME):
        check_output_file(out / file, "conversion output")


def _write_set(graph: Graph, out: Path, name: str, report: dict[str, Any], onnx: bytes | None) -> list[Path]:
    artifact_path, report_path = out / f"{name}.spk.h5", out / REPORT_NAME
    onnx_path = out / f"{name}.onnx" if onnx is not None else None
    # the artifact first: a SIGKILL between two renames then always leaves a report that names another digest
    paths = [p for p in (artifact_path, onnx_path, report_path) if p is not None]
    for p in paths:  # a folder in a file's place would fail a rename half way through the set
        check_output_file(p, "conversion output")
    with atomic_write_all(paths) as temps:
        tmp = dict(zip(paths, temps, strict=True))
        files: dict[str, Any] = {
            "artifact": artifact_path.name,
            "artifact_digest": write_file(graph, tmp[artifact_path]),
        }
        if onnx_path is not None and onnx is not None:
            tmp[onnx_path].write_bytes(onnx)
            files.update(onnx=onnx_path.name, onnx_sha256=hashlib.sha256(onnx).hexdigest())
        report["files"] = files
        tmp[report_path].write_text(json.dumps(report, indent=1))
    return [artifact_path, *([onnx_path] if onnx_path else []), report_path]


def stale_report(digest: str | None, path: str | os.PathLike[str]) -> str | None:
    """Why the conversion report beside the artifact at ``path`` (root digest ``digest``) is not this artifact's
    (None when it is, or when there is none or it is about another artifact of the folder): a convert killed
    between its renames."""
    path = Path(path)
    try:
        report = json.loads(path.with_name(REPORT_NAME).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    files = report.get("files") if isinstance(report, dict) else None
    if (
        not isinstance(files, dict)
        or files.get("artifact") != path.name
        or files.get("artifact_digest") in (None, digest)
    ):
        return None
    return (
        f"{path.with_name(REPORT_NAME)} belongs to another conversion of {path.name} (a convert killed between its "
        "file renames?): its accuracies are not this artifact's; re-run `spikeport convert`"
    )


def float_accuracy(artifact: str | os.PathLike[str] | None, digest: str | None = None) -> dict[str, Any] | None:
    """``{"accuracy", "samples"}``: the float model's test accuracy in the conversion report beside ``artifact``
    (``spikeport convert`` writes both; the test images it compared on), or None: no such report, no float
    accuracy in it, or a report of another conversion (root digest ``digest`` differs)."""
    if not artifact:
        return None
    if digest and stale_report(digest, artifact):
        return None
    try:
        comparison = json.loads(Path(artifact).with_name(REPORT_NAME).read_text()).get("comparison") or {}
        return {"accuracy": float(comparison["accuracy"]["torch-float"]), "samples": int(comparison["samples"])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An artifact's ``meta`` (provenance: data set, checkpoint, netx source...), checked against the root digest,
    without reading the nodes' parameters."""
    path = Path(path)
    with open_hdf5(path) as f:
        try:
            root = _read_root(f, path)
            meta_json = _str_attr(_group(f, path, "meta"), path, "/meta", "json")
            groups = _node_groups(f, path)
            digests = [_str_attr(grp, path, field, "digest") for field, grp in groups]
        except HDF5_ERRORS as err:
            raise damaged_file_error(path, err) from None
        _check_file_digest(path, root, meta_json, digests)
        return _parse_meta(path, meta_json)


def read_digest(path: str | os.PathLike[str]) -> str | None:
    """The root digest an artifact declares, read from its root attributes alone (nothing checked against it), or
    None for a file that is no readable artifact: how a report finds the artifact a run report names, by digest."""
    try:
        with h5py.File(Path(path), "r") as f:
            if f.attrs.get("format") != FORMAT:
                return None
            digest = f.attrs.get("digest")
    except HDF5_ERRORS:
        return None
    return digest if isinstance(digest, str) else None


def read(path: str | os.PathLike[str]) -> Graph:
    """Read and fully validate an artifact; raises ArtifactError naming the offending field."""
    path = Path(path)
    with open_hdf5(path) as f:
        try:
            root = _read_root(f, path)
            meta_json = _str_attr(_group(f, path, "meta"), path, "/meta", "json")
            nodes: dict[str, Node] = {}
            digests = []
            budget = [limits.MAX_TOTAL_ELEMENTS]  # parameter elements the whole file may still hold
            for field, grp in _node_groups(f, path):
                node = _read_node(grp, path, field, budget)
                if node.name in nodes:
                    raise ArtifactError(path, f"{field}/@name", f"duplicate node name {node.name!r}")
                digest = _str_attr(grp, path, field, "digest")
                if node_digest(node) != digest:
                    raise ArtifactError(
                        path,
                        f"{field} ({node.name})",
                        "content digest mismatch: the node was modified after it was written (hand edit or corruption)",
                    )
                nodes[node.name] = node
                digests.append(digest)
        except HDF5_ERRORS as err:
            raise damaged_file_error(path, err) from None
    _check_file_digest(path, root, meta_json, digests)
    graph = Graph(nodes=nodes, T=root["T"], meta=_parse_meta(path, meta_json), quantized=True, digest=root["digest"])
    try:
        validate(graph)
        limits.check_graph(graph)
    except ConversionError as err:
        raise ArtifactError(path, "/nodes", str(err)) from None
    _check_declared_params(graph, path)
    return graph


def damaged_file_error(path: Path, err: BaseException) -> ArtifactError:
    reason = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
    return ArtifactError(
        path, "<file>", f"damaged HDF5 structure (corrupted or truncated?): {type(err).__name__}: {reason}"
    )


def _read_root(f: h5py.File, path: Path) -> dict[str, Any]:
    """The root attributes, strictly typed and bounded; version 1 and foreign files refused first."""
    fmt = _attr(f, path, "/", "format")
    if fmt != FORMAT:
        raise ArtifactError(path, "/@format", f"is {fmt!r}, expected {FORMAT!r} (not a spikeport artifact)")
    version = _int_attr(f, path, "/", "schema_version")
    if version != SCHEMA_VERSION:
        older = " (written before artifacts carried a root digest)" if version == 1 else ""
        raise ArtifactError(
            path,
            "/@schema_version",
            f"is {version}{older}, this spikeport reads version {SCHEMA_VERSION} (re-run `spikeport convert`)",
        )
    _only(path, "/", "attribute", f.attrs.keys(), ROOT_ATTRS)
    _only(path, "/", "member", f.keys(), ("meta", "nodes"))
    T = _int_attr(f, path, "/", "T")
    if not 1 <= T <= limits.MAX_T:
        raise ArtifactError(path, "/@T", f"is {T}, expected 1..{limits.MAX_T} time steps per sample")
    root: dict[str, Any] = {"format": fmt, "schema_version": version, "T": T}
    for key in ("spikeport_version", "created", "digest"):
        root[key] = _str_attr(f, path, "/", key)
    return root


def _node_groups(f: h5py.File, path: Path) -> list[tuple[str, h5py.Group]]:
    """``/nodes/0 .. /nodes/n-1``, nothing else, n in 1..MAX_NODES."""
    groups = _group(f, path, "nodes")
    n = len(groups)
    if not 1 <= n <= limits.MAX_NODES:
        raise ArtifactError(path, "/nodes", f"has {n} nodes, expected 1..{limits.MAX_NODES}")
    _only(path, "/nodes", "member", groups.keys(), [str(i) for i in range(n)])
    return [(f"/nodes/{i}", _group(groups, path, str(i), f"/nodes/{i}")) for i in range(n)]


def _check_file_digest(path: Path, root: dict[str, Any], meta_json: str, node_digests: list[str]) -> None:
    if file_digest(root, meta_json, node_digests) != root["digest"]:
        raise ArtifactError(
            path,
            "/@digest",
            "mismatch: a root attribute, /meta or the node list was changed after the file was written "
            "(hand edit or corruption)",
        )


def _parse_meta(path: Path, meta_json: str) -> dict[str, Any]:
    try:
        meta = json.loads(meta_json)
    except (ValueError, RecursionError) as err:
        raise ArtifactError(path, "/meta/@json", f"is not valid JSON: {err}") from None
    if not isinstance(meta, dict):
        raise ArtifactError(path, "/meta/@json", f"is a JSON {type(meta).__name__}, expected an object")
    for key, value in meta.items():
        kinds = META_TYPES.get(key)
        if kinds is not None and (not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds):
            names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
            raise ArtifactError(path, f"/meta/@json: {key}", f"is {value!r}, expected {names}")
    if meta.get("layout", "channels_last") != "channels_last":
        raise ArtifactError(path, "/meta/@json: layout", f"is {meta['layout']!r}, artifacts are 'channels_last'")
    img_size = (meta.get("model_config") or {}).get("img_size")
    if img_size is not None and (type(img_size) is not int or not 1 <= img_size <= limits.MAX_IMG_SIZE):
        raise ArtifactError(
            path, "/meta/@json: model_config.img_size", f"is {img_size!r}, expected 1..{limits.MAX_IMG_SIZE}"
        )
    return meta


def _only(path: Path, where: str, what: str, present: Any, allowed: Any) -> None:
    extra = sorted(set(present) - set(allowed))
    if extra:
        raise ArtifactError(
            path, f"{where.rstrip('/')}/{extra[0]}", f"unexpected {what} (schema version {SCHEMA_VERSION} has none)"
        )


def _int_attr(obj: Any, path: Path, where: str, key: str) -> int:
    """An attribute that must be an integer: a float (4.9) or a string is refused, not truncated."""
    value = _attr(obj, path, where, key)
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        shown = value.item() if isinstance(value, np.generic) else value
        field = f"{where.rstrip('/')}/@{key}"
        raise ArtifactError(path, field, f"is {shown!r} ({type(value).__name__}), expected an integer")
    return int(value)


def _str_attr(obj: Any, path: Path, where: str, key: str) -> str:
    value = _attr(obj, path, where, key)
    if not isinstance(value, str):
        raise ArtifactError(path, f"{where.rstrip('/')}/@{key}", f"is a {type(value).__name__}, expected a string")
    return value


def _attr(obj: Any, path: Path, where: str, key: str) -> Any:
    try:
        value = obj.attrs[key]
    except (KeyError, OSError):
        raise ArtifactError(path, f"{where.rstrip('/')}/@{key}", "is missing") from None
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise ArtifactError(path, f"{where.rstrip('/')}/@{key}", "is not UTF-8 text") from None
    return value


def _group(parent: Any, path: Path, key: str, field: str | None = None) -> h5py.Group:
    try:
        grp = parent[key]
    except (KeyError, OSError):
        raise ArtifactError(path, field or f"/{key}", "is missing or unreadable") from None
    if not isinstance(grp, h5py.Group):
        raise ArtifactError(path, field or f"/{key}", "is not a group")
    return grp


def _json_attr(grp: h5py.Group, path: Path, field: str, key: str) -> Any:
    try:
        return json.loads(_str_attr(grp, path, field, key))
    except (ValueError, RecursionError) as err:
        raise ArtifactError(path, f"{field}/@{key}", f"is not valid JSON: {err}") from None


def _read_node(grp: h5py.Group, path: Path, field: str, budget: list[int]) -> Node:
    _only(path, field, "attribute", grp.attrs.keys(), NODE_ATTRS)
    name, op = _str_attr(grp, path, field, "name"), _str_attr(grp, path, field, "op")
    inputs, attrs = _json_attr(grp, path, field, "inputs"), _json_attr(grp, path, field, "attrs")
    shape = np.asarray(_attr(grp, path, field, "shape"))
    if shape.ndim != 1 or not np.issubdtype(shape.dtype, np.integer):
        raise ArtifactError(path, f"{field}/@shape", f"is {shape.tolist()!r}, expected a 1-d integer array")
    problem = limits.shape_problem(tuple(int(s) for s in shape))
    if problem:
        raise ArtifactError(path, f"{field}/@shape", problem)
    if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
        raise ArtifactError(path, f"{field}/@inputs", "must be a JSON list of node names")
    if not isinstance(attrs, dict):
        raise ArtifactError(path, f"{field}/@attrs", "must be a JSON object")
    attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}
    params = {}
    for key, ds in grp.items():
        where = f"{field}/{key}"
        if not isinstance(ds, h5py.Dataset):
            raise ArtifactError(path, where, "is not a dataset")
        if not np.issubdtype(ds.dtype, np.integer) or ds.dtype.itemsize > 8:
            raise ArtifactError(path, where, f"has dtype {ds.dtype}, expected integers")
        if ds.size > limits.MAX_PARAM_ELEMENTS:  # before the read: an unwritten or compressed dataset is tiny on disk
            raise ArtifactError(
                path, where, f"has {ds.size} elements {ds.shape}, the limit is {limits.MAX_PARAM_ELEMENTS}"
            )
        budget[0] -= ds.size
        if budget[0] < 0:
            raise ArtifactError(
                path, where, f"brings the file's parameters above {limits.MAX_TOTAL_ELEMENTS} elements in all"
            )
        if ds.compression is not None:
            raise ArtifactError(path, where, f"is {ds.compression}-compressed; artifacts store parameters uncompressed")
        try:
            params[key] = ds[()]
        except HDF5_ERRORS as err:
            raise ArtifactError(path, where, f"cannot be read (checksum/corruption): {err}") from None
    return Node(name, op, inputs, attrs, params, tuple(int(s) for s in shape))
