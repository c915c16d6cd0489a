"""The fuzz test (issues 16 and 26): every file spikeport reads, damaged and edited, read by every command that
reads it, and the bad-argument matrix of every command. Each case must end in a one-line refusal (exit 2) or a
result identical to the intact file's: never a traceback, a hang or a silently different result.

Classes: artifacts and checkpoints (seeded damage, deliberate edits), lava-dl netx files, .npy inputs, run reports,
hardware profiles, and the argument matrix. Write failures (RLIMIT_FSIZE, immutable targets) are in
tests/test_reliability.py: they need a subprocess.

Corruptions are of two kinds. *Damage* (flipped bits and bytes, truncations, edits without the digests) must be
refused or harmless. *Deliberate edits* (the digests recomputed, ``conftest.reseal``; any edit of a format without
digests) make an intact file of another model: they may run with another result, but a broken rule must still be
one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal
import subprocess

import h5py
import numpy as np
import pytest

from conftest import quantized_graph, random_images, reseal, spiky_model
from spikeport.cli import build_parser, main
from spikeport.ir import artifact

# another seed explores other corruptions: SPIKEPORT_FUZZ_SEED=7 pytest tests/test_fuzz.py
SEED = int(os.environ.get("SPIKEPORT_FUZZ_SEED", "16"))
HANG_S = 60  # one command on an 8-sample digits model takes well under a second


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def call(argv: list[str]) -> tuple[object, str, str]:
    """(exit status or 'TRACEBACK ...' / 'HANG', stdout, stderr) of ``spikeport argv`` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status: object = main(argv)
            except SystemExit as exit_:
                status = exit_.code
            except Hang:
                status = "HANG"
            except Exception as error:  # noqa: BLE001 - what the test is looking for
                status = f"TRACEBACK {type(error).__name__}: {error}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return status, out.getvalue(), err.getvalue()


MAX_LINE = 2500  # characters of a refusal: the CLI cuts longer messages at 2000 (an alias bomb once made 351 MB)


def refused(status: object, err: str) -> bool:
    lines = err.strip().splitlines()
    return status == 2 and len(lines) == 1 and "error" in lines[0] and len(lines[0]) < MAX_LINE


# ------------------------------------------------------------------------------------------------- artifacts
@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "model.spk.h5"
    graph = quantized_graph(spiky_model("ssa"), random_images(16, seed=1))
    graph.meta["dataset"] = "digits"
    artifact.write(graph, path)
    return path


def results(path, tmp_path) -> dict[str, tuple[object, str]]:
    """What each reading command makes of ``path``: (status, output without the parts that name the file)."""
    out = {}
    for command in (["inspect", "--json"], ["check-hw", "--json"], ["run", "--samples", "8"]):
        json_path = tmp_path / "run.json"
        argv = [command[0], str(path), *command[1:]] + (["--json", str(json_path)] if command[0] == "run" else [])
        status, stdout, stderr = call(argv)
        if isinstance(status, str) or (status not in (0, 1) and not refused(status, stderr)):
            out[command[0]] = (status, stderr.strip()[-500:])
        elif status == 2:
            out[command[0]] = ("refused", "")
        elif command[0] == "run":
            report = json.loads(json_path.read_text())
            out[command[0]] = (status, json.dumps({k: report[k] for k in ("layers", "predictions", "accuracy")}))
        else:
            out[command[0]] = (status, stdout)
    return out


def flip_bit(data: bytearray, rng: random.Random) -> str:
    # half of the flips in the first and last 16 KiB, where HDF5 keeps its headers, heaps and attributes
    size = len(data)
    offset = rng.choice([rng.randrange(size), rng.randrange(min(size, 16384)), size - 1 - rng.randrange(16384)])
    data[offset] ^= 1 << rng.randrange(8)
    return f"bit flip at {offset}"


def damage(data: bytes, rng: random.Random, path) -> str:
    """One seeded damage of the file at ``path`` (holding ``data``); returns what was done."""
    kind = rng.choice(["flip", "flip", "flip", "bytes", "truncate", "attr", "dataset", "meta"])
    if kind in ("flip", "bytes", "truncate"):
        buf = bytearray(data)
        if kind == "flip":
            what = flip_bit(buf, rng)
        elif kind == "bytes":
            offset = rng.randrange(len(buf) - 8)
            buf[offset : offset + 8] = bytes(rng.randrange(256) for _ in range(8))
            what = f"8 random bytes at {offset}"
        else:
            offset = rng.randrange(len(buf))
            del buf[offset:]
            what = f"truncated at {offset}"
        path.write_bytes(bytes(buf))
        return what
    path.write_bytes(data)
    with h5py.File(path, "r+") as f:
        node = f["nodes"][str(rng.randrange(len(f["nodes"])))]
        if kind == "attr":
            key = rng.choice(["T", "created", "spikeport_version"])
            f.attrs[key] = {"T": 5, "created": "2020-01-01T00:00:00Z", "spikeport_version": "0.0"}[key]
            return f"root attribute {key}"
        if kind == "dataset" and len(node):
            ds = node[rng.choice(sorted(node))]
            if ds.size:
                ds[tuple(0 for _ in ds.shape)] = ds[tuple(0 for _ in ds.shape)] ^ 1
                return f"dataset {ds.name}"
        meta = json.loads(f["meta"].attrs["json"])
        meta["dataset"] = "cifar10"
        f["meta"].attrs["json"] = json.dumps(meta)
        return "meta dataset"


def test_damaged_artifacts_are_refused_or_read_identically(good, tmp_path):
    rng, data = random.Random(SEED), good.read_bytes()
    baseline = results(good, tmp_path)
    assert all(status == 0 for status, _ in baseline.values()), baseline
    mutant, bad, tally = tmp_path / "damaged.spk.h5", [], {"refused": 0, "identical": 0}
    for _ in range(40):
        what = damage(data, rng, mutant)
        for command, (status, output) in results(mutant, tmp_path).items():
            if status == "refused":
                tally["refused"] += 1
            elif (status, output) == baseline[command]:
                tally["identical"] += 1
            else:
                bad.append(f"{what} | {command}: {status} {output[:300]}")
    assert not bad, "\n".join(bad)
    assert tally["refused"] > 60, tally  # the corruptions did reach the reader


def sealed_edits():
    """Deliberate edits (digests recomputed): each breaks one rule a run would otherwise trip over."""

    def node_of(f, op, k=0):
        return [f["nodes"][i] for i in map(str, range(len(f["nodes"]))) if f["nodes"][i].attrs["op"] == op][k]

    def set_attr(op, key, value, k=0):
        def edit(f):
            node = node_of(f, op, k)
            attrs = json.loads(node.attrs["attrs"])
            attrs[key] = value
            node.attrs["attrs"] = json.dumps(attrs)

        return edit

    def set_meta(key, value):
        def edit(f):
            meta = json.loads(f["meta"].attrs["json"])
            meta[key] = value
            f["meta"].attrs["json"] = json.dumps(meta)

        return edit

    def reshape(op, param, cut):
        def edit(f):
            node = node_of(f, op)
            values = node[param][()]
            del node[param]
            node.create_dataset(param, data=values[..., :cut])

        return edit

    def drop_last(f):
        del f["nodes"][str(len(f["nodes"]) - 1)]

    def inputs(op, change):
        def edit(f):
            node = node_of(f, op)
            node.attrs["inputs"] = json.dumps(change(json.loads(node.attrs["inputs"]), f))

        return edit

    def set_node(name, key, value):
        def edit(f):
            node = next(f["nodes"][i] for i in f["nodes"] if f["nodes"][i].attrs["name"] == name)
            node.attrs[key] = value

        return edit

    # name -> (edit, what the refusal must say)
    return {
        "conv kernel of 3 sizes": (set_attr("conv", "kernel", [3, 3, 3]), "'kernel' = (3, 3, 3) must have 2 elements"),
        "conv stride 1.5": (set_attr("conv", "stride", [1.5, 1]), "'stride' = (1.5, 1) is not a tuple of ints"),
        "lif vth true": (set_attr("lif", "vth", True), "'vth' = True is not an int"),
        "lif tau NaN": (set_attr("lif", "tau", float("nan")), "'tau' = nan is not a finite float"),
        "lif tau 10**400": (set_attr("lif", "tau", 10**400), "is not a finite float"),
        "attention heads 0": (set_attr("attention", "heads", 0), "'heads' = 0 must be > 0"),
        "unknown attribute": (set_attr("lif", "colour", "red"), "unknown attribute 'colour'"),
        "readout weight cut": (reshape("readout", "weight_mant", -1), "'weight_mant' has shape"),
        "no readout": (drop_last, "has no readout node"),
        "lif reads one input twice": (inputs("lif", lambda names, f: names + names[:1]), "twice"),
        "synapse feeds two neuron groups": (
            set_node("block.0.attn.k_lif", "inputs", json.dumps(["block.0.attn.q_linear"])),
            "feeds one neuron group, not 2",
        ),
        "meta model_config a list": (set_meta("model_config", [1, 2]), "model_config': is [1, 2], expected dict"),
        "meta dataset a number": (set_meta("dataset", 3), "dataset': is 3, expected str or null"),
        "meta img_size huge": (set_meta("model_config", {"img_size": 10**9}), "img_size': is 1000000000"),
        "meta nested too deep": (lambda f: f["meta"].attrs.__setitem__("json", "[" * 100_000 + "]" * 100_000), "JSON"),
        "undeclared dataset": (
            lambda f: node_of(f, "lif").create_dataset("weight_mant", data=f["nodes/1/weight_mant"][()]),
            "is not one its op declares",
        ),
        "T 0": (lambda f: f.attrs.__setitem__("T", 0), "'/@T': is 0, expected 1..10000"),
        "T 10**6": (lambda f: f.attrs.__setitem__("T", 10**6), "'/@T': is 1000000, expected 1..10000"),
    }


