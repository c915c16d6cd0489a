"""Copy the compile tables Lava's Loihi 2 compiler printed in lava-dl's tutorial notebooks into spikeport's golden
data (src/spikeport/hw_profiles/compile_tables/*.json): the partitioner's messages and the per-core table, verbatim,
with the notebook, the cell and the lava-dl commit they come from.

    python scripts/extract_compile_tables.py LAVA_DL_GIT_DIR

LAVA_DL_GIT_DIR is a clone of github.com/lava-nc/lava-dl (the tables were read at commit d825ac5). The layer each
table row belongs to (``rows``) is written by hand in the JSON files beside the text this script refreshes: the
tables name no layers, their rows run from the last layer to the first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "spikeport" / "hw_profiles" / "compile_tables"
NOTEBOOKS = {
    "pilotnet_lif": "tutorials/lava/lib/dl/netx/pilotnet_snn/benchmark.ipynb",
    "pilotnet_sdnn": "tutorials/lava/lib/dl/netx/pilotnet_sdnn/benchmark.ipynb",
    "oxford": "tutorials/lava/lib/dl/netx/oxford/run.ipynb",
    "mnist": "tutorials/lava/lib/dl/netx/mnist/run.ipynb",
    "yolo_kp": "tutorials/lava/lib/dl/netx/yolo_kp/run.ipynb",
}


def compiler_text(repo: Path, notebook: str) -> tuple[int, list[str]]:
    """The notebook cell whose output holds the per-core table, and the compiler's lines of it (the partitioner's
    messages and the table, up to its closing rule)."""
    cells = json.loads(
        subprocess.run(
            ["git", "-C", str(repo), "show", f"HEAD:{notebook}"], check=True, capture_output=True, text=True
        ).stdout
    )["cells"]
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", []))
            if "Per core" not in text:
                continue
            lines = [line.rstrip() for line in text.replace("Final max_ratio", "\nFinal max_ratio").splitlines()]
            lines = [line for line in lines if line and "\x1b" not in line]
            end = max(i for i, line in enumerate(lines) if line.startswith("----"))
            kept = [
                line
                for line in lines[: end + 1]
                if line.startswith(("Violation", "Final", "Partitioning", "Per", "|", "-"))
            ]
            return index, kept
    raise SystemExit(f"{notebook}: no per-core table in its outputs")


def main(repo: Path) -> None:
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    for name, notebook in NOTEBOOKS.items():
        path = OUT / f"{name}.json"
        record = json.loads(path.read_text()) if path.exists() else {"name": name}
        cell, text = compiler_text(repo, notebook)
        record.update(
            {
                "source": {
                    "repository": "lava-nc/lava-dl",
                    "commit": commit,
                    "notebook": notebook,
                    "cell": cell,
                    "licence": "BSD-3-Clause",
                },
                "text": text,
            }
        )
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"{path}: {len(text)} lines")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
