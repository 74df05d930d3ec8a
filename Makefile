# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test demo bench lint typecheck clean

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

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