@pytest.mark.parametrize("name", list(sealed_edits()))
def test_deliberate_edits_that_break_a_rule_are_refused_in_one_line(good, tmp_path, name):
    edit, reason = sealed_edits()[name]
    path = tmp_path / "edited.spk.h5"
    path.write_bytes(good.read_bytes())
    with h5py.File(path, "r+") as f:
        edit(f)
    reseal(path)
    for command in ("inspect", "check-hw", "run"):
        argv = [command, str(path)] + (["--samples", "8"] if command == "run" else [])
        status, _, err = call(argv)
        if name == "no readout" and command != "run":
            assert status == 0  # a graph without class scores (netx files have none) is inspected and mapped
            continue
        assert refused(status, err) and reason in err, f"{name} | {command}: {status} {err}"


# ------------------------------------------------------------------------------------------------ checkpoints
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from spikeport.train.checkpoint import FORMAT, VERSION, save_atomic

    model = spiky_model("ssa")
    path = tmp_path_factory.mktemp("ckpt") / "checkpoint.pt"
    ckpt = {"format": FORMAT, "version": VERSION, "model": model.state_dict(), "epoch": 1}
    save_atomic({**ckpt, "model_config": model.cfg.to_dict(), "train_config": {"dataset": "digits"}}, path)
    return path


def convert_digests(path, out) -> tuple[object, str]:
    status, _, err = call(
        ["convert", str(path), "--out", str(out), "--no-onnx", "--calibrate", "0", "--eval-samples", "4"]
    )
    if status == 0:
        with h5py.File(out / "model.spk.h5") as f:
            return 0, " ".join(f["nodes"][str(i)].attrs["digest"] for i in range(len(f["nodes"])))
    return ("refused", "") if refused(status, err) else (status, err.strip()[-500:])


def test_damaged_checkpoints_are_refused_or_convert_identically(checkpoint, tmp_path):
    """torch.load does not check its zip's CRC-32: before the check, most flipped bits loaded as other weights."""
    rng, data = random.Random(SEED), checkpoint.read_bytes()
    baseline = convert_digests(checkpoint, tmp_path / "base")
    assert baseline[0] == 0, baseline
    mutant, bad, tally = tmp_path / "damaged.pt", [], {"refused": 0, "identical": 0}
    for i in range(30):
        buf = bytearray(data)
        if i % 3 == 2:
            del buf[rng.randrange(len(buf)) :]
            what = "truncated"
        else:
            what = flip_bit(buf, rng)
        mutant.write_bytes(bytes(buf))
        outcome = convert_digests(mutant, tmp_path / f"out{i}")
        if outcome[0] == "refused":
            tally["refused"] += 1
        elif outcome == baseline:
            tally["identical"] += 1
        else:
            bad.append(f"{what}: {outcome}")
    assert not bad, "\n".join(bad)
    assert tally["refused"] >= 25, tally


@pytest.mark.parametrize(
    "change",
    [
        {"embed_dim": "64"},
        {"depth": True},
        {"embed_dim": 16384, "depth": 256},  # ~800 G parameters: refused before anything is allocated
        {"T": 0},
        {"tau": float("nan")},
        {"num_heads": 0},
    ],
)
def test_checkpoints_asking_for_impossible_models_are_refused(checkpoint, tmp_path, change):
    import torch

    ckpt = torch.load(checkpoint, weights_only=True)
    ckpt["model_config"].update(change)
    path = tmp_path / "edited.pt"
    torch.save(ckpt, path)
    status, _, err = call(["convert", str(path), "--out", str(tmp_path / "out"), "--no-onnx"])
    assert refused(status, err) and "model config" in err, (status, err)


# ------------------------------------------------------------------------------------------ argument matrix
def _subparsers(parser, prefix=()):
    """(argv prefix, parser) of every command and sub-command."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subparsers(sub, (*prefix, name))
            return
    yield prefix, parser


def _positionals(parser) -> list[str]:
    return ["x" for a in parser._actions if not a.option_strings and a.dest != "help" and a.nargs != "?"]


BAD_VALUES = {
    "positive_int": ["0", "-1", "two", "1.5"],
    "nonnegative_int": ["-1", "x"],
    "positive_float": ["0", "-1", "nan", "inf"],
    "finite_float": ["nan", "inf", "x"],
}


def argument_matrix(tmp_path):
    """Every flag of every command whose type is one of the shared argument types, with values it must refuse."""
    import os

    folder, a_file, fifo = tmp_path / "folder", tmp_path / "file", tmp_path / "fifo"
    folder.mkdir()
    a_file.write_text("x")
    os.mkfifo(fifo)
    bad_paths = {
        "output_file": [str(folder), str(a_file / "out.json"), str(fifo)],
        "output_dir": [str(a_file), str(a_file / "sub")],
    }
    cases = []
    for prefix, parser in _subparsers(build_parser()):
        for action in parser._actions:
            name = getattr(action.type, "__name__", None)
            values = BAD_VALUES.get(name) or bad_paths.get(name)
            if values and action.option_strings:
                flag = action.option_strings[-1]
                cases += [([*prefix, *_positionals(parser), flag, v], f"argument {flag}") for v in values]
            elif values:
                cases += [([*prefix, v], "argument") for v in values]
    return cases


def test_every_command_refuses_bad_numbers_and_output_paths_in_one_line(tmp_path, capsys):
    cases = argument_matrix(tmp_path)
    commands = {argv[0] for argv, _ in cases}
    assert len(cases) > 80 and {"run", "train", "convert", "report", "simulate", "export"} <= commands, len(cases)
    bad = []
    for argv, expected in cases:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        if exit_info.value.code != 2 or len(err) != 1 or expected not in err[0]:  # one line, no usage block
            bad.append(f"{argv}: {exit_info.value.code} {err}")
    assert not bad, "\n".join(bad)


def test_missing_and_special_input_files_are_refused_in_one_line(good, checkpoint, tmp_path):
    import os

    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    out = str(tmp_path / "out")
    for bad_input in (tmp_path / "missing.spk.h5", fifo, folder, checkpoint):
        for argv in (["inspect", str(bad_input)], ["check-hw", str(bad_input)], ["run", str(bad_input)]):
            status, _, err = call(argv)
            assert refused(status, err), (argv, status, err)
    for bad_input in (tmp_path / "missing.pt", fifo, folder, good):
        for argv in (["convert", str(bad_input), "--out", out], ["train", "--config", str(bad_input), "--out", out]):
            status, _, err = call(argv)
            assert refused(status, err), (argv, status, err)


# ------------------------------------------------------------------------------------- netx files (issue 26)
def netx_file(path, conv: bool = True, seed: int = 0):
    """A small lava-dl netx network as slayer's export_hdf5 writes one: conv -> flatten -> dense -> dense on a
    (6, 6, 2) map, or (``conv=False``) dense (with axonal delays) -> dense on 16 inputs. Integer weights, CUBA
    neurons that fire at 50-90 %."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def layer(group, i, kind, shape, weight=None):
        g = group.create_group(str(i))
        g.create_dataset("type", (1,), "S10", [kind.encode()])
        g.create_dataset("shape", data=np.array(shape))
        if weight is not None:
            g.create_dataset("weight", data=rng.integers(-20, 60, weight).astype(np.float32))
            n = g.create_group("neuron")
            n.create_dataset("type", data=b"CUBA")
            for key, value in (("iDecay", 1024), ("vDecay", 256), ("vThMant", 400), ("refDelay", 1)):
                n.create_dataset(key, data=np.int64(value))
        return g

    with h5py.File(path, "w") as f:
        group = f.create_group("layer")
        if conv:
            layer(group, 0, "input", [2, 6, 6])
            g = layer(group, 1, "conv", [4, 4, 4], (4, 2, 3, 3))
            for key, value in (("stride", [1, 1]), ("padding", [0, 0]), ("dilation", [1, 1])):
                g.create_dataset(key, data=np.array(value))
            g.create_dataset("groups", data=np.int64(1))
            g.create_dataset("bias", data=np.zeros(4, np.float32))
            layer(group, 2, "flatten", [64, 1, 1])
            layer(group, 3, "dense", [16], (16, 64))
            g = layer(group, 4, "dense", [10], (10, 16))
            g.create_dataset("bias", data=rng.integers(0, 3, 10).astype(np.float32) * 64)
        else:
            g = layer(group, 0, "dense", [12], (12, 16))
            g.create_dataset("delay", data=rng.integers(0, 3, 12).astype(np.float32))
            layer(group, 1, "dense", [10], (10, 12))
        sim = f.create_group("simulation")
        sim.create_dataset("Ts", data=np.int64(1))
        sim.create_dataset("tSample", data=np.int64(8))
    return path


def netx_spike_inputs(path, shape):
    import numpy as np

    np.save(path, (np.random.default_rng(1).random((4, 8, *shape)) < 0.4).astype(np.int8))
    return path


@pytest.fixture(scope="module")
def netx_good(tmp_path_factory):
    """{'conv' | 'flat': (netx file, its spike inputs)}."""
    root = tmp_path_factory.mktemp("netx")
    return {
        "conv": (netx_file(root / "conv.net"), netx_spike_inputs(root / "conv.npy", (6, 6, 2))),
        "flat": (netx_file(root / "flat.net", conv=False), netx_spike_inputs(root / "flat.npy", (16,))),
    }


def netx_results(path, inputs, tmp_path) -> dict[str, tuple[object, str]]:
    """What `run`, `convert` and `check-hw` make of a netx file: (status, output without the file names)."""
    out = {}
    json_path = tmp_path / "netx_run.json"
    for command in ("run", "convert", "check-hw"):
        argv = {
            "run": ["run", str(path), "--inputs", str(inputs), "--json", str(json_path)],
            "convert": ["convert", str(path), "--out", str(tmp_path / "netx_out"), "--json"],
            "check-hw": ["check-hw", str(path), "--json"],
        }[command]
        status, stdout, stderr = call(argv)
        if isinstance(status, str) or (status not in (0, 1) and not refused(status, stderr)):
            out[command] = (status, stderr.strip()[-500:])
        elif status == 2:
            out[command] = ("refused", "")
        elif command == "run":
            report = json.loads(json_path.read_text())
            out[command] = (status, json.dumps({k: report[k] for k in ("layers", "predictions")}))
        else:
            out[command] = (status, json.dumps(_without_paths(json.loads(stdout))))
    return out


