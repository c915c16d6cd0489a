"""The largest modules and functions of src/spikeport: the file and function limits of the code layout (no module
over 600 lines, no function over 80 lines, except what ALLOWED lists with why).

    python scripts/largest.py            # every module over 600 lines and function over 80, then the top 10 of each
    python scripts/largest.py --check    # exit 1 if any is over its limit and not allowed
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "spikeport"
MODULE_LINES, FUNCTION_LINES = 600, 80
# functions over the limit that stay, and why
ALLOWED = {
    "cli/": "a command's flag table: one add_argument call per flag, read top to bottom",
}


def modules() -> list[tuple[int, str]]:
    return sorted(((len(p.read_text().splitlines()), str(p.relative_to(SRC))) for p in SRC.rglob("*.py")), reverse=True)


def functions() -> list[tuple[int, str]]:
    out = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                out.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(SRC)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


def allowed(where: str) -> str:
    return next((why for prefix, why in ALLOWED.items() if where.startswith(prefix) and " register" in where), "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 where a limit is broken and not allowed")
    args = ap.parse_args(argv)
    mods, funcs = modules(), functions()
    over = [(n, m) for n, m in mods if n > MODULE_LINES] + [(n, f) for n, f in funcs if n > FUNCTION_LINES]
    broken = [(n, w) for n, w in over if not allowed(w)]
    for n, where in over:
        why = allowed(where)
        print(f"{n:5d}  {where}" + (f"  (allowed: {why})" if why else "  OVER THE LIMIT"))
    print(f"largest modules (limit {MODULE_LINES} lines):")
    for n, m in mods[:10]:
        print(f"  {n:5d}  {m}")
    print(f"longest functions (limit {FUNCTION_LINES} lines):")
    for n, f in funcs[:10]:
        print(f"  {n:5d}  {f}")
    return 1 if args.check and broken else 0


if __name__ == "__main__":
    sys.exit(main())
