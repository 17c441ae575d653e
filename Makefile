# Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit package-check install clean

# The schema oracles beside the project (../shared/conformance) are optional:
# tests that use them skip when they are absent.
CONFORMANCE := ../shared/conformance

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,hydrate]'
	if [ -f $(CONFORMANCE)/requirements.txt ]; then \
	  $(BIN)/pip install --quiet -r $(CONFORMANCE)/requirements.txt; fi
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/modelplane render -o tree examples/quickstart

lint: $(STAMP)
	$(BIN)/ruff check modelplane tests benchmarks
	$(BIN)/ruff format --check modelplane tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

package-check: $(STAMP)
	$(BIN)/modelplane package build --check

test: lint typecheck unit package-check

clean:
	rm -rf $(VENV) out build *.egg-info
