"""The registry rule (issue 11, DESIGN.md section 9): no code branches on an IR op's name outside the kernel
records (ir/kernels/) and the per-op registrations. A grep over the sources; each exception is listed with
its reason, so a new `node.op == "conv"` elsewhere fails here."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "spikeport"
OPS = "input|conv|dense|attention|dendritic|lif|maxpool|add|readout|sigma_delta"
# `x.op == "lif"`, `op in ("conv", ...)`, `l["op"] != "add"`
PATTERN = re.compile(
    rf"""(\.op|\[["']op["']\]|(?<!for )\bop)\s*(==|!=|\bin\b|\bnot in\b)\s*[\(\[{{]?\s*["']({OPS})["']"""
)

# Rows of a run report (JSON, possibly from another spikeport version) classified for display; no
# pipeline behaviour depends on them.
ALLOWED = {
    "report/plots.py": "picks the spiking rows (lif, maxpool) of a run report for the spike plot",
    "report/summary.py": "labels the state rows of a run report (lif: neurons; K^T V / X: attention)",
    "report/tables.py": "hides rows without work (input, add) in the per-layer table the terminal and HTML print",
    "cli/run.py": "hides rows without work (input, add) in the terminal table",
    "cli/convert.py": "hides rows without work (input, add) in the terminal table",
}


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
