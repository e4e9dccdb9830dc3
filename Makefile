# Every target installs what it needs: on a fresh machine `make demo` and `make test` are
# the whole set-up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?= -n 2

.PHONY: install test lint demo perf reliability fuzz lifecycle stats-decide clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The real osmosis CLI (osmosis-ai 0.3.8, Python 3.12+) is installed best effort so the
# suite can drive it against the local Platform; without it that one test is skipped.
OSMOSIS_CLI_VENV := .venv-osmosis-cli

$(OSMOSIS_CLI_VENV)/.done:
	bash scripts/install_osmosis_cli.sh $(OSMOSIS_CLI_VENV)
	mkdir -p $(OSMOSIS_CLI_VENV) && touch $@

test: install $(OSMOSIS_CLI_VENV)/.done
	OSMOSIS_REAL_CLI=$$(test -x $(OSMOSIS_CLI_VENV)/bin/osmosis && echo $(CURDIR)/$(OSMOSIS_CLI_VENV)/bin/osmosis) \
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check reconciler tests
	$(BIN)/ruff format --check reconciler tests
	$(BIN)/mypy

demo: install
	$(BIN)/python scripts/demo.py

# pyproject's addopts deselect perf and reliability; these two targets select them again.
perf: install
	$(BIN)/python -m tests.perf.run
	$(BIN)/python -m tests.perf.bench_toml_emit
	$(BIN)/python -m tests.perf.bench_retry
	$(BIN)/python -m pytest -m perf -p no:xdist -s -q tests

reliability: install
	$(BIN)/python -m pytest -m "reliability or secret_hygiene" -p no:xdist -s tests/reliability

# The fuzz suite at full size (issue 23): 10,000 seeded Hypothesis examples per target, in
# two processes; prints the table of examples, clear errors and internal errors per target
# (also written to .fuzz-report.txt). `make test` runs the same targets with 150 examples.
FUZZ_EXAMPLES ?= 10000
fuzz: install
	rm -rf .fuzz-tallies && mkdir -p .fuzz-tallies
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_TALLY_DIR=$(CURDIR)/.fuzz-tallies FUZZ_REPORT=$(CURDIR)/.fuzz-report.txt \
	$(BIN)/python -m pytest -n 2 -q tests/fuzz

# A team's life as a state machine (issue 22): LIFECYCLE_EXAMPLES, LIFECYCLE_STEPS,
# LIFECYCLE_SEED, LIFECYCLE_PLANT=lost-record (see tests/lifecycle/machine.py).
lifecycle: install
	$(BIN)/python -m tests.lifecycle.run

# Decisions at minimum cost (issue 39, docs/deciding.md): the simulation suite at full size,
# offline and seeded, in two processes; prints the table, the dollar-budget check and the
# time, and fails when a goal is missed. `make test` runs a reduced size
# (tests/unit/test_decide_simulation.py). DECIDE_ARGS="--replicates N --seed S" to vary it.
DECIDE_ARGS ?=
stats-decide: install
	$(BIN)/python -m tests.stats.sequential $(DECIDE_ARGS)

clean:
	rm -rf $(VENV) $(OSMOSIS_CLI_VENV) .osmosis .pytest_cache .hypothesis .fuzz-tallies .fuzz-report.txt .lifecycle-failure.py
