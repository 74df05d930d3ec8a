# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test demo bench lint typecheck dist clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Two workers (the machines this runs on have two cores); PYTEST_ARGS replaces that, e.g. PYTEST_ARGS=-x.
PYTEST_ARGS ?= -n 2
# The lint and the type check (mypy --strict, ~10 s) run first: CI runs only `make test`.
test: $(STAMP) lint typecheck
	$(BIN)/python -m pytest $(PYTEST_ARGS)

demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python examples/demo.py

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python tests/benchmarks/run_all.py $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check routedriver tests examples

typecheck: $(STAMP)
	$(BIN)/mypy routedriver

# A wheel and an sdist in dist/, checked by twine (offline: the dev extras' setuptools, no isolation).
# tests/test_packaging.py builds the same way in `make test` and installs the wheel in a fresh venv.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/twine check --strict dist/*

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