def _without_paths(d):
    return {k: v for k, v in d.items() if k not in ("source", "artifact", "file")} if isinstance(d, dict) else d


def netx_edits():
    """Edits of a netx file (a format without digests: every edit is deliberate), each breaking one rule that the
    importer once read silently (NaN as 0, a transposed matrix reshaped) or answered with a traceback."""
    import numpy as np

    def replace(key, value):
        def edit(f):
            del f[key]
            f[key] = value

        return edit

    def flipped(key):
        def edit(f):
            value = f[key][()]
            del f[key]
            f[key] = value.T.copy()

        return edit

    def unwritten(key, shape):
        def edit(f):
            del f[key]
            f.create_dataset(key, shape=shape, dtype=np.float32)  # a 450 GiB weight in a file of a few KB

        return edit

    nan_bias = np.zeros(10, np.float32)
    nan_bias[3] = np.nan
    nan_delay = np.ones(12, np.float32)
    nan_delay[0] = np.nan
    # (file, edit, what the refusal must say)
    return {
        "NaN bias": ("conv", replace("layer/4/bias", nan_bias), "'layer/4/bias': holds 1 non-finite value(s)"),
        "inf weight": ("conv", replace("layer/3/weight", np.full((16, 64), np.inf, np.float32)), "non-finite"),
        "NaN delay": ("flat", replace("layer/0/delay", nan_delay), "'layer/0/delay': holds 1 non-finite"),
        "negative delay": ("flat", replace("layer/0/delay", -np.ones(12, np.float32)), "expected values >= 0"),
        "weight 0.5": ("flat", replace("layer/1/weight", np.full((10, 12), 0.5, np.float32)), "whole numbers"),
        "transposed dense weight": ("flat", flipped("layer/1/weight"), "(a transposed matrix is not reshaped)"),
        "transposed square-sized weight": ("conv", flipped("layer/3/weight"), "expected (16, inputs)"),
        "dense weight of another input": (
            "conv",
            replace("layer/3/weight", np.ones((16, 32), np.float32)),
            "expected (16, 64): 16 outputs of 64 inputs",
        ),
        "conv weight of other channels": (
            "conv",
            replace("layer/1/weight", np.ones((5, 2, 3, 3))),
            "5 output channels",
        ),
        "weight missing": ("conv", lambda f: f["layer/3"].__delitem__("weight"), "'layer/3/weight': is missing"),
        "shape missing": ("conv", lambda f: f["layer/3"].__delitem__("shape"), "'layer/3/shape': is missing"),
        "type missing": ("conv", lambda f: f["layer/3"].__delitem__("type"), "'layer/3/type': is missing"),
        "vThMant missing": ("flat", lambda f: f["layer/1/neuron"].__delitem__("vThMant"), "neuron/vThMant': is miss"),
        "string weight": ("flat", replace("layer/1/weight", np.array([b"w"] * 4)), "expected numbers"),
        "type a number": ("flat", replace("layer/1/type", np.array([3])), "expected a string"),
        "iDecay two values": ("flat", replace("layer/1/neuron/iDecay", np.array([1, 2])), "expected 1"),
        "iDecay 4096.5": ("flat", replace("layer/1/neuron/iDecay", np.float64(4096.5)), "whole numbers"),
        "vThMant 1e30": ("flat", replace("layer/1/neuron/vThMant", np.float64(1e30)), "within 32 bits"),
        "neuron a dataset": ("flat", replace("layer/1/neuron", np.ones(3)), "'layer/1/neuron': is not a group"),
        "gap in the layers": ("conv", lambda f: f.move("layer/4", "layer/7"), "layer/4 is missing"),
        "layer a dataset": ("conv", replace("layer/2", np.ones(3)), "'layer/2': is a dataset"),
        "/layer a dataset": ("conv", replace("layer", np.ones(3)), "'/layer': is a dataset"),
        "tSample a string": ("conv", replace("simulation/tSample", b"sixteen"), "'simulation/tSample'"),
        "tSample NaN": ("conv", replace("simulation/tSample", np.float64(np.nan)), "'simulation/tSample'"),
        "a 450 GiB weight": ("conv", unwritten("layer/3/weight", (2**16, 2**21)), "the limit is 134217728"),
        "a huge layer": ("conv", replace("layer/4/shape", np.array([2**13, 2**13, 2**13])), "the limit is 16777216"),
        "empty shape": ("flat", replace("layer/1/shape", np.zeros(0, np.int64)), "'layer/1/shape': is empty"),
    }


@pytest.mark.parametrize("name", list(netx_edits()))
def test_netx_edits_that_break_a_rule_are_refused_in_one_line(netx_good, tmp_path, name):
    which, edit, reason = netx_edits()[name]
    good, inputs = netx_good[which]
    path = tmp_path / "edited.net"
    path.write_bytes(good.read_bytes())
    with h5py.File(path, "r+") as f:
        edit(f)
    for command, (status, output) in netx_results(path, inputs, tmp_path).items():
        assert status == "refused", f"{name} | {command}: {status} {output}"
    status, _, err = call(["run", str(path), "--inputs", str(inputs)])
    assert refused(status, err) and reason in err, f"{name}: {status} {err}"


def test_damaged_netx_files_are_refused_read_identically_or_another_valid_network(netx_good, tmp_path):
    """netx files carry no checksum: a flipped bit in a weight's value is another valid network, which runs. Every
    other damage must be refused; nothing may end in a traceback, a crash or a hang."""
    rng = random.Random(SEED)
    good, inputs = netx_good["conv"]
    data, baseline = good.read_bytes(), netx_results(good, inputs, tmp_path)
    assert all(status == 0 for status, _ in baseline.values()), baseline
    mutant, bad, tally = tmp_path / "damaged.net", [], {"refused": 0, "identical": 0, "other network": 0}
    for i in range(30):
        buf = bytearray(data)
        what = flip_bit(buf, rng) if i % 3 else f"truncated at {len(buf) - 1 - rng.randrange(len(buf) // 2)}"
        if not i % 3:
            del buf[int(what.rsplit(" ", 1)[1]) :]
        mutant.write_bytes(bytes(buf))
        for command, (status, output) in netx_results(mutant, inputs, tmp_path).items():
            if status == "refused":
                tally["refused"] += 1
            elif (status, output) == baseline[command]:
                tally["identical"] += 1
            elif status in (0, 1) and "flip" in what:
                tally["other network"] += 1
            else:
                bad.append(f"{what} | {command}: {status} {output[:300]}")
    assert not bad, "\n".join(bad)
    assert tally["refused"] > 20, tally


# ---------------------------------------------------------------------------------------- .npy inputs (issue 26)
def npy_cases():
    """name -> (write the file at a path, what the refusal says, or None: the run must be identical)."""
    import io as _io

    import numpy as np

    spikes = (np.random.default_rng(1).random((4, 8, 6, 6, 2)) < 0.4).astype(np.int8)

    def array(a, **kw):
        return lambda p: np.save(p, a, allow_pickle=True, **kw)

    def raw(data: bytes):
        return lambda p: p.write_bytes(data)

    def header_only(shape):  # the header of a 4 TB array, no data
        def write(p):
            buf = _io.BytesIO()
            np.lib.format.write_array_header_2_0(buf, {"descr": "|i1", "fortran_order": False, "shape": shape})
            p.write_bytes(buf.getvalue())

        return write

    def npz(p):
        with open(p, "wb") as fh:
            np.savez(fh, x=spikes)

    def truncated(p):
        np.save(p, spikes)
        p.write_bytes(p.read_bytes()[:-100])

    nan = spikes.astype(np.float32)
    nan[0, 0, 0, 0, 0] = np.nan
    return {
        "0-d": (array(np.array(1)), "an array of shape ()"),
        "empty": (array(np.zeros((0, 8, 6, 6, 2), np.int8)), "no axis of length 0"),
        "a zero axis": (array(np.zeros((4, 0, 6, 6, 2), np.int8)), "no axis of length 0"),
        "npz": (npz, "an .npz archive"),
        "objects": (array(np.array([{"x": 1}], dtype=object)), "dtype object"),
        "records": (array(np.zeros(4, [("a", "i1")])), "expected numbers"),
        "strings": (array(np.array(["1"])), "dtype <U1"),
        "NaN": (array(nan), "NaN or infinite"),
        "2": (array(spikes * 2), "values other than 0 and 1"),
        "truncated": (truncated, "truncated"),
        "text": (raw(b"0,1,0\n"), "not an .npy file"),
        "a 4 TB header": (header_only((2**42,)), "the limit is 268435456"),
        "rank 2": (array(np.ones((4, 8), np.int8)), "expected [S, T, ...]"),
        "another map": (array(np.ones((4, 8, 6, 6, 3), np.int8)), "reads (6, 6, 2)"),
        "10001 steps": (array(np.zeros((1, 10_001, 6, 6, 2), np.int8)), "expected 1..10000"),
        # the same spikes in other dtypes and orders: read as they are
        "bool": (array(spikes.astype(bool)), None),
        "float": (array(spikes.astype(np.float64)), None),
        "fortran order": (array(np.asfortranarray(spikes)), None),
    }


@pytest.mark.parametrize("name", list(npy_cases()))
def test_bad_npy_inputs_are_refused_and_good_ones_read_identically(netx_good, tmp_path, name):
    write, reason = npy_cases()[name]
    good, inputs = netx_good["conv"]
    path = tmp_path / "x.npy"
    write(path)
    status, _, err = call(["run", str(good), "--inputs", str(path), "--json", str(tmp_path / "r.json")])
    if reason is not None:
        assert refused(status, err) and reason in err and str(path) in err, f"{name}: {status} {err}"
        return
    assert status == 0, err
    got = json.loads((tmp_path / "r.json").read_text())
    call(["run", str(good), "--inputs", str(inputs), "--json", str(tmp_path / "base.json")])
    base = json.loads((tmp_path / "base.json").read_text())
    assert [got[k] for k in ("layers", "predictions")] == [base[k] for k in ("layers", "predictions")]


