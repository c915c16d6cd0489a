"""The command-line convention of docs/cli.md: every command and subcommand has a description and an example in
its --help, --version, --json to stdout or to a file, tables at the terminal's width; and the public API
functions document themselves in help()."""

from __future__ import annotations

import argparse
import json
import pydoc
import re
from pathlib import Path

import pytest

from spikeport.cli import COMMANDS, build_parser, main

DOCS = Path(__file__).resolve().parents[1] / "docs"


def subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) for every subcommand at any depth."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from subcommands(sub, (*path, name))


def test_every_subcommand_has_a_description_and_an_example():
    found = dict(subcommands(build_parser()))
    assert {p[0] for p in found} == {c.replace("_", "-") for c in COMMANDS}
    assert ("bench", "gpu") in found and ("simulate", "sweep") in found
    for path, parser in found.items():
        text = parser.format_help()
        assert parser.description and len(parser.description) > 40, path
        examples = re.findall(r"^  spikeport .*$", text.split("examples:")[-1], re.M) if "examples:" in text else []
        assert examples, f"spikeport {' '.join(path)} --help has no example"
        assert all(e.split()[1] == path[0] for e in examples), (path, examples)
        sub = next(iter(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:  # a leaf command: the flags of docs/cli.md
            flags = {opt for a in parser._actions for opt in a.option_strings}
            if path != ("demo",):  # the demo writes a folder of files (its report.json among them)
                assert "--json" in flags, path
            assert "--quiet" in flags, path


def test_version_and_root_help(capsys):
    from spikeport import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"spikeport {__version__}"
    text = build_parser().format_help()
    assert "spikeport convert runs/" in text and "--json FILE" in text


def test_docs_cli_names_every_command():
    text = (DOCS / "cli.md").read_text()
    for name in COMMANDS:
        assert f"`{name.replace('_', '-')}" in text, name


def test_json_to_stdout_is_only_json_and_to_a_file_keeps_the_tables(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["info", "digits-tiny", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)  # nothing but the JSON on stdout
    assert data["params"] > 0
    out = tmp_path / "info.json"
    assert main(["info", "spikformer-8-768", "--layers", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert json.loads(out.read_text())["params"] > data["params"] and f"wrote {out}" in text
    lines = [line for line in text.splitlines() if str(tmp_path) not in line]  # a long path cannot wrap
    assert max(len(line) for line in lines) <= 80 and "…" not in text  # the table at the terminal's width
    assert "patch_embed.proj_conv" in text and f"{json.loads(out.read_text())['params']:,}" in text


def test_quiet_prints_nothing_but_the_files(tmp_path, capsys):
    out = tmp_path / "info.json"
    assert main(["info", "digits-tiny", "--quiet", "--json", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"


@pytest.mark.parametrize("name", ["train", "convert", "run", "report", "check_hw", "bench_gpu", "info", "inspect"])
def test_api_functions_show_their_signature_and_docstring_in_help(name):
    from spikeport import api

    fn = getattr(api, name)
    text = pydoc.render_doc(fn, renderer=pydoc.plaintext)
    first = fn.__doc__.strip().splitlines()[0]
    assert f"{name}(" in text and first in text
    params = [p for p in __import__("inspect").signature(fn).parameters if p not in ("args", "kwargs")]
    assert params and all(p in text for p in params)
