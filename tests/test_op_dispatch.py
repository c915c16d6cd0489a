"""The registry rule (issue 11, DESIGN.md section 9): no code branches on an IR op's name outside the kernel
records (ir/kernels/) and the per-op registrations. A grep over the sources for every op ``KERNELS`` knows; each
exception is listed with its reason, so a new `node.op == "conv"` or `graph.by_op("lif")` elsewhere fails here."""

import re
from pathlib import Path

from spikeport.ir.kernels import KERNELS

SRC = Path(__file__).resolve().parents[1] / "src" / "spikeport"
OPS = "|".join(sorted(KERNELS, key=len, reverse=True))
# `x.op == "lif"`, `op in ("conv", ...)`, `l["op"] != "add"`, `graph.by_op("lif")`
PATTERN = re.compile(
    rf"""(\.op|\[["']op["']\]|(?<!for )\bop)\s*(==|!=|\bin\b|\bnot in\b)\s*[\(\[{{]?\s*["']({OPS})["']"""
    rf"""|\bby_op\(\s*["']({OPS})["']"""
)

ALLOWED = {
    # Rows of a run report (JSON, possibly from another spikeport version) classified for display; no
    # pipeline behaviour depends on them.
    "report/summary.py": "labels the state rows of a run report (lif: neurons; K^T V / X: attention)",
    "report/tables.py": "hides rows without work (input, add) in the per-layer table the terminal and HTML print",
    "cli/run.py": "hides rows without work (input, add) in the terminal table",
    "cli/convert.py": "hides rows without work (input, add) in the terminal table",
    # Left to the lead's restructuring of the run stage (issue 24 requirement 1)
    "api/running.py": "by_op('readout'): an artifact converted from a checkpoint has a readout to score",
    # The converter and the exporters that walk a graph of one known model family; to move into per-op
    # records with them (issue 24 requirement 3)
    "convert/api.py": "by_op('lif'): the LIF shapes the calibration records",
    "convert/passes.py": "by_op('lif' / 'conv'): the threshold-balancing and weight-folding passes",
    "convert/qat.py": "by_op('readout'): the head QAT fine-tunes",
    "exports/nir_graph.py": "by_op('lif'): the time constants NIR's CubaLIF nodes share",
}


def test_the_op_list_is_every_kernel():
    assert {"input", "conv", "dense", "lif", "readout", "sigma_delta", "rf", "delta", "sigma"} <= set(KERNELS)
    assert all(re.search(rf"\b{op}\b", OPS) for op in KERNELS)
    assert PATTERN.search('graph.by_op("rf")') and PATTERN.search("if node.op == 'sigma':")
    assert not PATTERN.search('for op in ("add", "mult")') and not PATTERN.search("by_op(name)")


def test_no_op_name_dispatch_outside_the_registries():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("ir/kernels/") or rel in ALLOWED:
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if PATTERN.search(line.split("#")[0]):
                found.append(f"{rel}:{i}: {line.strip()}")
    assert not found, "op-name dispatch outside the registries:\n" + "\n".join(found)


def test_the_allowed_exceptions_still_exist():
    for rel in ALLOWED:
        assert PATTERN.search((SRC / rel).read_text()), f"{rel} no longer branches on op names: drop it from ALLOWED"