# ------------------------------------------------------------------------------ checkpoints: content (issue 26)
def _edited_checkpoint(checkpoint, tmp_path, edit):
    import torch

    ckpt = torch.load(checkpoint, weights_only=True)
    edit(ckpt)
    path = tmp_path / "edited.pt"
    torch.save(ckpt, path)
    return path


def _first_weight(ckpt):
    return next(v for k, v in ckpt["model"].items() if k.endswith("proj_conv.weight"))


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda c: _first_weight(c).view(-1).__setitem__(0, float("nan")), "holds 1 non-finite value(s)"),
        (lambda c: _first_weight(c).fill_(float("inf")), "non-finite value(s)"),
        (lambda c: c.update(model=list(c["model"].values())), "entry 'model' is a list"),
        (lambda c: c["model"].update(extra="not a tensor"), "holds 'extra' -> str"),
        (lambda c: c.update(model_config=[1, 2]), "entry 'model_config' is a list"),
        (lambda c: c.update(epoch=-1), "entry 'epoch' is -1"),
        (lambda c: c.update(epoch="one"), "entry 'epoch' is 'one'"),
        # issue 35: the dataset was refused without the file or the entry; 1e30 printed numpy's overflow warning and
        # was refused three steps later naming an exponent
        (lambda c: c["train_config"].update(dataset="imagenet7"), "entry 'train_config.dataset' is 'imagenet7'"),
        (lambda c: c.update(train_config=["digits"]), "entry 'train_config' is a list"),
        (lambda c: _first_weight(c).fill_(1e30), "holds values up to 1e+30 in magnitude, expected at most 1e+15"),
    ],
)
def test_checkpoints_whose_weights_or_structure_are_wrong_are_refused(checkpoint, tmp_path, edit, reason):
    """NaN weights once converted to an artifact whose conv weights were all -128 (exit 0)."""
    path = _edited_checkpoint(checkpoint, tmp_path, edit)
    for argv in (
        ["convert", str(path), "--out", str(tmp_path / "out"), "--no-onnx", "--calibrate", "0"],
        ["analyze", str(path), "--out", str(tmp_path / "an"), "--samples", "4"],
    ):
        status, _, err = call(argv)
        assert refused(status, err) and reason in err, (argv[0], status, err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_pickles_that_are_no_torch_checkpoint_are_refused_without_torchs_warning(tmp_path):
    """A raw pickle printed torch's two-line warning about its protocol, then a refusal that quoted torch's advice
    to load it with weights_only=False (which runs the file's code)."""
    import pickle

    import torch

    # the file-kind check names a raw pickle before the checkpoint reader opens it
    cases = {"raw.pt": "this is a raw Python pickle", "legacy4.pt": "weights-only loader refused it"}
    with open(tmp_path / "raw.pt", "wb") as f:
        pickle.dump({"model": {"w": 1}}, f, protocol=4)
    torch.save({"a": 1}, tmp_path / "legacy4.pt", _use_new_zipfile_serialization=False, pickle_protocol=4)
    for name, reason in cases.items():
        status, _, err = call(["convert", str(tmp_path / name), "--out", str(tmp_path / "out"), "--no-onnx"])
        assert refused(status, err) and reason in err and "weights_only` set to `False" not in err, (name, err)


# ---------------------------------------------------------------------------------- run reports (issue 26)
@pytest.fixture(scope="module")
def run_report(good, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "run.json"
    status, _, err = call(["run", str(good), "--samples", "8", "--json", str(path)])
    assert status == 0, err
    return path


def report_edits():
    """Edits of a run report (JSON text: every edit is deliberate) that once printed other figures or a traceback."""

    def layer(i, key, value):
        return lambda d: d["layers"][i].__setitem__(key, value)

    def deep(d):
        x: list = []
        for _ in range(200):
            x = [x]
        d["nested"] = x

    lif = 2  # patch_embed.proj_lif
    return {
        "negative spikes": (layer(lif, "spikes", [-5, 1, 1, 1]), "expected a per-time-step list of counts"),
        "samples 1e18": (lambda d: d.update(samples=10**18), "'samples': expected an integer in 1..100000000"),
        "samples 1e18 as a float": (lambda d: d.update(samples=1e18), "'samples'"),
        "samples true": (lambda d: d.update(samples=True), "'samples'"),
        "T 1e9 beside 4-step lists": (lambda d: d.update(T=10**9), "'T': expected an integer in 1..10000"),
        "T 5 beside 4-step lists": (lambda d: d.update(T=5), "4 time steps, expected 5 (the report's T)"),
        "a 3-step layer": (layer(lif, "synops", [1, 1, 1]), "3 time steps, expected 4"),
        "more spikes than neurons": (layer(lif, "spikes", [10**9, 1, 1, 1]), "more than its 512 neurons x 8 samples"),
        "a 401-digit integer": (layer(lif, "macs", [10**400, 0, 0, 0]), "an integer of 401 digits"),
        "nested 200 deep": (deep, "nested more than 32 levels deep"),
        "NaN wall time": (lambda d: d.update(wall_time_s=float("nan")), "'wall_time_s': is nan"),
        "inf in totals": (lambda d: d["totals"].update(spikes=float("inf")), "is inf"),
        "9 predictions for 8 samples": (lambda d: d["predictions"].append(0), "9 predictions for 8 samples"),
        "negative prediction": (lambda d: d["predictions"].__setitem__(0, -1), "'predictions'"),
        "neurons 2.5": (layer(lif, "neurons", 2.5), "expected an integer >= 0"),
        "another attention variant": (
            lambda d: d["model"].update(attention="lrf_dyn"),
            "describes another network than the run's layers: attention op 'dendritic'",
        ),
        "another depth": (lambda d: d["model"].update(depth=3), "depth 3"),
        "another T in the model": (lambda d: d["model"].update(T=2), "T 2"),
        "an invalid model config": (lambda d: d["model"].update(embed_dim="64"), "not a valid model config"),
        "a model config without arch": (lambda d: d["model"].pop("arch"), "without 'arch'"),
        "compare agreement 7": (
            lambda d: d.update(compare={"identical": True, "layers": [], "prediction_agreement": 7}),
            "'compare.prediction_agreement'",
        ),
        "lava reset interval": (lambda d: d.update(lava={"reset_interval": -4}), "'lava.reset_interval'"),
        "energy measured negative": (lambda d: d.update(energy_measured={"total_J": -1.0}), "total_J"),
    }


@pytest.mark.parametrize("name", list(report_edits()))
def test_run_reports_that_break_a_rule_are_refused_in_one_line(run_report, tmp_path, name):
    edit, reason = report_edits()[name]
    data = json.loads(run_report.read_text())
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    status, _, err = call(["report", str(path), "--no-gpu", "--quiet", "--json", str(tmp_path / "s.json")])
    assert refused(status, err) and reason in err, f"{name}: {status} {err}"
    assert not (tmp_path / "s.json").exists()


def test_run_reports_that_are_not_json_objects_are_refused(run_report, tmp_path):
    text = run_report.read_text()
    for name, content in {
        "nested 100000 deep": "[" * 100_000 + "]" * 100_000,
        "a 5000-digit integer": text.replace('"samples": 8', '"samples": ' + "9" * 5000),
        "truncated": text[: len(text) // 2],
        "binary": "\x00\x01\x02",
        "a list": "[1, 2]",
    }.items():
        path = tmp_path / "bad.json"
        path.write_text(content)
        status, _, err = call(["report", str(path), "--no-gpu", "--quiet"])
        assert refused(status, err) and str(path) in err, f"{name}: {status} {err[:500]}"


def test_an_intact_run_report_is_reported(run_report, tmp_path):
    status, _, err = call(["report", str(run_report), "--no-gpu", "--quiet", "--json", str(tmp_path / "s.json")])
    assert status == 0, err
    assert json.loads((tmp_path / "s.json").read_text())["runs"][0]["samples"] == 8


# ------------------------------------------------------------------------------- hardware profiles (issue 26)
def _profile_text(**changes) -> str:
    """loihi2.yaml with ``changes`` applied (section.key.field = value, or a top-level key)."""
    import yaml

    from spikeport.hw_profiles import PROFILE_DIR

    data = yaml.safe_load((PROFILE_DIR / "loihi2.yaml").read_text())
    for path, value in changes.items():
        keys = path.split("__")
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return yaml.safe_dump(data)


def _alias_bomb(levels: int, width: int) -> str:
    """A profile entry whose value is ``levels`` lists of ``width`` aliases to the list before: a few hundred bytes
    of YAML, ``width ** levels`` values once expanded (9**9 once made a 351 MB error message quoting the value)."""
    chain = [f"&a0 [{', '.join(['lol'] * width)}]"]
    chain += [f"&a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return _profile_text(energy__synop__value="BOMB").replace("BOMB", f"[{', '.join(chain)}]")


def profile_cases():
    """name -> (profile file text or bytes, what the refusal says)."""
    return {
        "a 9**9 alias bomb": (_alias_bomb(9, 9), "nested more than 8 levels deep"),
        "a 60**3 alias bomb": (_alias_bomb(3, 60), "more than 100000 values once YAML aliases are expanded"),
        "binary": (b"\x00\x01\xfe\xff" * 100, "not UTF-8 text"),
        "nested 2000 deep": ("a: " + "[" * 2000 + "]" * 2000, "nested too deeply"),
        "2 MB": ("# " + "x" * (2 << 20), "not a hardware profile (at most 1048576)"),
        "neurons_per_core 0": (_profile_text(limits__neurons_per_core__value=0), "a chip limit is a number > 0"),
        "cores_per_chip 1.5": (_profile_text(limits__cores_per_chip__value=1.5), "a chip limit is a number > 0"),
        "a value as text": (_profile_text(energy__synop__value="lots"), "is not a finite non-negative number"),
        "a unit as a list": (_profile_text(energy__synop__unit=["pJ"]), "is not a unit of energy"),
        "a source as a mapping": (_profile_text(energy__synop__source={"a": 1}), "'source' must be a non-empty"),
        "a note of 5000 characters": (_profile_text(energy__synop__note="n" * 5000), "at most 2000 characters"),
        "a range with NaN": (_profile_text(energy__synop__range=[float("nan"), 1.0]), "range"),
        "schema_version true": (_profile_text(schema_version=True), "'schema_version': expected 1"),
        "a key that is a number": (_profile_text(energy__synop=None).replace("synop: null", "7: null"), "7"),
        "a list": ("[1, 2, 3]", "a profile is a mapping"),
        "YAML with a 100 KB line": ("a: [" + "x" * 100_000, "not valid YAML"),
    }


@pytest.mark.parametrize("name", list(profile_cases()))
def test_bad_profiles_are_refused_in_one_bounded_line(good, run_report, tmp_path, name):
    content, reason = profile_cases()[name]
    path = tmp_path / "chip.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    for argv in (
        ["check-hw", str(good), "--profile", str(path)],
        ["report", str(run_report), "--no-gpu", "--quiet", "--profile", str(path)],
    ):
        status, _, err = call(argv)
        assert refused(status, err) and reason in err and str(path) in err, f"{name} | {argv[0]}: {status} {err[:600]}"


def test_check_hw_refuses_a_profile_without_chip_limits(good):
    status, _, err = call(["check-hw", str(good), "--profile", "cmos45nm"])
    assert refused(status, err) and "profile 'cmos45nm' (cmos) has no chip limits" in err, err


# ---------------------------------------------------------------------- flags that do not apply (issue 26)
def flag_cases(good, checkpoint, netx, netx_artifact, run_json, tmp):
    """argv -> what the one-line refusal says. Each of these flags was read and then ignored."""
    net, inputs = netx
    return {
        ("run", net, "--inputs", inputs, "--dataset", "cifar10"): "(--dataset) applies to artifacts of a checkpoint",
        ("run", netx_artifact, "--inputs", inputs, "--num-layers", "2"): "(--num-layers) applies to lava-dl netx files",
        ("run", netx_artifact, "--inputs", inputs, "--input-shape", "6,6,2"): "(--input-shape) applies to lava-dl netx",
        ("run", good, "--inputs", inputs): "this artifact takes [S, 8, 8, 1]",  # spikes are not images
        ("run", good, "--input-shape", "8,8,1"): "(--input-shape) applies to lava-dl netx files only",
        ("run", good, "--compare", "reference"): "--compare does not apply to --backend reference",
        ("run", good, "--backend", "lava", "--batch-size", "8"): "--batch-size does not apply to --backend lava",
        ("convert", checkpoint, "--out", tmp, "--steps", "4"): "--steps does not apply to a checkpoint",
        ("convert", checkpoint, "--out", tmp, "--input-drive", "bias"): "--input-drive does not apply",
        ("convert", net, "--out", tmp, "--calibrate", "0"): "--calibrate does not apply to a netx file",
        ("convert", net, "--out", tmp, "--no-onnx", "--eval-samples", "4"): "--eval-samples, --no-onnx do not apply",
        ("convert", "--list-supported", "--out", tmp): "--out does not apply with --list-supported",
        ("check-hw", good, "--input-shape", "3,4"): "input_shape = [3, 4] (--input-shape) applies to lava-dl netx",
        ("report", run_json, "--no-gpu", "--gpu", "h100"): "--gpu does not apply with --no-gpu",
        ("report", run_json, "--no-gpu", "--no-vit"): "--no-vit does not apply with --no-gpu",
        ("bench", "gpu", "digits-tiny", "--batches", "1,2"): "--batches does not apply without --modes",
        ("bench", "gpu", "digits-tiny", "--modes", "--batch", "4"): "--batch does not apply with --modes",
        ("bench", "gpu", "digits-tiny", "--no-cpu", "--cpu-threads", "2"): "--cpu-threads does not apply",
        ("analyze", "--hf", "bert-base", "--out", tmp, "--split", "train"): "--split does not apply with --hf",
        ("analyze", checkpoint, "--out", tmp, "--seq-len", "64"): "--seq-len does not apply to a checkpoint",
        ("simulate", "particles", "--out", tmp, "--tau", "3"): "--tau does not apply to --dynamics self",
        ("train", "--qat-lr", "0.001", "--out", tmp): "--qat-lr does not apply without --qat",
    }


def test_flags_that_do_not_apply_are_refused_in_one_line(good, checkpoint, netx_good, run_report, tmp_path):
    net, inputs = netx_good["conv"]
    netx_artifact = tmp_path / "netx_build" / "model.spk.h5"
    assert call(["convert", str(net), "--out", str(netx_artifact.parent)])[0] == 0
    cases = flag_cases(good, checkpoint, (net, inputs), netx_artifact, run_report, tmp_path / "out")
    bad = []
    for argv, reason in cases.items():
        status, _, err = call([str(a) for a in argv])
        if not (refused(status, err) and reason in err):
            bad.append(f"{argv}: {status} {err.strip()[:300]}")
    assert not bad, "\n".join(bad)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------- HDF5 reaching outside its file (issue 35)
@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """What a hostile file reaches for: another HDF5 file, a raw file, a FIFO, and a gzip'd dataset of zeros that
    declares 1 GiB in a file of about 1 MB (a compression bomb), written a chunk at a time."""
    import numpy as np

    root = tmp_path_factory.mktemp("outside")
    with h5py.File(root / "other.h5", "w") as f:
        f["x"] = np.arange(4)
    np.zeros(16).tofile(root / "raw.bin")
    os.mkfifo(root / "fifo.h5")
    with h5py.File(root / "bomb.h5", "w") as f:
        ds = f.create_dataset(
            "w", shape=(1 << 14, 1 << 13), dtype=np.float64, chunks=(1 << 7, 1 << 13), compression="gzip"
        )
        zeros = np.zeros((1 << 7, 1 << 13))
        for i in range(0, 1 << 14, 1 << 7):
            ds[i : i + (1 << 7)] = zeros
    return root


def hdf5_reaches(root):
    """name -> (add the member at ``at`` of an open file, what the refusal says)."""
    import numpy as np

    def copy_bomb(f, at):
        with h5py.File(root / "bomb.h5") as bomb:
            bomb.copy("w", f, name=at)

    def virtual(f, at):
        layout = h5py.VirtualLayout(shape=(4,), dtype="i8")
        layout[:] = h5py.VirtualSource(str(root / "other.h5"), "x", shape=(4,))
        f.create_virtual_dataset(at, layout)

    def plugin(f, at):  # an optional filter HDF5 does not have: written unfiltered, read through a plugin lookup
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4,))
        dcpl.set_filter(32004, h5py.h5z.FLAG_OPTIONAL, ())
        h5py.h5d.create(f.id, at.encode(), h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((4,)), dcpl=dcpl)

    return {
        "external link": (
            lambda f, at: f.__setitem__(at, h5py.ExternalLink(str(root / "other.h5"), "/x")),
            "is an external link to",
        ),
        "external link to a FIFO": (
            lambda f, at: f.__setitem__(at, h5py.ExternalLink(str(root / "fifo.h5"), "/x")),
            "is an external link to",
        ),
        "external storage": (
            lambda f, at: f.create_dataset(at, shape=(16,), dtype="f8", external=[(str(root / "raw.bin"), 0, 128)]),
            "stores its values in 1 external file(s)",
        ),
        "virtual dataset": (virtual, "is a virtual dataset"),
        "plugin filter": (plugin, "HDF5 filter 32004, a plugin"),
        "compression bomb": (copy_bomb, "declares 1073741824 bytes"),
        "unwritten 32 MiB": (lambda f, at: f.create_dataset(at, shape=(1 << 22,), dtype=np.float64), "stores 0"),
    }


@pytest.mark.parametrize("name", list(hdf5_reaches(None)))
def test_hdf5_that_reaches_outside_its_file_is_refused_by_every_reader(good, netx_good, outside, tmp_path, name):
    """External links, external raw storage, virtual datasets and plugin filters were followed (a FIFO blocked the
    reader); a compression bomb was read whole. Now every reader refuses them naming the file and the member, from
    headers alone."""
    edit, reason = hdf5_reaches(outside)[name]
    net, inputs = netx_good["conv"]
    cases = {
        "artifact": (good, "nodes/1/extra", [["inspect"], ["check-hw"], ["run", "--samples", "4"]]),
        # (inspect reads artifacts only: a netx file is refused by its kind, from its root names, before any read)
        "netx": (net, "layer/0/extra", [["run", "--inputs", str(inputs)], ["check-hw"]]),
    }
    for kind, (source, at, commands) in cases.items():
        path = tmp_path / f"{kind}.h5"
        path.write_bytes(source.read_bytes())
        with h5py.File(path, "r+") as f:
            edit(f, at)
        out = tmp_path / "out"
        for argv in [[c[0], str(path), *c[1:]] for c in commands] + [["convert", str(path), "--out", str(out)]]:
            status, _, err = call(argv)
            assert refused(status, err) and f"{path}: field '/{at}'" in err and reason in err, (kind, argv, err)
        assert not out.exists()


def test_a_compression_bomb_is_refused_in_bounded_memory(netx_good, outside, tmp_path):
    """A dense layer 8192 -> 16384 whose weight, all zeros gzip'd, declares 1 GiB in a file of about 1 MB: every
    shape fits, so the reader read it whole (and twice more as it converted it). The refusal reads headers only: the
    process grows no more than check-hw of a small network does."""
    import sys

    import numpy as np

    bomb = tmp_path / "bomb.net"
    with h5py.File(bomb, "w") as f:
        for i, n in enumerate((1 << 14, 10)):
            g = f.create_group(f"layer/{i}")
            g.create_dataset("type", (1,), "S10", [b"dense"])
            g["shape"] = np.array([n])
            if i == 0:
                with h5py.File(outside / "bomb.h5") as source:
                    source.copy("w", g, name="weight")
            else:
                g["weight"] = np.ones((10, 1 << 14), np.float32)
            neuron = g.create_group("neuron")
            neuron["type"] = b"CUBA"
            for key, value in (("iDecay", 1024), ("vDecay", 256), ("vThMant", 400)):
                neuron[key] = np.int64(value)
    assert bomb.stat().st_size < 4 << 20
    peaks = {}
    for name, argv in (("small", [netx_good["conv"][0]]), ("bomb", [bomb, "--input-shape", "8192"])):
        proc = subprocess.Popen(
            [sys.executable, "-m", "spikeport", "check-hw", *map(str, argv)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read()
        proc.stderr.close()
        peaks[name] = (os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, err[-500:])
    assert peaks["bomb"][0] == 2 and "inflates more than 256x" in peaks["bomb"][2], peaks
    assert peaks["small"][0] == 0 and peaks["bomb"][1] < peaks["small"][1] + 64, peaks  # MiB


def test_hdf5_features_that_stay_inside_the_file_are_read_as_before(netx_good, tmp_path):
    """A soft link and a gzip'd member that inflates as real data does are read; the run is identical."""
    import numpy as np

    net, inputs = netx_good["conv"]
    path = tmp_path / "inside.net"
    path.write_bytes(net.read_bytes())
    with h5py.File(path, "r+") as f:
        f["layer/0/alias"] = h5py.SoftLink("/layer/1/weight")
        f.create_dataset("notes", data=np.arange(100_000), compression="gzip")
    got, base = netx_results(path, inputs, tmp_path), netx_results(net, inputs, tmp_path)
    assert got["run"] == base["run"] and got["convert"][0] == got["check-hw"][0] == 0, got


# ------------------------------------------------------------------ the bundle's files (issue 35, requirement 6)
@pytest.fixture(scope="module")
def bundle_run(good, tmp_path_factory):
    """A bundle of ``good`` run by its own runner (the plan's simulation here): its folder, with result.json."""
    from spikeport.runtime.loihi2 import bundle_run as runner

    folder = tmp_path_factory.mktemp("bundle") / "b"
    assert call(["bundle", str(good), "--out", str(folder), "--samples", "2"])[0] == 0
    with contextlib.redirect_stdout(io.StringIO()):
        assert runner.main([str(folder), "--simulate"]) == 0
    return folder


def result_edits():
    """Forged or damaged result files (a run report with a ``hardware`` block) -> what the refusal names."""

    def hw(key, value):
        return lambda d: d["hardware"].__setitem__(key, value)

    return {
        "truncated": (None, "not a JSON file"),
        "a digest that is no SHA-256": (lambda d: d.update(artifact_digest="forged"), "'artifact_digest'"),
        "another artifact's digest": (lambda d: d.update(artifact_digest="0" * 64), "the bundle it lies in ran"),
        "more samples than the bundle": (
            lambda d: d.update(samples=3, predictions=d["predictions"] + [0]),
            "field 'hardware.samples': 2, the run report's samples are 3",
        ),
        "another drive": (hw("drive", "bias"), "field 'hardware.drive': 'bias', but the bundle it lies in ran"),
        "an unknown drive": (hw("drive", "laser"), "expected 'bias' or 'adapter'"),
        "identical with a mismatch": (hw("first_mismatch", {"output": "x", "sample": 0}), "hardware.first_mismatch"),
        "different without a mismatch": (hw("outputs_identical", False), "hardware.first_mismatch"),
        "a mismatch past the samples": (
            lambda d: d["hardware"].update(outputs_identical=False, first_mismatch={"output": "x", "sample": 9}),
            "'hardware.first_mismatch.sample': 9: expected 0..1",
        ),
        "a chip config in a simulation": (hw("run_config", "Loihi2HwCfg()"), "is not how loihi2-sim runs"),
        "latency in a simulation": (hw("io_latency", 3), "the simulated adapters add none"),
        "bias bits with the adapter drive": (hw("bias_bits", 15), "'hardware.bias_bits'"),
        "energy measured in a simulation": (
            lambda d: d.update(energy_measured={"available": True, "total_J": 1e-3}),
            "a simulation measures none",
        ),
        "static above total": (
            lambda d: d.update(executor="loihi2", energy_measured={"total_J": 1e-3, "static_J": 2e-3}),
            "'energy_measured.static_J'",
        ),
        "negative time per step": (
            lambda d: d.update(energy_measured={"time_per_step_s": -1.0}),
            "'energy_measured.time_per_step_s'",
        ),
        "spikes past the neurons": (
            lambda d: d["layers"][2].__setitem__("spikes", [10**9] * len(d["layers"][2]["spikes"])),
            "more than its",
        ),
        # issue 42: the verdict recomputed from the predictions and the bundle's expected ones
        "identical with every prediction changed": (
            lambda d: d.update(predictions=[(p + 1) % 10 for p in d["predictions"]]),
            "field 'hardware.outputs_identical': true, but 2 of 2 predictions differ from the bundle's expected ones",
        ),
        "another accuracy for the same predictions": (
            lambda d: d.update(accuracy=0.5 if d["accuracy"] != 0.5 else 1.0),
            "field 'accuracy'",
        ),
        "a first mismatch after a changed prediction": (
            lambda d: (
                d.update(predictions=[(d["predictions"][0] + 1) % 10, d["predictions"][1]]),
                d["hardware"].update(outputs_identical=False, first_mismatch={"output": "x", "sample": 1}),
            ),
            "field 'hardware.first_mismatch.sample': 1, but the prediction of sample 0 already differs",
        ),
        "no predictions": (lambda d: d.pop("predictions"), "field 'predictions': missing"),
        # issue 42: measurements held to what a Loihi 2 run can measure
        "1e300 J": (
            lambda d: d.update(executor="loihi2", energy_measured={"total_J": 1e300}),
            "more than a whole Hala Point system",
        ),
        "a 0 s time step": (
            lambda d: d.update(energy_measured={"total_J": 1e-3, "time_per_step_s": 0}),
            "'energy_measured.time_per_step_s': 0: expected seconds, a finite number > 0",
        ),
        "chips 'two'": (
            lambda d: d.update(energy_measured={"total_J": 1e-3, "chips": "two"}),
            "'energy_measured.chips'",
        ),
        "chips 0": (
            lambda d: d.update(energy_measured={"total_J": 1e-3, "chips": 0}),
            "expected a whole number of chips",
        ),
        "a chip drawing 1 MW": (
            lambda d: d.update(energy_measured={"total_J": 1e-3, "total_power_W": 1e6}),
            "'energy_measured.total_power_W'",
        ),
        "a split that is no sum": (
            lambda d: d.update(energy_measured={"total_J": 1e-3, "static_J": 2e-4, "dynamic_J": 2e-4}),
            "is not static_J + dynamic_J",
        ),
    }


@pytest.mark.lava
@pytest.mark.parametrize("name", list(result_edits()))
def test_forged_bundle_results_are_refused_by_report_in_one_line(bundle_run, tmp_path, name):
    """A result.json brought back from a bundle run is read as it is: one that disagrees with itself or with the
    bundle it lies in is refused naming the field (the intact one is reported)."""
    import shutil

    edit, reason = result_edits()[name]
    folder = tmp_path / "b"
    shutil.copytree(bundle_run, folder, ignore=shutil.ignore_patterns("lib"))
    text = (folder / "result.json").read_text()
    if edit is None:
        (folder / "result.json").write_text(text[: len(text) // 2])
    else:
        data = json.loads(text)
        edit(data)
        (folder / "result.json").write_text(json.dumps(data))
    status, _, err = call(["report", str(folder / "result.json"), "--no-gpu", "--quiet"])
    assert refused(status, err) and reason in err and str(folder / "result.json") in err, f"{name}: {status} {err}"


@pytest.mark.lava
def test_an_intact_bundle_result_is_reported_in_its_folder_and_alone(bundle_run, tmp_path):
    import shutil

    shutil.copy(bundle_run / "result.json", tmp_path / "result.json")
    for path in (bundle_run / "result.json", tmp_path / "result.json"):
        status, _, err = call(["report", str(path), "--no-gpu", "--quiet"])
        assert status == 0, err


@pytest.mark.lava
def test_a_result_beside_an_edited_expected_run_is_refused(bundle_run, tmp_path):
    """The expected predictions a result is held to are the bundle's own: an expected.json edited after the bundle
    was written (its SHA-256 no longer bundle.json's) cannot vouch for a result."""
    import shutil

    folder = tmp_path / "b"
    shutil.copytree(bundle_run, folder, ignore=shutil.ignore_patterns("lib"))
    data = json.loads((folder / "expected.json").read_text())
    data["predictions"] = [(p + 1) % 10 for p in data["predictions"]]
    (folder / "expected.json").write_text(json.dumps(data))
    status, _, err = call(["report", str(folder / "result.json"), "--no-gpu", "--quiet"])
    assert refused(status, err) and "expected.json: changed since the bundle was written" in err, err


def _resealed(folder, name: str, write) -> None:
    """Replace a bundle's data file by what ``write(path)`` writes and re-seal its SHA-256 in bundle.json."""
    import hashlib

    write(folder / name)
    manifest = json.loads((folder / "bundle.json").read_text())
    manifest["files"][name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    (folder / "bundle.json").write_text(json.dumps(manifest))


def data_edits():
    """Bundle data files replaced and their digests re-sealed -> what the runner's one-line refusal says."""

    def npy(array):
        return lambda path: np.save(path, array)

    def truncated(path):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    def expected_with(change):
        def write(path):
            with np.load(path) as data:
                arrays = {k: data[k] for k in data.files}
            change(arrays)
            np.savez(path, **arrays)

        return write

    def longer(arrays):
        key = next(k for k in arrays if k.startswith("out/"))
        arrays[key] = np.concatenate([arrays[key], arrays[key]], axis=1)

    return {
        "inputs of another shape": ("inputs.npy", npy(np.zeros((2, 4, 4, 1), np.float32)), "expected floats"),
        "inputs as strings": ("inputs.npy", npy(np.array(["a", "b"])), "inputs.npy: <U1 (2,)"),
        "inputs with NaN": ("inputs.npy", npy(np.full((2, 8, 8, 1), np.nan, np.float32)), "NaN"),
        "inputs truncated": ("inputs.npy", truncated, "inputs.npy: truncated or damaged"),
        "inputs not an array": ("inputs.npy", lambda p: p.write_text("hello"), "inputs.npy: not a .npy array"),
        "labels as strings": ("labels.npy", npy(np.array(["3", "7"])), "labels.npy: <U1 (2,), expected integers"),
        "labels as floats": ("labels.npy", npy(np.array([3.0, 7.0])), "labels.npy: float64 (2,), expected integers"),
        "labels negative": ("labels.npy", npy(np.array([-3, 7])), "labels.npy: a negative class"),
        "labels one short": ("labels.npy", npy(np.array([3])), "of shape (2,)"),
        "expected truncated": ("expected.npz", truncated, "expected.npz: not a readable .npz"),
        "expected of more steps": ("expected.npz", expected_with(longer), "expected integers (2, 4, n)"),
        "expected with a foreign array": (
            "expected.npz",
            expected_with(lambda a: a.update(junk=np.zeros(3))),
            "unexpected array 'junk'",
        ),
        "expected of floats": (
            "expected.npz",
            expected_with(lambda a: a.update({k: v.astype(float) for k, v in a.items()})),
            "float64",
        ),
    }


@pytest.mark.lava
@pytest.mark.parametrize("name", list(data_edits()))
def test_the_bundle_runner_refuses_resealed_data_by_shape_and_format(bundle_run, tmp_path, name):
    """Data files whose digests were re-sealed are intact, not right: each is refused by shape and format in one
    line naming the file, before anything runs (an inputs.npy of another shape ended in an AssertionError, a
    truncated expected.npz in zipfile.BadZipFile, string labels scored accuracy 0 with exit 0)."""
    import shutil

    from spikeport.runtime.loihi2 import bundle_run as runner

    file, write, reason = data_edits()[name]
    folder = tmp_path / "b"
    shutil.copytree(bundle_run, folder, ignore=shutil.ignore_patterns("lib", "result.json"))
    _resealed(folder, file, write)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status: object = runner.main([str(folder), "--simulate"])
        except Exception as error:  # noqa: BLE001 - what the test looks for
            status = f"TRACEBACK {type(error).__name__}: {error}"
    message = err.getvalue()
    assert refused(status, message) and reason in message and file in message, f"{name}: {status} {message}"
    assert not (folder / "result.json").exists()


@pytest.mark.lava
def test_a_result_that_cannot_be_written_is_saved_elsewhere_and_named(bundle_run, tmp_path, short_tmp, monkeypatch):
    """The bundle folder's result.json cannot be replaced (a folder is in its place): the run's result is written
    to a fallback file that the one-line error names, complete."""
    import shutil
    import tempfile

    from spikeport.run_report import RunReport
    from spikeport.runtime.loihi2 import bundle_run as runner

    folder = tmp_path / "b"
    shutil.copytree(bundle_run, folder, ignore=shutil.ignore_patterns("lib", "result.json"))
    (folder / "result.json").mkdir()
    (folder / "result.json" / "keep").write_text("a folder in the way")
    fallbacks = short_tmp  # the Lava run's sockets are made in it too
    monkeypatch.setattr(tempfile, "tempdir", str(fallbacks))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = runner.main([str(folder), "--simulate"])
    (saved,) = fallbacks.glob("spikeport-result-*.json")
    assert refused(status, err.getvalue()) and f"it is saved at {saved}" in err.getvalue(), err.getvalue()
    expected = RunReport.from_json(bundle_run / "result.json")
    assert RunReport.from_json(saved).predictions == expected.predictions


def test_an_existing_bundle_folder_is_refused_before_any_work(good, tmp_path, monkeypatch):
    """`bundle --out` a folder holding files: refused at once (it was refused after ~13 s of work: the data, the
    reference run, check-hw), naming the folder."""
    from spikeport.ir import artifact as artifacts

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("a user's file")
    reads = []
    monkeypatch.setattr(artifacts, "read", lambda *a, **k: reads.append(a))
    status, _, err = call(["bundle", str(good), "--out", str(tmp_path / "out"), "--samples", "2"])
    assert refused(status, err) and "already holds files" in err and str(tmp_path / "out") in err, err
    assert reads == [] and (tmp_path / "out" / "mine.txt").read_text() == "a user's file"


def manifest_edits():
    """Damaged or edited bundle.json -> what the runner's one-line refusal says."""

    def set_key(key, value):
        return lambda d: d.__setitem__(key, value)

    return {
        "truncated": (None, "not a readable bundle manifest"),
        "a list": (lambda d: [d], "not a spikeport bundle manifest"),
        "states a number": (set_key("states", 5), "field 'states': expected a list of layer names"),
        "an unknown drive": (set_key("drive", "laser"), "field 'drive': expected 'bias' or 'adapter'"),
        "samples 1e9": (set_key("samples", 10**9), "field 'samples'"),
        "samples beside the inputs": (set_key("samples", 3), "field 'samples': 3, inputs.npy holds 2"),
        "partition a number": (set_key("partition", 7), "field 'partition'"),
        "another artifact": (set_key("artifact_digest", "0" * 64), "is not model.spk.h5's root digest"),
        "a file left out": (lambda d: d["files"].pop("labels.npy") and None, "field 'files'"),
        "version 2": (set_key("schema_version", 2), "field 'schema_version'"),
    }


@pytest.mark.lava
@pytest.mark.parametrize("name", list(manifest_edits()))
def test_the_bundle_runner_refuses_a_damaged_manifest_in_one_line(bundle_run, tmp_path, name):
    import shutil

    from spikeport.runtime.loihi2 import bundle_run as runner

    edit, reason = manifest_edits()[name]
    folder = tmp_path / "b"
    shutil.copytree(bundle_run, folder, ignore=shutil.ignore_patterns("lib", "result.json"))
    text = (folder / "bundle.json").read_text()
    if edit is None:
        (folder / "bundle.json").write_text(text[: len(text) // 2])
    else:
        data = json.loads(text)
        changed = edit(data)  # None: edited in place
        (folder / "bundle.json").write_text(json.dumps(data if changed is None else changed))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status: object = runner.main([str(folder), "--simulate"])
        except Exception as error:  # noqa: BLE001 - what the test looks for
            status = f"TRACEBACK {type(error).__name__}: {error}"
    assert refused(status, err.getvalue()) and reason in err.getvalue(), f"{name}: {status} {err.getvalue()}"
    assert not (folder / "result.json").exists()


def test_run_reports_are_held_to_the_op_registry(run_report, tmp_path):
    """A layer of an op that does not exist ("softmax") was accepted and moved the state-memory figures; a row
    counting what its op never counts (spikes on a dense layer) is no run of spikeport's; a model config of another
    width (embed_dim) made the GPU baseline build another network (a 653 M-parameter ONNX export failed)."""

    def layer_named(d, name):
        return next(layer for layer in d["layers"] if layer["name"] == name)

    cases = {
        "an op that does not exist": (
            lambda d: layer_named(d, "patch_embed.proj_lif").update(op="softmax"),
            "layer 'patch_embed.proj_lif': 'softmax' is no op",
        ),
        "spikes on a dense layer": (
            lambda d: layer_named(d, "block.0.attn.q_linear").update(spikes=[3, 0, 0, 0]),
            "a dense layer counts macs, neuron_updates, synops, synops_valued, not spikes",
        ),
        "a counter on an input": (
            lambda d: layer_named(d, "input").update(synops=[1, 0, 0, 0]),
            "an input layer counts nothing, not synops",
        ),
        "another width": (lambda d: d["model"].update(embed_dim=4096), "embed_dim 4096 (64 tokens)"),
    }
    for name, (edit, reason) in cases.items():
        data = json.loads(run_report.read_text())
        edit(data)
        path = tmp_path / "edited.json"
        path.write_text(json.dumps(data))
        status, _, err = call(["report", str(path), "--quiet"])  # with the GPU baseline: its model is built
        assert refused(status, err) and reason in err and str(path) in err, f"{name}: {status} {err}"


# ------------------------------------------------------------ calibrate's measured inputs (issue 42, item 2)
def _measured(run_report, tmp_path, name: str, change=None, dynamic_x: float = 0.8):
    """``run_report`` with a measurement a Loihi 2 run could make (dynamic ``dynamic_x`` times the loihi2 estimate
    of its counts, static 0.232 W as PilotNet-LIF's, 150 us a step), then ``change`` applied to it."""
    from spikeport.metrics.energy import estimate
    from spikeport.run_report import RunReport

    data = json.loads(run_report.read_text())
    dynamic = estimate(RunReport.from_dict(data), "loihi2", chips=1).energy_J * dynamic_x
    static = 0.232 * 150e-6 * data["T"]
    data["energy_measured"] = {"label": "measured", "per_inference": True, "chips": 1, "time_per_step_s": 150e-6,
                               "static_J": static, "dynamic_J": dynamic, "total_J": static + dynamic}  # fmt: skip
    if change is not None:
        change(data["energy_measured"])
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


CALIBRATE_CASES = {  # a measurement -> what the one-line refusal names
    "a 0 s time step": (lambda m: m.update(time_per_step_s=0), "'energy_measured.time_per_step_s': 0"),
    "0 chips": (lambda m: m.update(chips=0), "'energy_measured.chips': 0: expected a whole number of chips"),
    "chips 'two'": (lambda m: m.update(chips="two"), "'energy_measured.chips': 'two'"),
    "2.5 chips": (lambda m: m.update(chips=2.5), "'energy_measured.chips': 2.5"),
    "all zero": (lambda m: m.update(total_J=0, static_J=0, dynamic_J=0), "'energy_measured.total_J': 0"),
    "no dynamic energy": (
        lambda m: m.update(dynamic_J=0, total_J=m["static_J"]),
        "'energy_measured.dynamic_J': 0 J: a calibration scales",
    ),
    "9e299 J": (lambda m: m.update(dynamic_J=9e299, total_J=9e299), "more than a whole Hala Point system"),
    "a negative dynamic energy": (lambda m: m.update(dynamic_J=-1e-4), "'energy_measured.dynamic_J'"),
    "a chip drawing 5 kW": (lambda m: m.update(total_power_W=5e3), "'energy_measured.total_power_W'"),
    "a split that is no sum": (lambda m: m.update(total_J=m["total_J"] * 3), "is not static_J + dynamic_J"),
}


@pytest.mark.parametrize("name", list(CALIBRATE_CASES))
def test_calibrate_refuses_what_no_loihi2_run_measures(run_report, tmp_path, name):
    """A measurement no Loihi 2 run can make is refused in one line naming the run report and the field, before
    anything is fitted or written (`time_per_step_s = 0`, `chips = 0` were a ZeroDivisionError, `chips = "two"` a
    ValueError, zero dynamic energy fitted 0.0 pJ to every op, 9e299 J fitted 7.9e+304 pJ)."""
    change, reason = CALIBRATE_CASES[name]
    path = _measured(run_report, tmp_path, "measured", change)
    out = tmp_path / "fitted.yaml"
    status, _, err = call(["calibrate", str(path), "--out", str(out)])
    assert refused(status, err) and reason in err and str(path) in err, f"{name}: {status} {err}"
    assert not out.exists()


def test_calibrate_holds_unvalidated_run_reports_and_the_fit_to_the_bounds(run_report, tmp_path):
    """Through the API a RunReport is taken as it is (no file was read): its measurement is held to the same
    bounds; a fit whose per-op energy leaves 0.1 fJ..100 nJ names the run that drives it there; an intact pair of
    runs fits."""
    from spikeport import api
    from spikeport.errors import ConfigError
    from spikeport.run_report import RunReport

    good_run = _measured(run_report, tmp_path, "good")
    two = RunReport.from_json(good_run)
    assert two.energy_measured is not None
    two.energy_measured["chips"] = "two"
    with pytest.raises(ConfigError, match=r"field 'energy_measured\.chips': 'two'"):
        api.calibrate([two], tmp_path / "x.yaml")
    high = _measured(run_report, tmp_path, "high", dynamic_x=2000.0)  # ~2.1 kW: within the power bound
    with pytest.raises(ConfigError, match=rf"{high}: the fit gives energy\.spike_chip_hop = .* pJ an op, outside"):
        api.calibrate([good_run, high], tmp_path / "x.yaml")
    low = _measured(run_report, tmp_path, "low", dynamic_x=1e-6)
    with pytest.raises(ConfigError, match=rf"{low}: the fit gives energy\.synop = 2\.36e-05 pJ an op, outside"):
        api.calibrate([low], tmp_path / "x.yaml")
    assert not (tmp_path / "x.yaml").exists()
    fitted = api.calibrate([good_run, _measured(run_report, tmp_path, "other", dynamic_x=1.2)], tmp_path / "x.yaml")
    assert fitted.scale == pytest.approx(1.0, rel=0.05) and (tmp_path / "x.yaml").is_file()


def test_calibrate_out_never_overwrites_an_input(run_report, tmp_path):
    """`--out` the measured run report (by its name, another spelling or a link) or the base profile file: refused
    before the fit, the input as it was."""
    path = _measured(run_report, tmp_path, "measured")
    before = path.read_bytes()
    profile = tmp_path / "mine.yaml"
    status, _, err = call(["calibrate", str(path), "--out", str(profile)])
    assert status == 0, err
    profile_before = profile.read_bytes()
    (tmp_path / "link.json").symlink_to(path)
    for out, inputs in (
        (path, [str(path)]),
        (tmp_path / "." / "measured.json", [str(path)]),
        (tmp_path / "link.json", [str(path)]),
        (profile, [str(path), "--profile", str(profile)]),
    ):
        status, _, err = call(["calibrate", *inputs, "--out", str(out)])
        assert refused(status, err) and "is the input" in err, (out, err)
    assert path.read_bytes() == before and profile.read_bytes() == profile_before


# -------------------------------------------- SpikingJelly and official checkpoints (issue 42, item 4)
@pytest.fixture(scope="module")
def sj_file(tmp_path_factory):
    """A SpikingJelly model.spikformer state dict (8x8 grey images, D 64, 2 blocks) saved as SpikingJelly's examples
    save it."""
    import torch

    pytest.importorskip("spikingjelly")
    from spikingjelly.activation_based.model.spikformer import Spikformer as SJSpikformer

    torch.manual_seed(0)
    sj = SJSpikformer(T=4, in_channels=1, img_size_h=8, img_size_w=8, patch_size=4, num_classes=10, embed_dims=64,
                      num_heads=4, depths=2)  # fmt: skip
    path = tmp_path_factory.mktemp("sj") / "sj.pth"
    torch.save({"net": sj.state_dict(), "epoch": 3}, path)
    return path


def sj_edits():
    """Edits of a SpikingJelly state dict -> what the one-line refusal names (file, key, expected shape)."""
    import torch

    rpe = "patch_embed.positional_encoding.conv_bn.block.0.weight"
    stem = "patch_embed.stages.0.conv_bn.block.0.weight"
    qkv = "blocks.0.attn.qkv_conv_bn.0.weight"

    def drop(key):
        return lambda s: s.pop(key)

    def reshape(key, f):
        return lambda s: s.__setitem__(key, f(s[key]))

    return {
        "no head.weight": (
            drop("head.weight"),
            "key 'head.weight' is missing: expected a tensor of shape (classes, 64)",
        ),
        "no position encoding": (drop(rpe), f"key '{rpe}' is missing: expected a tensor of shape (D, D, 3, 3)"),
        "no fc1 in block 0": (drop("blocks.0.mlp.fc1.0.weight"), "key 'blocks.0.mlp.fc1.0.weight' is missing"),
        "no fc2 in block 1": (
            drop("blocks.1.mlp.fc2.0.weight"),
            "key 'blocks.1.mlp.fc2.0.weight' is missing: expected a tensor of shape (64, 256, 1)",
        ),
        "a 1-D stem weight": (reshape(stem, torch.flatten), f"key '{stem}' has shape (72,), expected (8, C_in, 3, 3)"),
        "a transposed qkv": (
            reshape(qkv, lambda t: t.transpose(0, 1).contiguous()),
            f"key '{qkv}' has shape (64, 192, 1), expected (192, 64, 1)",
        ),
        "a BN of another width": (
            reshape("blocks.0.attn.proj_conv_bn.1.running_var", lambda t: t[:32]),
            "key 'blocks.0.attn.proj_conv_bn.1.running_var' has shape (32,), expected (64,)",
        ),
        "no BN statistics": (drop("patch_embed.stages.2.conv_bn.block.1.running_mean"), "running_mean' is missing"),
        "a head bias short": (reshape("head.bias", lambda t: t[:3]), "key 'head.bias' has shape (3,), expected (10,)"),
        "a 1-D head": (reshape("head.weight", torch.flatten), "key 'head.weight' has shape (640,), expected (classes"),
    }


@pytest.mark.parametrize("name", list(sj_edits()))
def test_spikingjelly_checkpoints_name_the_file_the_key_and_the_shape(sj_file, tmp_path, name):
    """A SpikingJelly checkpoint with a missing or misshaped tensor: one CheckpointError naming the file, the key and
    the shape expected (a missing head.weight, position encoding or block 0's fc1 was a KeyError, a 1-D stem weight
    an IndexError, and the messages named `<state dict>`)."""
    import torch

    from spikeport.errors import CheckpointError
    from spikeport.train import checkpoint as ck

    edit, reason = sj_edits()[name]
    obj = torch.load(sj_file, weights_only=True)
    edit(obj["net"])
    path = tmp_path / "edited.pth"
    torch.save(obj, path)
    with pytest.raises(CheckpointError) as caught:
        ck.spikingjelly_model(path, img_size=8)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and reason in message and "\n" not in message, message


def test_official_checkpoints_name_the_missing_keys_shape_and_img_size_is_checked_first(sj_file, tmp_path):
    """An official Spikformer checkpoint without a tensor names the file, the key and the shape the model expects;
    a model whose img_size is not the data set's is refused before any image is read or anything converted."""
    import torch

    from spikeport import api
    from spikeport.errors import CheckpointError, ConfigError
    from spikeport.train import checkpoint as ck
    from spikeport.train.models import build_model
    from spikeport.train.presets import preset_config

    model = build_model(preset_config("digits-tiny", neuron_backend="torch"))
    state = {f"module.{k}": v for k, v in model.state_dict().items() if k != "head.weight"}
    path = tmp_path / "official.pth.tar"
    torch.save({"state_dict": state, "epoch": 1}, path)
    with pytest.raises(CheckpointError, match=rf"^{path}: .*missing keys \[head\.weight \(10, 64\)\]"):
        ck.load_official_state_dict(build_model(preset_config("digits-tiny", neuron_backend="torch")), path)
    sj16 = ck.spikingjelly_model(sj_file, img_size=16)  # the weights hold no image size: the user's word
    with pytest.raises(ConfigError, match=r"dataset digits holds 8x8 images, the model takes img_size 16"):
        api.convert(sj16, tmp_path / "out", dataset="digits", calibrate=4, samples=2)
    assert not (tmp_path / "out").exists()
