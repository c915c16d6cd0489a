#!/usr/bin/env bash
# The Python 3.10 target (make test-lava310; DESIGN.md sections 3 and 8, issue 4 requirement 4).
#
# Upstream lava-nc 0.10.0 declares Python >=3.10,<3.11 and numpy <2. This builds .venv310 with a 3.10
# interpreter and installs lava-nc the normal way (pip resolves its declared dependencies; pins in
# scripts/lava310_requirements.txt; no torch, no lava-dl, no compatibility step), then spikeport without
# dependencies. The main environment (.venv, Python 3.11) first writes its results to build/lava310/;
# the tests marked `lava310` then run in .venv310 and compare bit for bit.
#
# No Python 3.10 on the machine: prints SKIP and exits 0 (this target is optional on such machines).
# Environment: PYTHON310 (interpreter to use), MAIN_PYTHON (default .venv/bin/python), VENV310
# (default .venv310), LAVA310_DIR (default build/lava310), PYTEST_ARGS (extra pytest arguments).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV310=${VENV310:-.venv310}
MAIN_PYTHON=${MAIN_PYTHON:-.venv/bin/python}
LAVA310_DIR=${LAVA310_DIR:-build/lava310}
REQS=scripts/lava310_requirements.txt

find_python310() {
    local candidates=("${PYTHON310:-}" /root/.pyenv/versions/3.10.13/bin/python)
    if command -v python3.10 >/dev/null 2>&1; then candidates+=("$(command -v python3.10)"); fi
    for py in "${candidates[@]}"; do
        # pyenv shims exist even when no 3.10 is installed: ask the interpreter itself
        if [ -n "$py" ] && "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

if ! PY310=$(find_python310); then
    echo "SKIP test-lava310: no Python 3.10 interpreter (tried \$PYTHON310, /root/.pyenv/versions/3.10.13/bin/python, python3.10 on PATH)."
    echo "     Install one (e.g. pyenv install 3.10.13) to run the upstream-Lava parity tests."
    exit 0
fi
if [ ! -x "$MAIN_PYTHON" ]; then
    echo "test-lava310: $MAIN_PYTHON not found: run 'make setup' first (the main environment writes the expected results)" >&2
    exit 2
fi

# (Re)build .venv310 when it is missing or older than the pins / pyproject.
stamp="$VENV310/.installed"
if [ ! -f "$stamp" ] || [ "$REQS" -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    start=$(date +%s)
    echo "test-lava310: building $VENV310 with $PY310 ($("$PY310" -V 2>&1))"
    rm -rf "$VENV310"
    "$PY310" -m venv "$VENV310"
    "$VENV310/bin/python" -m pip install -q --upgrade pip
    "$VENV310/bin/python" -m pip install -q -r "$REQS"
    "$VENV310/bin/python" -m pip install -q --no-deps -e .
    "$VENV310/bin/python" -m pip check
    if "$VENV310/bin/python" -c 'import torch' 2>/dev/null; then
        echo "test-lava310: torch must not be installed in $VENV310" >&2
        exit 2
    fi
    touch "$stamp"
    echo "test-lava310: $VENV310 ready in $(( $(date +%s) - start )) s"
fi

# 1. The main environment writes the expected results.
mkdir -p "$LAVA310_DIR"
"$MAIN_PYTHON" tests/lava_testprocs/parity_net.py --write "$LAVA310_DIR/parity_net.npz"
"$MAIN_PYTHON" tests/lava_testprocs/artifact_parity.py --write "$LAVA310_DIR"
# an INRC bundle of the lrf_dyn artifact, in a folder whose name a shell would mangle if a script spliced it
bundle="$LAVA310_DIR/bundle lrf_dyn \"q\" \$(touch pwned) é"
"$MAIN_PYTHON" -m spikeport bundle "$LAVA310_DIR/lrf_dyn.spk.h5" --out "$bundle" --force --samples 3 \
    --read-state block.1.mlp.fc2_lif --dataset digits --quiet
export SPIKEPORT_LAVA310_BUNDLE="$bundle"

# 2. The 3.10 environment runs every test file that declares the lava310 marker (only those are
#    collected: the others import torch, which this environment does not have).
mapfile -t files < <(grep -l "mark.lava310" tests/test_*.py)
export SPIKEPORT_LAVA310_DIR="$LAVA310_DIR"
# shellcheck disable=SC2086
"$VENV310/bin/python" -m pytest -m lava310 -p no:cacheprovider -ra "${files[@]}" ${PYTEST_ARGS:-}

# 3. What the bundle's run wrote there, spikeport report reads here.
"$MAIN_PYTHON" -m spikeport report "$bundle/result.json" --quiet
echo "test-lava310: spikeport report read the bundle's result.json written by Python 3.10 / upstream lava-nc"
