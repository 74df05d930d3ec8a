# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test e2e demo bench lint typecheck clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Two workers (the machines this runs on have two cores); PYTEST_ARGS replaces that, e.g. PYTEST_ARGS=-x.
PYTEST_ARGS ?= -n 2
# The lint and the type check (mypy --strict, ~10 s) run first: CI runs only `make test`.
test: $(STAMP) lint typecheck
	$(BIN)/python -m pytest $(PYTEST_ARGS) --ignore=tests/e2e

# The real Claude Code and Codex CLIs driving routes (tests/e2e): installed from the npm registry on first use
# (Node.js and npm needed), cached in ~/.cache/routedriver-e2e (ROUTEDRIVER_E2E_CACHE to move it).
e2e: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests/e2e

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python examples/demo.py

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tests/benchmarks/run_all.py $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check routedriver tests examples

typecheck: $(STAMP)
	$(BIN)/mypy routedriver

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
