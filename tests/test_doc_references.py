"""Names and paths that docs/, README.md and the package's docstrings cite must exist: a renamed module or a
removed function otherwise leaves the docs pointing at nothing (four docstrings did, before this test)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "spikeport"
# files cited as `a/b.py`; spikeport's own when the first folder is one of these (Lava's sources are cited too)
PATH = re.compile(r"`+((?:[\w-]+/)*[\w-]+\.(?:py|md|yaml|sh|toml))`+")
OWN_ROOTS = {"src", "spikeport", "tests", "benchmarks", "scripts", "docs", ".ci"} | {
    p.name for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"
}
DOTTED = re.compile(r"`+(spikeport(?:\.\w+)+)`+")
SCHEMA = re.compile(r"schema\W{0,3}$")  # `spikeport.report` as a schema name, not a module
# docs that cite other projects' files by their bare names (Lava's sources)
FOREIGN_DOCS = {"lava_notes.md", "loihi2_sources.md", "loihi2.md"}
# files the tool writes (cited as outputs), and the team's design card kept outside the repository
OUTPUTS = {"config.yaml", "ablation.md", "DESIGN.md", "run.sh", "README.md"}  # README.md: a bundle's too
LAVA_SOURCE = re.compile(r"(^|/)lava/(magma|lib|utils|proc|networks)/")  # Lava's and lava-dl's own files


def _own_files() -> list[Path]:
    skip = {".venv", ".venv310", ".git", "build", "runs", "demo", "node_modules"}
    return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


FILES = _own_files()
SUFFIXES = {str(p.relative_to(ROOT)) for p in FILES}


def _path_exists(cited: str) -> bool:
    """A cited path names a file of the repository: from the root, or as the tail of a file's path."""
    return cited in SUFFIXES or any(s.endswith("/" + cited) for s in SUFFIXES)


def _name_exists(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _problems(text: str, where: str, foreign_ok: bool) -> list[str]:
    problems = []
    for line in text.splitlines():
        if "removed" in line:  # history: "(`metrics/activations.py`, removed)"
            continue
        for m in PATH.finditer(line):
            cited = m.group(1)
            first = cited.split("/")[0]
            own = (first in OWN_ROOTS and not LAVA_SOURCE.search(cited)) if "/" in cited else not foreign_ok
            if own and cited not in OUTPUTS and not _path_exists(cited):
                problems.append(f"{where}: `{cited}` is no file of the repository")
        for m in DOTTED.finditer(line):
            if SCHEMA.search(line[: m.start()]) or line[m.end() : m.end() + 1] == "-":
                continue
            if not _name_exists(m.group(1)):
                problems.append(f"{where}: `{m.group(1)}` names nothing importable")
    return problems


def _docstrings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))]
    return [d for d in (ast.get_docstring(n) for n in nodes) if d]


def test_docs_cite_existing_files_and_names():
    problems = []
    for doc in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        problems += _problems(doc.read_text(), doc.name, foreign_ok=doc.name in FOREIGN_DOCS)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("package", sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name[0] != "_"))
def test_docstrings_cite_existing_files_and_names(package):
    problems = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for doc in _docstrings(path):
            problems += _problems(doc, str(path.relative_to(ROOT)), foreign_ok=False)
    assert not problems, "\n".join(problems)
