"""Issue 16's fuzz test: seeded corruptions of a real artifact and a real checkpoint, read by every command that
reads them, and the bad-argument matrix of every command. Each case must end in a one-line refusal (exit 2) or a
result identical to the intact file's: never a traceback, a hang or a silently different result.

Corruptions are of two kinds. *Damage* (flipped bits and bytes, truncations, edits without the digests) must be
refused or harmless. *Deliberate edits* (the digests recomputed, ``conftest.reseal``) make an intact file of another
model: they may run with another result, but a broken rule must still be one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import signal

import h5py
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


def refused(status: object, err: str) -> bool:
    lines = err.strip().splitlines()
    return status == 2 and len(lines) == 1 and "error" in lines[0]


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
