# spikeport: the two commands a user needs are `make demo` and `make test`; both set up .venv first.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU wheel on this project's machines. A GPU user keeps the CUDA torch already in $(VENV), or sets
# TORCH_SPEC (e.g. TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126").
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
# pytest-xdist workers; CI machines have 2 cores.
WORKERS ?= 2

.PHONY: setup demo test test-fast test-soak test-lava310 lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements.txt requirements-nodeps.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH_SPEC)
	$(BIN)/python -m pip install -q -r requirements.txt
	$(BIN)/python -m pip install -q --no-deps --ignore-requires-python -r requirements-nodeps.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m spikeport.lava_startup --install  # `import lava` works in this venv (docs/lava_backend.md)
	touch $@

demo: setup
	$(BIN)/spikeport demo

test: setup
	$(BIN)/python -m pytest -n $(WORKERS) $(PYTEST_ARGS)

# Skips the tests marked slow (the long parity runs); CI runs them all.
test-fast: setup
	$(BIN)/python -m pytest -n $(WORKERS) -m "not slow" $(PYTEST_ARGS)

# Long use in one process (tests/test_soak.py): 100 conversions and 50 Lava runs, file descriptors, /dev/shm,
# children and memory sampled; about 7 minutes on 2 cores (5.7 minutes of CPU).
test-soak: setup
	$(BIN)/python -m pytest -n 0 -m soak tests/test_soak.py $(PYTEST_ARGS)

# Lint, format check, types, the import contracts and dead code; configured in pyproject.toml (vulture: names
# it cannot see used are in lint/vulture_whitelist.py, each with why). `$(BIN)/ruff format .` and
# `$(BIN)/ruff check --fix .` apply what the first two report.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo
	$(BIN)/vulture src/spikeport tests benchmarks scripts lint/vulture_whitelist.py --min-confidence 60

# Python 3.10 + upstream lava-nc (numpy<2, no torch): Lava parity against artifacts built in .venv.
test-lava310: setup
	bash scripts/test_lava310.sh

# The benchmark scripts; each prints its ratios measured side by side (a few minutes each on 2 cores).
bench: setup
	$(BIN)/python benchmarks/bench_executors.py
	$(BIN)/python benchmarks/bench_lava_vs_netx.py
	$(BIN)/python benchmarks/bench_train.py

clean:
	rm -rf $(VENV) .venv310 build runs .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
