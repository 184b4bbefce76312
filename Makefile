# Two commands on a fresh machine: `make serve` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: serve test install dev lint typecheck bench fuzz routes-doc clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,otel]'
	touch $(RUNTIME_STAMP) $@

install: $(RUNTIME_STAMP)

dev: $(DEV_STAMP)

serve: $(RUNTIME_STAMP)
	$(BIN)/routequote serve

test: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples README.md docs
	$(BIN)/mypy
	$(BIN)/pytest

lint: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples README.md docs

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# needs wrk on PATH (Debian package `wrk`); nothing is installed here
bench: $(DEV_STAMP)
	$(BIN)/python bench/quote_bench.py
	$(BIN)/python bench/http_bench.py

# The long schemathesis run (>= 10,000 generated cases over both OpenAPI documents; ~10 min). `make test` runs
# the short one. RQ_FUZZ_SEED=<n> explores another seed.
fuzz: $(DEV_STAMP)
	RQ_FUZZ_EXAMPLES=$${RQ_FUZZ_EXAMPLES:-600} $(BIN)/pytest tests/fuzz -q -rA

# The route proof table: run the whole-route suite (SQLite), write its results, render docs/routes.md from them.
routes-doc: $(DEV_STAMP)
	RQ_UPDATE_ROUTES=1 $(BIN)/pytest tests/e2e/test_routes.py -q -m "not postgres"
	$(BIN)/python tests/e2e/routes_doc.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
