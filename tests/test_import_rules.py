"""Which imports may be function-local in src/spikeport (issue 24): only those whose laziness does work.

An import inside a function (or class) is allowed when the module it imports is

1. an optional heavy package (``DEFERRED_PACKAGES``: the ``train``/``lava``/``hf`` extras and what they bring),
   so that a deploy-only install (numpy + h5py + lava) never needs torch, and training never needs Lava;
2. a spikeport module that imports one of those at its top level, itself or through the modules it imports
   there (``spikeport.train.models`` imports torch), for the same reason;
3. imported by a module that ``spikeport --help`` (or ``import spikeport.api``) loads, and not loaded by that
   startup itself: every command pays for what its startup imports, so the CLI and ``spikeport.api`` import
   the rest on use (tests/test_api.py: ``import spikeport.api`` loads neither numpy nor h5py);
4. in ``EXCEPTIONS``, each with its reason.

Everything else (the standard library, numpy, a light spikeport module) goes at the top of the file, where a
reader sees a module's dependencies in one place and a missing one fails on import, not on first use. Imports
under ``if TYPE_CHECKING:`` are not function-local. import-linter (tests/test_import_contracts.py) already
rejects cycles between sibling modules, so no function-local import is needed to break one.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

DEFERRED_PACKAGES = frozenset(
    {
        "torch",  # the train extra, and what comes with it
        "spikingjelly",
        "norse",
        "nir",
        "nirtorch",
        "onnx",
        "onnxruntime",
        "sklearn",
        "scipy",
        "matplotlib",
        "mpl_toolkits",
        "PIL",
        "numba",  # the CPU training step's LIF loops (train/lif_kernels.py), and llvmlite with it
        "llvmlite",
        "snntorch",  # NeuroBench's comparison (baselines/neurobench.py), with what it brings
        "neurobench",
        "pynvml",  # GPU baselines, only on a machine with an NVIDIA driver
        "lava",  # the lava extra
        "transformers",  # the hf extra
    }
)

# (importing module, imported module) -> why it stays function-local
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("spikeport.atomic", "fcntl"): "POSIX only: where it is missing, the file flags read as unset",
    ("spikeport.ir.kernels.lif", "spikeport.ir.kernels"): "the package imports every kernel module as it initialises",
    # the code runs without it, BLAS then keeps its threads: only slower
    ("spikeport.runtime.sim.reference", "threadpoolctl"): "optional at run time (default_workers is 1 without it)",
    ("spikeport.runtime.lava.session", "threadpoolctl"): "optional at run time (BLAS keeps its threads without it)",
    # a .pth runs it at every interpreter start of the venv: it must import nothing until Lava is imported
    ("spikeport.lava_startup", "spikeport.runtime.lava.compat"): "imports numpy: waits for Lava's first import",
    ("spikeport.lava_startup", "site"): "the installer's only (python -m spikeport.lava_startup --install)",
    ("spikeport.lava_startup", "pathlib.Path"): "the installer's only (python -m spikeport.lava_startup --install)",
}


@dataclass(frozen=True)
class LocalImport:
    module: str  # the importing module
    target: str  # the imported module (spikeport's own resolved to the module file; else the import's name)
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def source_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / "spikeport").rglob("*.py"))}


def own_module(name: str) -> str | None:
    """The spikeport module file that ``name`` (a module, or a module's attribute) is, or None for another
    package's."""
    modules = source_modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: resolved against the importing module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    return [f"{base}.{alias.name}" for alias in node.names]


@cache
def imports_of(module: str) -> tuple[frozenset[str], tuple[LocalImport, ...]]:
    """The modules ``module`` imports at its top level (spikeport's resolved to module files), and its
    function-local imports."""
    path = source_modules()[module]
    is_package = path.name == "__init__.py"
    top: set[str] = set()
    local: list[LocalImport] = []

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for name in imported_names(child, module, is_package):
                    target = own_module(name) or name
                    if nested:
                        local.append(LocalImport(module, target, path, child.lineno))
                    else:
                        top.add(target)
            scope = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            visit(child, nested or isinstance(child, scope))

    visit(ast.parse(path.read_text(), str(path)), nested=False)
    return frozenset(top), tuple(local)


def parents(module: str) -> list[str]:
    """The packages Python imports before ``module``."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@cache
def loaded_packages(module: str) -> frozenset[str]:
    """The other packages (top-level names) that importing spikeport's ``module`` loads."""
    seen: set[str] = set()
    packages: set[str] = set()
    pending = [module]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in [*parents(current), *imports_of(current)[0]]:
            if name in source_modules():
                pending.append(name)
            else:
                packages.add(name.partition(".")[0])
    return frozenset(packages)


def is_deferred(target: str) -> bool:
    """Rules 1 and 2: an optional heavy package, or a spikeport module that imports one."""
    if target in source_modules():
        return bool(loaded_packages(target) & DEFERRED_PACKAGES)
    return target.partition(".")[0] in DEFERRED_PACKAGES


STARTUPS = {
    "import spikeport.api": "import spikeport.api",
    "spikeport --help": "from spikeport.cli import main\n"
    "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
    "    main(['--help'])",
}


@cache
def startup_modules(startup: str) -> frozenset[str]:
    """What one of ``STARTUPS`` loads, run in a fresh interpreter."""
    script = f"import contextlib, io, json, sys\n{STARTUPS[startup]}\nprint(json.dumps(sorted(sys.modules)))\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return frozenset(json.loads(proc.stdout))


def is_startup_deferral(found: LocalImport) -> bool:
    """Rule 3: a module that a startup loads imports one that this startup does not (the standard library is
    cheap and goes at the top: ``sys.stdlib_module_names``)."""
    if found.target.partition(".")[0] in sys.stdlib_module_names:
        return False
    return any(found.module in loaded and found.target not in loaded for loaded in map(startup_modules, STARTUPS))


def is_exception(found: LocalImport) -> bool:
    return any((found.module, name) in EXCEPTIONS for name in (found.target, found.target.partition(".")[0]))


def all_local_imports() -> list[LocalImport]:
    return [found for module in source_modules() for found in imports_of(module)[1]]


def test_function_local_imports_are_deferred_for_a_reason():
    misplaced = [
        str(found)
        for found in all_local_imports()
        if not (is_deferred(found.target) or is_startup_deferral(found) or is_exception(found))
    ]
    assert not misplaced, (
        "function-local imports of light modules: move them to the top of the file (tests/test_import_rules.py "
        "says which may stay local):\n  " + "\n  ".join(misplaced)
    )


def test_exceptions_are_still_needed():
    local = {
        (found.module, name) for found in all_local_imports() for name in (found.target, found.target.partition(".")[0])
    }
    stale = [f"{module} -> {target}" for module, target in EXCEPTIONS if (module, target) not in local]
    assert not stale, f"EXCEPTIONS lists imports that are no longer function-local: {stale}"


def test_startup_loads_no_deferred_package():
    """The deploy side (``spikeport run`` on a netx file) works without torch, and `spikeport --help` needs
    neither torch nor Lava."""
    for startup in STARTUPS:
        loaded = {name.partition(".")[0] for name in startup_modules(startup)} & DEFERRED_PACKAGES
        assert not loaded, f"`{startup}` imports {sorted(loaded)}"


def test_the_rule_sees_spikeport_modules_that_import_torch():
    """The classifier itself: a spikeport module that imports torch through another is deferred; a light one
    is not."""
    assert is_deferred("spikeport.train.models")
    assert is_deferred("torch.nn")
    assert not is_deferred("spikeport.errors")
    assert not is_deferred("numpy")
    assert "spikeport.cli" in startup_modules("spikeport --help")
    assert "spikeport.train.models" not in startup_modules("spikeport --help")
